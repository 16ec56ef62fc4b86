#include "rules/passes/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rules/conversion_options.h"
#include "rules/passes/constant_folding.h"
#include "rules/passes/dead_code_elimination.h"
#include "rules/passes/explicit_broadcast_full.h"
#include "rules/passes/fix_input_shapes.h"
#include "rules/passes/fold_batch_normalization.h"
#include "rules/passes/fp16_islands.h"
#include "rules/passes/fp16_safe_linear_scale.h"
#include "rules/passes/fp16_safe_mask.h"
#include "rules/passes/fp16_safe_softmax.h"
#include "rules/passes/fp16_safe_sum_of_squares.h"
#include "rules/passes/lower_conv3d_unit_kernel.h"

namespace ovfix::rules {
namespace {

using Where = PassPlacement::Where;
using Precision = ConvertOptions::Precision;

NativePassInfo Entry(std::string name, std::string description, FunctionPass::Function run,
                     std::vector<PassOption> options = {}) {
  NativePassInfo info{name, description,
                      [=] { return std::make_unique<FunctionPass>(name, description, run); }};
  info.options = std::move(options);
  return info;
}

// The islands an fp16 conversion keeps, decided from the graph, the spec and calibration.
NativePassInfo Fp16IslandsEntry() {
  Fp16IslandsPass pass;
  NativePassInfo info{pass.name(), pass.description(),
                      [] { return std::make_unique<Fp16IslandsPass>(); }};
  info.options = {
      {"precision", true},          {"keep_fp32"},       {"keep_io_types"}, {"fp16_islands"},
      {"fp16_magnitude_threshold"}, {"island_precision"}};
  info.enabled = [](const ConvertOptions& o) { return o.precision != Precision::kFp32; };
  // After the structural steps, before the dead code they leave is removed.
  info.added = info.enabled;
  info.placement = {Where::kBeforeLast, kDeadCodeElimination};
  info.followed_by = "cast_cleanup";
  return info;
}

bool ConvertsToFp16(const ConvertOptions& o) { return o.precision == Precision::kFp16; }

}  // namespace

const std::vector<NativePassInfo>& NativePasses() {
  static const std::vector<NativePassInfo> kPasses = [] {
    std::vector<NativePassInfo> p;
    p.push_back(
        Entry(kFixInputShapes,
              "fix dynamic dims of graph inputs (--batch, --input-shape) and re-infer shapes",
              FixInputShapes, {{"batch"}, {"input_shape"}}));
    p.back().added = [](const ConvertOptions& o) { return o.batch > 0 || !o.input_shapes.empty(); };
    p.push_back(
        Entry(kConstantFolding,
              "evaluate nodes with constant inputs (and Shape of static shapes) into initializers",
              FoldConstants, {{"fold_size_limit"}}));
    p.push_back(
        Entry(kFoldBatchNormalization,
              "fold an inference BatchNormalization into the Conv, ConvTranspose or Gemm before it",
              FoldBatchNormalization));
    p.push_back(Entry(kDeadCodeElimination, "remove nodes and initializers that nothing reads",
                      EliminateDeadCode));
    p.push_back(Fp16IslandsEntry());
    // A softmax written out by hand overflows fp16 in its Exp; with the row's largest logit
    // subtracted first it does not, and the island policy can leave it in fp16.
    p.push_back(Entry(kFp16SafeSoftmax,
                      "islands ignored: a hand-written softmax whose Exp overflows fp16 subtracts "
                      "the row's max first",
                      SubtractSoftmaxMax,
                      {{"islands_honoured"}, {"fp16_magnitude_threshold"}, {"precision"}}));
    p.back().added = ConvertsToFp16;
    p.back().placement = {Where::kBefore, "fp16_islands"};
    // An attention mask built from float32's extremes is -inf in fp16 (and 0 * -inf is NaN);
    // bounded first, it stays finite and the Softmax reading it can be the only fp32 island.
    p.push_back(Entry(kFp16SafeMask,
                      "islands ignored or fp16: a mask constant beyond fp16 (finfo.min, -1e9, "
                      "-inf) whose every use builds a Softmax bias or an Attention attn_mask "
                      "becomes +-mask_bound (4096)",
                      BoundAttentionMasks, {{"islands_honoured"}, {"precision"}, {"mask_bound"}}));
    p.back().added = ConvertsToFp16;
    p.back().placement = {Where::kBefore, kFp16SafeSoftmax};
    p.push_back(Entry(kFp16SafeSumOfSquares,
                      "islands ignored: a calibrated sum of squares beyond fp16 computed on x / "
                      "2^k, the scale carried into its square root",
                      RescaleSumsOfSquares, {{"islands_honoured"}, {"fp16_magnitude_threshold"}}));
    p.push_back(Entry(kFp16SafeLinearScale,
                      "islands ignored: a Conv/MatMul/Gemm output beyond fp16 that a "
                      "normalization reads computed / 2^k, the normalization's epsilon / 4^k",
                      ScaleLinearBeforeNorm, {{"islands_honoured"}, {"fp16_magnitude_threshold"}}));
    p.push_back(Entry(kLowerConv3dUnitKernel,
                      "rewrite a Conv3D with a unit kernel dim as a Conv2D between "
                      "Reshape/Transpose",
                      LowerConv3dUnitKernel, {{"lower_conv3d_unit_kernel", true}}));
    p.back().enabled = [](const ConvertOptions& o) { return o.lower_conv3d_unit_kernel; };
    p.back().added = p.back().enabled;
    p.back().placement = {Where::kAfter, kFixInputShapes};
    p.push_back(Entry(kExplicitBroadcastFull,
                      "--broadcast full: expand element-wise inputs to identical shapes",
                      ExpandBroadcastsFull, {{"broadcast", true}, {"fold_size_limit"}}));
    p.back().enabled = [](const ConvertOptions& o) {
      return o.broadcast == ConvertOptions::Broadcast::kFull;
    };
    p.back().added = p.back().enabled;
    p.back().placement = {Where::kBefore, "fp16_islands"};
    return p;
  }();
  return kPasses;
}

const NativePassInfo* FindNativePass(std::string_view name) {
  for (const NativePassInfo& p : NativePasses()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::unique_ptr<Pass> MakeNativePass(std::string_view name) {
  const NativePassInfo* p = FindNativePass(name);
  return p != nullptr ? p->make() : nullptr;
}

std::vector<std::string> PassesReading(std::string_view name) {
  std::vector<std::string> passes;
  for (const NativePassInfo& p : NativePasses()) {
    for (const PassOption& o : p.options) {
      if (o.option == name) passes.push_back(p.name);
    }
  }
  return passes;
}

std::string OptionReaders(std::string_view name) {
  std::vector<std::string> readers = PassesReading(name);
  const OptionSpec* spec = FindOption(name);
  if (spec != nullptr && !spec->read_by.empty()) readers.emplace_back(spec->read_by);
  return absl::StrJoin(readers, "; ");
}

std::string DescribePassOption(const PassOption& option) {
  const OptionSpec* spec = FindOption(option.option);
  if (spec == nullptr || !spec->on_command_line) {
    return absl::StrCat(std::string(option.option), " (target option)");
  }
  std::string flag = FlagName(*spec);
  if (!spec->value_name.empty() && spec->type != OptionSpec::Type::kBool) {
    absl::StrAppend(&flag, " ", std::string(spec->value_name));
  }
  return absl::StrCat(std::string(option.option), " (", flag, ")");
}

}  // namespace ovfix::rules
