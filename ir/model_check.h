// onnx's checker (checker::check_model) for every IR version and opset ovfix reads: the
// model-level checks written for IR up to 13 and opsets up to 26, and onnx 1.12's graph,
// node and function checks run with ovfix's schemas (ir/op_schemas.h) instead of its own.
#pragma once

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

// Throws onnx::checker::ValidationError as check_model does.
void CheckModelProto(const onnx::ModelProto& model);

// Whether the proto uses element types onnx 1.12 cannot name (float8, int4, float4, int2):
// its type checks then cannot run (ovfix's node checks cover these types).
bool UsesTypesOnnxLibraryLacks(const onnx::ModelProto& model);

// The one-line reason ovfix cannot read a model of this IR version and opsets, or "" when
// it can: an IR version or an opset of ai.onnx / ai.onnx.ml newer than ovfix knows.
std::string UnsupportedVersions(
    int64_t ir_version,
    const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& opset_import);

}  // namespace ovfix
