// Which nodes of an fp16 conversion stay in fp32 ("islands"), and why. The rules, in the
// order they are tried (the first that applies gives the reason):
//   --keep-fp32 REGEX           the regex matches the node's whole name or op type
//   repair                      the conversion's repair chose it (keep_outputs)
//   op kind                     Reduce*, LayerNorm/InstanceNorm/GroupNorm/LpNorm/MVN,
//                               Softmax/LogSoftmax, float Range, ops with no float16 in the
//                               spec, ops outside the ONNX domain, control flow
//   growth feeding a reduction  Pow / Mul(x, x) / Exp, through shape and scaling ops, to a
//                               Reduce* (sums of squares and of exponentials overflow)
//   normalization tail          Reduce* -> Add eps -> Sqrt -> Div (decomposed norms)
//     (these three guard against overflow: with `release_calm`, a reduction, norm or softmax
//     and its growth and tail stay fp16 where calibration saw every value they read, compute
//     or hold inside far below fp16's limit: kCalmLimit)
//   integers from floats        Cast to an integer type, Round/Floor/Ceil, and the
//                               element-wise arithmetic feeding them (sizes computed in
//                               float: fp16 holds integers exactly only up to 2048, and
//                               its rounding moves values across .5 boundaries)
//   angles                      Sin/Cos and the arithmetic computing their angle (RoPE)
//   quantizer inputs            float nodes whose values reach a QuantizeLinear or
//                               DynamicQuantizeLinear (fp16 rounding flips integer codes)
//   constants fp16 cannot hold  an epsilon below 2^-14 (Add/Div), a constant above 65504
//   calibration                 observed |value| > threshold, or fp16 rounding of a value
//                               gives inf, in the node's outputs or inputs
//   residual MatMul             MatMul/Gemm into a residual Add (non-constant other input)
//                               with observed |x| above half the threshold
//   closure                     every non-constant float input comes from an island
//   pull                        float made from non-float inputs that only islands read
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ir/float16.h"
#include "ir/graph.h"

namespace ovfix::rules {

struct IslandOptions {
  std::vector<std::string> keep_fp32;  // regexes (re2)
  // Nodes by the name of their first output, with the reason (the repair's choices).
  std::map<std::string, std::string> keep_outputs;
  // Nodes that stay in fp16/bf16 whatever the policy says, by the name of their first output
  // (the island certificate's give-backs).
  std::set<std::string> release_outputs;
  double magnitude_threshold = 8192;
  // false: only the spec's limits, constants above 65504, --keep-fp32, repair, and outputs
  // observed above the threshold (a magnitude-only policy, to compare with).
  bool structural = true;
  // Calibration ran on real data: release the overflow guards it shows calm (see above).
  bool release_calm = false;
  int64_t opset = 18;  // of the default domain: which op schemas say what takes float16
  // What a calibration run saw of a value's magnitudes (over every set, and every iteration
  // or branch taken in a body), or nullopt when it was not observed.
  std::function<std::optional<MagnitudeRange>(const Value*)> observed;
  // The magnitudes of a float constant when already measured (the reference run measures the
  // weights it reads), or nullopt: the range check reads the constant then.
  std::function<std::optional<MagnitudeRange>(const Value*)> constant_magnitudes;
};

// Node -> reason, for the float nodes of `g` (its main level) that stay in fp32.
absl::StatusOr<absl::flat_hash_map<const Node*, std::string>> DecideIslands(
    const Graph& g, const IslandOptions& options);

// A value holds float32 data (graph inputs, initializers and node outputs).
bool IsFloat32(const Value* v);
// Whether onnx's schema of `n` (default-domain `opset`) lets its input or output `index`
// be float16; true when there is no schema to ask (ops outside onnx).
bool SpecAllowsFloat16(const Node& n, int64_t opset, bool output, size_t index);

}  // namespace ovfix::rules
