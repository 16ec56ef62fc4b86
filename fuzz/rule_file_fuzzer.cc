// Rule files as users pass them with --rules: the input is read as a rule file from disk
// through RuleLibrary::Load (parser, name checks against the built-in rules), and when it
// loads, its rules run to a fixed point on a few small models (matcher, `where`/`let`
// expressions, instantiation of the replacement through the Rewriter), without validation as
// with --no-validate. Property: whatever a rule does, the graph stays consistent
// (Graph::Verify).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "fuzz/scratch_folder.h"
#include "ir/shape_inference.h"
#include "ir/text_form.h"
#include "rules/rule_set.h"

namespace {

// Graphs with the ops the built-in and example rules match (so mutated seed rules keep
// matching), static and symbolic shapes, constants, and an If whose branches are swept too.
constexpr const char* kModels[] = {
    R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x, float[3] b, bool[2,3] c, float16[2,3] h) => (float[2,3] y, float[2,3] w, float16[2,3] hy)
      <float s = {2}, int64[1] axes = {0}, float r = {0.5}> {
      relu = Relu(x)
      same = Identity(relu)
      sum = Add(same, b)
      scaled = Mul(s, sum)
      ints = Cast<to = 6>(scaled)
      floats = Cast<to = 1>(ints)
      dropped = Dropout(floats, r)
      y = Where(c, dropped, b)
      wide = Unsqueeze(y, axes)
      w = Squeeze(wide)
      hf = Cast<to = 1>(h)
      hs = HardSwish(hf)
      hy = Cast<to = 10>(hs)
    })",
    R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,2,5,5] x, float[3,2,3,3] w, float[3] bias) => (float[1,75] y, float[1,3,2,2] p, float[3,25] z) {
      c = Conv<pads = [1, 1, 1, 1]>(x, w, bias)
      pooled = AveragePool<kernel_shape = [2, 2]>(c)
      y = Flatten(c)
      p = MaxPool<kernel_shape = [2, 2]>(c)
      shape = Shape(c)
      index = Constant<value = int64[1] {1}>()
      channels = Gather<axis = 0>(shape, index)
      rest = Constant<value = int64[1] {-1}>()
      target = Concat<axis = 0>(channels, rest)
      z = Reshape(c, target)
    })",
    R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,3,4] x, float[4] e, bool cond) => (y, float[N,3,4] q) <int64[2] s = {0, -1}> {
      flat = Reshape(x, s)
      y = If(cond) <then_branch = then_g () => (a) { t = Cast<to = 7>(flat)  a = Cast<to = 1>(t) },
                    else_branch = else_g () => (b) { b = Sigmoid(flat) }>
      q = Pow(x, e)
    })",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ovfix;
  const fuzz::ScratchFolder& scratch = fuzz::ScratchFolder::Get();
  const std::string path = scratch.Write("user.rules", data, size);
  absl::StatusOr<rules::RuleLibrary> library = rules::RuleLibrary::Load({path});
  if (!library.ok()) return 0;
  const std::vector<std::shared_ptr<const rules::Rule>> user_rules = library->UserRules();
  if (user_rules.empty()) return 0;

  for (const char* text : kModels) {
    absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(text);
    if (!model.ok()) fuzz::PropertyFailed("the fuzzer's models parse", model.status().ToString());
    (void)InferShapes(**model);
    rules::Rewriter rewriter(**model);
    rules::ConvertOptions options;
    options.validate = false;
    rules::PassContext ctx{**model, rewriter, options};
    (void)rules::MakeRuleSetPass("user", user_rules)->Run(ctx);
    fuzz::ExpectOk((*model)->graph().Verify(), "rules keep the graph consistent");
  }
  return 0;
}
