#include "rules/passes/registry.h"

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

NativePassInfo Entry(std::string name, std::string description, FunctionPass::Function run,
                     std::vector<std::string> options = {}) {
  return {name, description, [=] { return std::make_unique<FunctionPass>(name, description, run); },
          std::move(options)};
}

NativePassInfo Fp16IslandsEntry() {
  Fp16IslandsPass pass;
  return {
      pass.name(),
      pass.description(),
      [] { return std::make_unique<Fp16IslandsPass>(); },
      {"fp16 (target option)", "keep_fp32 (--keep-fp32 REGEX)", "keep_io_types (--keep-io-types)",
       "fp16_islands structural|magnitude", "fp16_magnitude_threshold N"}};
}

}  // namespace

const std::vector<NativePassInfo>& NativePasses() {
  static const std::vector<NativePassInfo> kPasses = {
      Entry(kFixInputShapes,
            "fix dynamic dims of graph inputs (--batch, --input-shape) and re-infer shapes",
            FixInputShapes, {"batch (--batch N)", "input shapes (--input-shape NAME=DIMS)"}),
      Entry(kConstantFolding,
            "evaluate nodes with constant inputs (and Shape of static shapes) into initializers",
            FoldConstants, {"fold_size_limit N (elements of a folded constant)"}),
      Entry(kFoldBatchNormalization,
            "fold an inference BatchNormalization into the Conv, ConvTranspose or Gemm before it",
            FoldBatchNormalization),
      Entry(kDeadCodeElimination, "remove nodes and initializers that nothing reads",
            EliminateDeadCode),
      Entry(kLowerConv3dUnitKernel,
            "rewrite a Conv3D with a unit kernel dim as a Conv2D between Reshape/Transpose",
            LowerConv3dUnitKernel, {"lower_conv3d_unit_kernel (--lower-conv3d-unit-kernel)"}),
      Entry(kExplicitBroadcastFull,
            "--broadcast full: expand element-wise inputs to identical shapes",
            ExpandBroadcastsFull, {"broadcast rank|full (--broadcast)"}),
      Fp16IslandsEntry(),
      Entry(kFp16SafeMask,
            "islands ignored or fp16: a mask constant beyond fp16 (finfo.min, -1e9, -inf) whose "
            "every use builds a Softmax bias or an Attention attn_mask becomes +-4096",
            BoundAttentionMasks,
            {"islands_honoured false (target option)", "fp16 (target option)"}),
      Entry(kFp16SafeSumOfSquares,
            "islands ignored: a calibrated sum of squares beyond fp16 computed on x / 2^k, the "
            "scale carried into its square root",
            RescaleSumsOfSquares,
            {"islands_honoured false (target option)", "fp16_magnitude_threshold N"}),
      Entry(kFp16SafeLinearScale,
            "islands ignored: a Conv/MatMul/Gemm output beyond fp16 that a normalization reads "
            "computed / 2^k, the normalization's epsilon / 4^k",
            ScaleLinearBeforeNorm,
            {"islands_honoured false (target option)", "fp16_magnitude_threshold N"}),
      Entry(kFp16SafeSoftmax,
            "islands ignored: a hand-written softmax whose Exp overflows fp16 subtracts the "
            "row's max first",
            SubtractSoftmaxMax,
            {"islands_honoured false (target option)", "fp16_magnitude_threshold N"}),
  };
  return kPasses;
}

std::unique_ptr<Pass> MakeNativePass(std::string_view name) {
  for (const NativePassInfo& p : NativePasses()) {
    if (p.name == name) return p.make();
  }
  return nullptr;
}

}  // namespace ovfix::rules
