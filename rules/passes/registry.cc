#include "rules/passes/registry.h"

#include "rules/passes/constant_folding.h"
#include "rules/passes/dead_code_elimination.h"
#include "rules/passes/explicit_broadcast_full.h"
#include "rules/passes/fix_input_shapes.h"
#include "rules/passes/fp16_islands.h"
#include "rules/passes/lower_conv3d_unit_kernel.h"

namespace ovfix::rules {
namespace {

template <typename P>
NativePassInfo Entry() {
  P pass;
  return {pass.name(), pass.description(), [] { return std::make_unique<P>(); }};
}

}  // namespace

const std::vector<NativePassInfo>& NativePasses() {
  static const std::vector<NativePassInfo> kPasses = {
      Entry<FixInputShapesPass>(),        Entry<ConstantFoldingPass>(),
      Entry<DeadCodeEliminationPass>(),   Entry<LowerConv3dUnitKernelPass>(),
      Entry<ExplicitBroadcastFullPass>(), Entry<Fp16IslandsPass>(),
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
