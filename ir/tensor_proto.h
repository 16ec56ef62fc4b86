// Conversion between onnx TensorProto and Tensor.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

// Decodes a TensorProto held in memory (raw_data or the typed fields). External data is
// resolved relative to `base_dir` (refused when empty). The proto is left unchanged.
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto,
                                       const std::string& base_dir = "");
// Same, but moves raw_data out of the proto instead of copying it.
absl::StatusOr<Tensor> TensorFromProtoMove(onnx::TensorProto& proto,
                                           const std::string& base_dir = "");
// The checks decoding makes before it allocates (element type, dims, and a size of raw_data or
// of the typed fields that fits the dims), without decoding: for tensors that stay encoded,
// such as a Constant's value.
absl::Status CheckTensorProto(const onnx::TensorProto& proto);
// Encodes with raw_data (strings in string_data).
onnx::TensorProto TensorToProto(const Tensor& t, const std::string& name = "");
// Reads a serialized TensorProto file (test_data_set_*/input_K.pb).
absl::StatusOr<Tensor> ReadTensorFile(const std::string& path, std::string* name = nullptr);
// Writes a serialized TensorProto file (atomically: temporary file, then rename).
absl::Status WriteTensorFile(const std::string& path, const Tensor& t, const std::string& name);

}  // namespace ovfix
