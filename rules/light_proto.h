// Shape inference and onnx's checker without copying the weights. ModelToProto copies every
// initializer, which for a 50 MB model costs more than the rest of a conversion; here large
// float initializers are declared as graph inputs of the same type instead (shape inference
// and the checker only need their types), while small ones stay, since data propagation
// reads them (Reshape shapes, Slice starts, ...).
#pragma once

#include "absl/status/status.h"
#include "ir/model.h"
#include "onnx/onnx_pb.h"

namespace ovfix::rules {

// The model as a ModelProto whose initializers of more than `max_inline_bytes` are typed
// graph inputs. Subgraphs are copied whole.
onnx::ModelProto LightModelProto(const Model& model, size_t max_inline_bytes = 4096);

// ir/shape_inference.h's InferShapes on the light proto: same types on the same values. For
// the conversion's many inferences: the caller has checked the nodes (CheckNodes) once.
absl::Status InferShapesLight(Model& model);

// onnx's checker::check_model plus strict shape inference with type checks (what
// onnx.checker.check_model(full_check=True) does) on a light proto, in place; data
// propagation where the model needs it (ir/shape_inference.h's NeedsDataPropagation).
absl::Status CheckLightProto(onnx::ModelProto& proto, bool data_propagation = true);
// InferShapesLight and CheckLightProto on one light proto: the types inferred are applied to
// the model (also when the check fails).
absl::Status InferShapesAndCheck(Model& model);

}  // namespace ovfix::rules
