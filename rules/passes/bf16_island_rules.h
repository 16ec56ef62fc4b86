// Which nodes of a bfloat16 conversion stay in fp32 ("islands"), and why. bfloat16 has
// float's exponent (no overflow, no underflow that float would not have) and 8 bits of
// significand (relative spacing 2^-7, rounding error up to 2^-8... 2^-9 of a value): what it
// loses is precision, where errors add up or where a result is much smaller than the numbers
// it is computed from. The rules, in the order they are tried (the first gives the reason):
//   --keep-fp32 REGEX        the regex matches the node's whole name or op type
//   repair                   the conversion's repair chose it (keep_outputs)
//   spec                     no bfloat16 in onnx's schema of the op at the model's opset
//                            (Conv, pooling, Sin/Cos... in opsets up to 17), an output type set
//                            by an attribute, ops outside the ONNX domain, control flow,
//                            float Range
//   long sum                 ReduceSum/Mean/SumSquare/L1/L2/LogSum/LogSumExp/Prod over more
//                            than kShortSum elements per output (or an unknown count), CumSum:
//                            a bfloat16 accumulator stops growing once the sum is 2^8 times
//                            the terms (1 + 256 rounds back to 256)
//   statistics               normalization ops (Layer/Instance/Group/Batch/Lp/MVN): mean and
//                            variance are long sums, and x - mean loses x's leading bits
//   softmax denominator      Softmax/LogSoftmax (the sum of exponentials)
//   centering                Sub(x, mean(x)): a small difference of large values (the rounding
//                            of x to bfloat16 is up to 2^-9 |x|, which may be the whole of
//                            x - mean when |mean| >> std)
//   residual stream          a chain of more than kShortSum Adds of two variables, each
//                            reading the one before (x + f(x) block after block): a sum
//                            across layers
//   cancellation             calibration saw an Add/Sub whose inputs reach kCancellation times
//                            its largest output (same loss, seen on the data)
//   integers from floats     Cast to an integer type, Round/Floor/Ceil and the arithmetic
//                            feeding them (bfloat16 holds integers exactly only up to 256)
//   angles                   the arithmetic computing the angle of Sin/Cos
//   closure                  every float input from islands and two or more of them, or one
//                            whose readers are all islands (no Cast pair around a Relu
//                            between two fp32 Convs); repeated until nothing joins
//   pull                     as for fp16 (fp16_island_rules.h)
// Not islands: MatMul, Gemm, Conv (where the spec allows it), Einsum. The policy assumes the
// backend accumulates their products in fp32, as bf16 tensor cores (Ampere and later) and
// oneDNN's AMX/AVX512-BF16 kernels do; only their outputs are rounded to bfloat16. ovfix's CPU
// executor computes them the same way (bf16 inputs widened to float, fp32 accumulation, output
// rounded to nearest even). Overflow guards (magnitude thresholds, epsilons below 2^-14) do not
// apply: bfloat16's range is float's.
#pragma once

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "rules/passes/fp16_island_rules.h"

namespace ovfix::rules {

// Sums over at most this many elements stay in bfloat16 (their rounding error is then at most
// a few bfloat16 ulps of the result).
inline constexpr int64_t kShortSum = 16;
// An Add/Sub whose largest input magnitude is this many times its largest output's keeps
// fewer than 2 of bfloat16's 8 significant bits: fp32.
inline constexpr double kCancellation = 64;

// Node -> reason, for the float nodes of `g` (its main level) that stay in fp32 in a bfloat16
// conversion. `options.magnitude_threshold` is not used; `structural` false keeps only the
// spec's limits, --keep-fp32 and the repair's choices.
absl::StatusOr<absl::flat_hash_map<const Node*, std::string>> DecideBf16Islands(
    const Graph& g, const IslandOptions& options);

// Whether onnx's schema of `n` (default-domain `opset`) lets its input or output `index` be
// bfloat16; true when there is no schema to ask (ops outside onnx).
bool SpecAllowsBfloat16(const Node& n, int64_t opset, bool output, size_t index);

}  // namespace ovfix::rules
