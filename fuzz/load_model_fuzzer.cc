// Model loading and the structural checks every command runs next: LoadModel on an .onnx
// file (protobuf parse, initializers, external data resolved against the model's folder,
// subgraphs, topological order), then what `convert` does before its passes (shape
// inference on the light proto, onnx's checker) and a save. Properties: a model that loads
// is a consistent graph (Graph::Verify), and a model that saves loads again.
#include <cstdint>
#include <memory>

#include "fuzz/fuzz_check.h"
#include "fuzz/scratch_folder.h"
#include "ir/model_io.h"
#include "ir/node_check.h"
#include "ir/shape_inference.h"
#include "rules/light_proto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ovfix;
  const fuzz::ScratchFolder& scratch = fuzz::ScratchFolder::Get();
  scratch.Clear();
  const std::string path = scratch.Write("model.onnx", data, size);
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel(path);
  if (!model.ok()) return 0;  // refused with a message: what bad input should get
  Model& m = **model;
  fuzz::ExpectOk(m.graph().Verify(), "a loaded model is a consistent graph");

  if (!CheckNodes(m).ok()) return 0;  // refused before shape inference, as `convert` does
  (void)rules::InferShapesLight(m);
  onnx::ModelProto light = rules::LightModelProto(m);
  (void)rules::CheckLightProto(light);
  ShapeInferenceOptions strict;
  strict.strict = true;
  (void)InferShapes(m, strict);
  fuzz::ExpectOk(m.graph().Verify(), "shape inference keeps the graph consistent");

  const std::string saved = scratch.File("saved.onnx");
  if (SaveModel(m, saved).ok()) {
    absl::StatusOr<std::unique_ptr<Model>> again = LoadModel(saved);
    fuzz::ExpectOk(again.status(), "a model ovfix saved loads again");
  }
  return 0;
}
