// ovfix.fused.Elementwise(X, operands...): a chain of element-wise ops run as one pass over
// the data (converter/session_elementwise_fusion.h puts it in place of the chain). The chain
// is a small program, one step per op of the chain, applied to blocks of elements of X:
//   ops       strings, the steps' op types: Add Sub Mul Div Max Min (binary), Relu Sigmoid Tanh
//             Erf Exp Neg Abs Sqrt Reciprocal HardSwish (unary), LeakyRelu HardSigmoid Clip
//             (unary with parameters);
//   operands  ints, per step: for a binary op the input of this node that is its other operand
//             (0 is X itself: x * sigmoid(x)), -1 for a unary op;
//   swapped   ints, per step: 1 when the chain's value is the binary op's second operand
//             (Sub(c, x), Div(c, x));
//   params    floats, two per step: LeakyRelu alpha; HardSigmoid alpha, beta; Clip min, max.
// Y has X's shape; every operand broadcasts to it (without widening it). Each step computes
// what its op's kernel computes for a float element (the same expression, and the same
// vectorized erf and exp), so the result is that of the chain, bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "exec/cpu/broadcast.h"
#include "exec/cpu/vector_math.h"
#include "exec/kernel.h"

namespace ovfix::exec {
namespace {

constexpr int64_t kBlock = 256;  // elements a step runs over at a time (stays in L1)

enum class Op {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,  // binary
  kRelu,
  kSigmoid,
  kTanh,
  kErf,
  kExp,
  kNeg,
  kAbs,
  kSqrt,
  kReciprocal,
  kHardSwish,
  kLeakyRelu,
  kHardSigmoid,
  kClip,
};

std::optional<Op> ParseOp(const std::string& name) {
  static const std::pair<const char*, Op> kOps[] = {
      {"Add", Op::kAdd},
      {"Sub", Op::kSub},
      {"Mul", Op::kMul},
      {"Div", Op::kDiv},
      {"Max", Op::kMax},
      {"Min", Op::kMin},
      {"Relu", Op::kRelu},
      {"Sigmoid", Op::kSigmoid},
      {"Tanh", Op::kTanh},
      {"Erf", Op::kErf},
      {"Exp", Op::kExp},
      {"Neg", Op::kNeg},
      {"Abs", Op::kAbs},
      {"Sqrt", Op::kSqrt},
      {"Reciprocal", Op::kReciprocal},
      {"HardSwish", Op::kHardSwish},
      {"LeakyRelu", Op::kLeakyRelu},
      {"HardSigmoid", Op::kHardSigmoid},
      {"Clip", Op::kClip},
  };
  for (const auto& [text, op] : kOps) {
    if (name == text) return op;
  }
  return std::nullopt;
}

bool IsBinary(Op op) { return op <= Op::kMin; }

// Where a binary step's operand comes from, for a block of output elements.
struct Operand {
  const float* data = nullptr;
  enum class Kind { kSame, kScalar, kBroadcast } kind = Kind::kSame;
  std::optional<BroadcastPlan> plan;  // kBroadcast: output dims against the operand's

  // The operand's values for output elements [begin, begin + n): a pointer into the data, or
  // `scratch` filled.
  const float* Values(int64_t begin, int64_t n, float* scratch) const {
    if (kind == Kind::kSame) return data + begin;
    if (kind == Kind::kScalar) {
      std::fill(scratch, scratch + n, data[0]);
      return scratch;
    }
    plan->ForEachRun(begin, begin + n, [&](int64_t o, const int64_t* offsets, int64_t count) {
      float* out = scratch + (o - begin);
      const float* in = data + offsets[1];
      if (plan->run_stride(1) != 0) {
        std::copy(in, in + count, out);
      } else {
        std::fill(out, out + count, in[0]);
      }
    });
    return scratch;
  }
};

struct Step {
  Op op;
  int operand = -1;  // index into the operands, or -1
  bool swapped = false;
  float p0 = 0, p1 = 0;
};

template <typename Fn>
inline void Map(float* x, int64_t n, Fn fn) {
  for (int64_t i = 0; i < n; ++i) x[i] = fn(x[i]);
}

template <typename Fn>
inline void MapWith(float* x, const float* b, int64_t n, bool swapped, Fn fn) {
  if (swapped) {
    for (int64_t i = 0; i < n; ++i) x[i] = fn(b[i], x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] = fn(x[i], b[i]);
  }
}

// One step over a block, each op's float expression as its own kernel writes it
// (elementwise_binary.cc, elementwise_unary.cc, activations.cc).
void RunStep(const Step& step, float* x, const float* b, int64_t n) {
  switch (step.op) {
    case Op::kAdd:
      return MapWith(x, b, n, step.swapped, [](float u, float v) { return u + v; });
    case Op::kSub:
      return MapWith(x, b, n, step.swapped, [](float u, float v) { return u - v; });
    case Op::kMul:
      return MapWith(x, b, n, step.swapped, [](float u, float v) { return u * v; });
    case Op::kDiv:
      return MapWith(x, b, n, step.swapped, [](float u, float v) { return u / v; });
    case Op::kMax:
      // Max and Min of two inputs as elementwise_variadic.cc folds them (NaN in the first wins).
      return MapWith(x, b, n, step.swapped,
                     [](float u, float v) { return (u != u || u > v) ? u : v; });
    case Op::kMin:
      return MapWith(x, b, n, step.swapped,
                     [](float u, float v) { return (u != u || u < v) ? u : v; });
    case Op::kRelu:
      return Map(x, n, [](float v) { return v < 0.0f ? 0.0f : v; });
    case Op::kSigmoid:
      return Map(x, n, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
    case Op::kTanh:
      return Map(x, n, [](float v) { return std::tanh(v); });
    case Op::kErf:
      return ErfFloats(x, x, n);
    case Op::kExp:
      return ExpFloats(x, x, n);
    case Op::kNeg:
      return Map(x, n, [](float v) { return -v; });
    case Op::kAbs:
      return Map(x, n, [](float v) { return std::abs(v); });
    case Op::kSqrt:
      return Map(x, n, [](float v) { return std::sqrt(v); });
    case Op::kReciprocal:
      return Map(x, n, [](float v) { return 1.0f / v; });
    case Op::kHardSwish:
      return Map(x, n, [](float v) {
        const float alpha = 1.0f / 6.0f;
        return v * std::max(0.0f, std::min(1.0f, alpha * v + 0.5f));
      });
    case Op::kLeakyRelu:
      return Map(x, n, [a = step.p0](float v) { return v * (v < 0.0f ? a : 1.0f); });
    case Op::kHardSigmoid:
      return Map(x, n, [a = step.p0, c = step.p1](float v) {
        return std::max(0.0f, std::min(1.0f, a * v + c));
      });
    case Op::kClip:
      return Map(x, n, [lo = step.p0, hi = step.p1](float v) {
        const float clipped = v < lo ? lo : v;
        return clipped > hi ? hi : clipped;
      });
  }
}

absl::Status ElementwiseKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("needs input X");
  const Tensor& x = ctx.input(0);
  if (x.type() != DataType::kFloat) return ctx.Error("expects float X");
  const std::vector<std::string> names = ctx.node.GetStrings("ops");
  const std::vector<int64_t> operand_of = ctx.node.GetInts("operands");
  const std::vector<int64_t> swapped = ctx.node.GetInts("swapped");
  const std::vector<float> params = ctx.node.GetFloats("params");
  if (names.empty() || operand_of.size() != names.size() || swapped.size() != names.size() ||
      params.size() != 2 * names.size()) {
    return ctx.Error("needs ops, operands, swapped and params of one entry per step");
  }
  // Operands by input index: X itself is input 0.
  std::vector<Operand> operands(ctx.num_inputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing");
    const Tensor& t = ctx.input(i);
    if (t.type() != DataType::kFloat) return ctx.Error("input ", i, " is not float");
    Operand& o = operands[i];
    o.data = t.data<float>();
    if (i == 0 || t.dims() == x.dims()) continue;
    if (t.numel() == 1 && t.rank() <= x.rank()) {
      o.kind = Operand::Kind::kScalar;
      continue;
    }
    auto plan = BroadcastPlan::Make(x.dims(), t.dims());
    if (!plan.ok() || plan->output_dims() != x.dims()) {
      return ctx.Error("input ", i, " ", ShapeToString(t.dims()), " does not broadcast to X ",
                       ShapeToString(x.dims()));
    }
    if (plan->all_same_shape()) continue;  // the same elements, with leading 1s
    o.kind = Operand::Kind::kBroadcast;
    o.plan = *std::move(plan);
  }
  std::vector<Step> steps(names.size());
  for (size_t s = 0; s < names.size(); ++s) {
    std::optional<Op> op = ParseOp(names[s]);
    if (!op) return ctx.Error("cannot run op '", names[s], "' in a chain");
    Step& step = steps[s];
    step.op = *op;
    step.swapped = swapped[s] != 0;
    step.p0 = params[2 * s];
    step.p1 = params[2 * s + 1];
    if (IsBinary(*op)) {
      if (operand_of[s] < 0 || operand_of[s] >= static_cast<int64_t>(operands.size())) {
        return ctx.Error("step ", s, " (", names[s], ") has no operand");
      }
      step.operand = static_cast<int>(operand_of[s]);
    }
  }

  const float* in = x.data<float>();
  float* out = ctx.OutputToOverwrite(0, DataType::kFloat, x.dims()).data<float>();
  const int64_t n = x.numel();
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  auto run = [&](int64_t first, int64_t last) {
    float scratch[kBlock];
    for (int64_t block = first; block < last; ++block) {
      const int64_t begin = block * kBlock, count = std::min(kBlock, n - begin);
      float* y = out + begin;
      std::copy(in + begin, in + begin + count, y);
      for (const Step& step : steps) {
        const float* b =
            step.operand >= 0 ? operands[step.operand].Values(begin, count, scratch) : nullptr;
        RunStep(step, y, b, count);
      }
    }
  };
  // Threads pay for themselves on larger tensors only (as the unfused element-wise kernels).
  if (ctx.pool == nullptr || n < (int64_t{1} << 14)) {
    run(0, blocks);
  } else {
    ParallelFor(ctx.pool, blocks, 16, run);
  }
  return absl::OkStatus();
}

}  // namespace

void AddFusedElementwiseKernels(std::vector<KernelDef>& table) {
  table.push_back({"ovfix.fused", "Elementwise", 1, 1, &ElementwiseKernel});
}

}  // namespace ovfix::exec
