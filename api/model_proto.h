// What the API's calls share: models and tensors between ONNX's protos and ovfix's IR, and
// the scratch folder a conversion in memory writes through.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "exec/executor.h"
#include "ir/model.h"
#include "ovfix/onnx.h"

namespace ovfix::converter {
struct OutputVerdict;
}  // namespace ovfix::converter

namespace ovfix::api {

// A verdict on one output (converter/output_verdict.h) in the API's terms (api/run.cc).
OutputComparison FromVerdict(const converter::OutputVerdict& verdict);

// The API's errors are one line (include/ovfix/ovfix.h): control characters in what a message
// quotes from the model (value and node names) written as escapes, as the command line
// prints them.
absl::Status OneLine(const absl::Status& status);
// `status` marked as an error of `kind` (ErrorKind, include/ovfix/ovfix.h): "option", "model".
absl::Status Tagged(absl::Status status, absl::string_view kind);

template <typename T>
absl::StatusOr<T> OneLine(absl::StatusOr<T> result) {
  if (result.ok()) return result;
  return OneLine(result.status());
}

// The IR of a ModelProto held in memory (external data refused: there is no folder).
absl::StatusOr<std::unique_ptr<Model>> ModelFromMemory(const onnx::ModelProto& proto);

absl::StatusOr<exec::TensorMap> TensorsFromProtos(const NamedTensorProtos& tensors);

// The options of the table (ConversionOptionList, ovfix/ovfix.h).
std::vector<OptionInfo> OptionList();

// A fresh folder under $TMPDIR, removed with everything in it when this goes away.
class ScratchFolder {
 public:
  ScratchFolder();
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ovfix::api
