// Loading and saving models: .onnx files (with external data) and in-memory ModelProtos.
// Weights are read once: raw_data bytes are moved out of the parsed protobuf into the IR,
// external data is memory-mapped, and saving hands the same bytes back to the writer.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/model.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

class ExternalDataFiles;

enum class ExternalDataMode {
  // External data when the model was loaded with external data, or when the weights would
  // push the file past protobuf's 2 GB; inline otherwise.
  kAuto,
  kAlways,  // tensors of at least `external_threshold` bytes go to the data file
  kNever,   // all inline (refused past 2 GB of weights)
};

struct SaveOptions {
  ExternalDataMode external_data = ExternalDataMode::kAuto;
  // File name (in the model's folder) for external data; default "<model file name>.data".
  // One file holds every external tensor, each at a 64-byte aligned offset, in the order of
  // the initializers.
  std::string external_location;
  size_t external_threshold = 1024;
  // Called after each tensor written to the external data file: bytes written so far and
  // the bytes of all tensors that go there.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// Loads a model file. Errors name the file and the problem in one line.
absl::StatusOr<std::unique_ptr<Model>> LoadModel(const std::string& path);
// Builds the IR from a parsed ModelProto (consumed: weights are moved out of it).
// `base_dir` resolves external data; `source` names the model in messages.
absl::StatusOr<std::unique_ptr<Model>> ModelFromProto(onnx::ModelProto&& proto,
                                                      const std::string& base_dir,
                                                      const std::string& source);
// Same, with external data resolved through `files` (which may provide files mapped already).
absl::StatusOr<std::unique_ptr<Model>> ModelFromProto(onnx::ModelProto&& proto,
                                                      const std::string& base_dir,
                                                      const std::string& source,
                                                      ExternalDataFiles& files);
// Writes the model atomically (temporary file + rename), external data likewise. Lazy
// tensors (ConvertTensorLazily) are made and written piece by piece, and stay unmade.
absl::Status SaveModel(Model& model, const std::string& path, const SaveOptions& options = {});
// Gets the model read back from the file a save wrote (or why it could not be read).
using WrittenModelReader = std::function<void(absl::StatusOr<std::unique_ptr<Model>> written)>;
// SaveModel, with `read` given the model read back from the files being written, before they
// are renamed into place: the model file is complete; the external weights are views of the
// data file that wait until the writer has passed their bytes, so that `read` (a run of the
// model) goes on beside the data's write. A failed write ends those waits (the weights then
// read what the file holds): the save's status says whether what `read` saw was the file.
absl::Status SaveModelAndRead(Model& model, const std::string& path, const SaveOptions& options,
                              const WrittenModelReader& read);
// Whether SaveModel writes external data for `model` (see ExternalDataMode).
bool WritesExternalData(const Model& model, const SaveOptions& options = {});
// The external data file SaveModel writes (when it writes one) for a model saved to `path`:
// OPTIONS.external_location, or "<model file name>.data", in the model's folder.
absl::StatusOr<std::string> ExternalDataFile(const std::string& path,
                                             const SaveOptions& options = {});
// A ModelProto copy of the model (weights copied; for checker, printer, shape inference).
onnx::ModelProto ModelToProto(const Model& model);
// The model as its serialized form read back: what a file written from it holds. Weights of
// at least `share_at_least` bytes are not copied through the bytes: the copy's tensors share
// their buffers (the bytes a save writes), so a large model is not held twice.
absl::StatusOr<std::unique_ptr<Model>> CopyModel(const Model& model,
                                                 size_t share_at_least = SIZE_MAX);
// CopyModel that shares every weight, whatever its size, with the form it was read in: only
// the graph goes through the bytes, and a save of the copy writes each weight as a save of
// `model` does (its typed fields, external data or doc string as read).
absl::StatusOr<std::unique_ptr<Model>> CopyGraphSharingWeights(const Model& model);
onnx::GraphProto GraphToProto(const Graph& graph);

}  // namespace ovfix
