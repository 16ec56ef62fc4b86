// A whole `ovfix convert IN OUT --target T --no-validate` on a small model: every pass and
// rule set of the target (constant folding runs nodes on the CPU executor), shape inference
// and onnx's checker on the result, and the save. The input is an .onnx file, or ONNX text
// when it starts with '<' (mutations of text keep models well formed far more often than
// mutations of protobuf bytes do, which takes the fuzzer deeper into the passes). The target
// is picked by the input's size, so each saved input reproduces with the same target.
// Property: a converted model is a consistent graph.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "converter/pipeline.h"
#include "converter/target.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/scratch_folder.h"
#include "ir/model_io.h"
#include "ir/text_form.h"

namespace {

// Every built-in target, as the registry lists them.
const std::vector<std::string>& TargetNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ovfix::converter::Target& t : ovfix::converter::BuiltinTargets()) {
      out.push_back(t.name);
    }
    return out;
  }();
  return names;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ovfix;
  const fuzz::ScratchFolder& scratch = fuzz::ScratchFolder::Get();
  scratch.Clear();
  absl::StatusOr<std::unique_ptr<Model>> model;
  if (size > 0 && data[0] == '<') {
    model = ParseModelText(std::string_view(reinterpret_cast<const char*>(data), size));
  } else {
    model = LoadModel(scratch.Write("model.onnx", data, size));
  }
  if (!model.ok()) return 0;

  converter::PipelineOptions options;
  options.input_path = scratch.File("model.onnx");
  options.output_path = scratch.File("converted.onnx");
  options.convert.target = TargetNames()[size % TargetNames().size()];
  options.convert.validate = false;
  options.write_output = true;
  absl::StatusOr<converter::ConversionReport> report = converter::ConvertModel(**model, options);
  if (!report.ok()) return 0;
  fuzz::ExpectOk((*model)->graph().Verify(), "a converted model is a consistent graph");
  return 0;
}
