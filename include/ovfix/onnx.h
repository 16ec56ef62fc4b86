// ovfix's calls over ONNX's own protos and absl::Status (docs/api.md, "Models as protos"), for
// programs that hold onnx::ModelProto already, such as the Python module. Everything in
// ovfix/ovfix.h is here too; this header adds overloads that take and return
// onnx::ModelProto and onnx::TensorProto, errors as absl::Status (codes as Error's, kinds
// as the payload kErrorKindPayload), and the bridges between the two surfaces. It needs
// ONNX's, protobuf's and absl's headers and links the static library (CMake:
// ovfix::ovfix_static), which brings onnx, protobuf, absl, re2 and OpenCL.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "ovfix/ovfix.h"

namespace ovfix {

// Tensors by name, as protos.
using NamedTensorProtos = std::map<std::string, onnx::TensorProto>;

// Error::kind of a status, carried as the payload kErrorKindPayload: "option", "model",
// "accuracy" or "".
inline constexpr char kErrorKindPayload[] = "type.ovfix/ErrorKind";
std::string ErrorKind(const absl::Status& status);

// The bridges: an Error as a status and back (a status's report payload is JSON only: the
// Error it gives has no ConversionReport), tensors and models as protos and back.
absl::Status ToStatus(const Error& error);
Error ToError(const absl::Status& status);
// InvalidArgument where the tensor's bytes do not fit its shape or type.
absl::StatusOr<onnx::TensorProto> ToTensorProto(const OnnxTensor& tensor);
// Any TensorProto but strings and external data (its typed fields read as raw bytes).
absl::StatusOr<OnnxTensor> ToOnnxTensor(const onnx::TensorProto& tensor);
absl::StatusOr<onnx::ModelProto> ToModelProto(const OnnxModel& model);
absl::StatusOr<OnnxModel> ToOnnxModel(const onnx::ModelProto& model);

// Reads a model file (external data read in) / writes one atomically (weights inline).
absl::StatusOr<onnx::ModelProto> LoadModelProto(const std::string& path);
absl::Status SaveModelProto(const onnx::ModelProto& model, const std::string& path);

struct ConvertedModelProto {
  onnx::ModelProto model;  // the bytes ConvertFile would write, parsed
  ConversionReport report;
};
// Convert (ovfix/ovfix.h) over protos. An accuracy failure's status carries the JSON report
// (`--report FILE.json`'s text) as its payload kConversionReportPayload (ConversionReportJson
// reads it); with `report` given, the report itself is written there whenever the conversion
// ran, whether its outputs met the criteria or not.
absl::StatusOr<ConvertedModelProto> Convert(const onnx::ModelProto& model,
                                            const ConversionOptions& options = {});
absl::StatusOr<ConvertedModelProto> Convert(const onnx::ModelProto& model,
                                            const ConversionOptions& options,
                                            ConversionReport* report);

// The JSON report a failed conversion's status carries (Convert); nullopt for any other status.
inline constexpr char kConversionReportPayload[] = "type.ovfix/ConversionReport";
std::optional<std::string> ConversionReportJson(const absl::Status& status);

// Run (ovfix/ovfix.h) over protos: the outputs in the graph's order, each named.
absl::StatusOr<std::vector<onnx::TensorProto>> Run(const onnx::ModelProto& model,
                                                   const NamedTensorProtos& inputs,
                                                   const RunOptions& options = {});

// Session (ovfix/ovfix.h) over protos:
//   absl::StatusOr<std::unique_ptr<ovfix::ProtoSession>> s = ovfix::ProtoSession::Create(model);
//   absl::StatusOr<std::vector<onnx::TensorProto>> y = (*s)->Run({{"x", x}});
class ProtoSession {
 public:
  static absl::StatusOr<std::unique_ptr<ProtoSession>> Create(const onnx::ModelProto& model,
                                                              const RunOptions& options = {});
  ~ProtoSession();
  ProtoSession(const ProtoSession&) = delete;
  ProtoSession& operator=(const ProtoSession&) = delete;

  const std::vector<std::string>& input_names() const;   // graph inputs, initializers aside
  const std::vector<std::string>& output_names() const;  // in the graph's order
  // The element type (onnx::TensorProto::DataType) each input declares, as input_names.
  const std::vector<int32_t>& input_types() const;

  absl::StatusOr<std::vector<onnx::TensorProto>> Run(const NamedTensorProtos& inputs,
                                                     bool cast = false);

 private:
  struct State;
  explicit ProtoSession(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// CompareModels and CompareBackends (ovfix/ovfix.h) over protos.
absl::StatusOr<Comparison> CompareModels(const onnx::ModelProto& reference,
                                         const onnx::ModelProto& candidate,
                                         const NamedTensorProtos& inputs = {},
                                         std::optional<double> tolerance = std::nullopt,
                                         const RunOptions& options = {},
                                         const std::vector<std::string>& accuracy = {});
absl::StatusOr<Comparison> CompareBackends(const onnx::ModelProto& model,
                                           const RunOptions& reference, const RunOptions& candidate,
                                           const NamedTensorProtos& inputs = {},
                                           std::optional<double> tolerance = std::nullopt,
                                           const std::vector<std::string>& accuracy = {});

// SetOption and ConvertFile (ovfix/ovfix.h) with their errors as absl::Status.
absl::Status SetOptionStatus(ConversionOptions& options, const std::string& name,
                             const std::string& value);
absl::StatusOr<ConversionReport> ConvertFileStatus(const std::string& input,
                                                   const std::string& output,
                                                   const ConversionOptions& options = {});

}  // namespace ovfix
