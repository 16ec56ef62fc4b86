// The optimizer steps of the ai.onnx.preview.training domain (opset 1): Adagrad, Adam and
// Momentum. Each takes a learning rate R and an update count T (scalars), then n tensors to
// optimize and their per-tensor state, and returns the updated tensors and state, element by
// element, following the formulas of the operator definitions:
//
//   every op      G' = norm_coefficient * X + G                  (L2 regularized gradient)
//   Adagrad       r = R / (1 + T * decay_factor);  H' = H + G'^2;  X' = X - r * G' / (sqrt(H') +
//   eps) Adam          V' = alpha V + (1 - alpha) G';  H' = beta H + (1 - beta) G'^2;
//                 R' = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R;
//                 X' = (1 - norm_coefficient_post) (X - R' V' / (sqrt(H') + eps))
//   Momentum      V' = alpha V + (T > 0 ? beta : 1) G';
//                 standard: X' = X - R V';  nesterov: X' = X - R (G' + alpha V')
//
// Arithmetic is in double; the tensors are float or double.
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// The inputs after R and T: `groups` lists of n tensors each (X, G, then the state).
struct OptimizerInputs {
  double rate = 0;
  int64_t count = 0;
  size_t n = 0;  // tensors optimized
};

absl::StatusOr<OptimizerInputs> ReadOptimizerInputs(const KernelContext& ctx, size_t groups) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("expects the learning rate R and the update count T");
  }
  const Tensor& r = ctx.input(0);
  const Tensor& t = ctx.input(1);
  if (r.numel() != 1 || (r.type() != DataType::kFloat && r.type() != DataType::kDouble)) {
    return ctx.Error("R must be a float or double scalar, got ", DescribeTensor(r));
  }
  if (t.numel() != 1 || t.type() != DataType::kInt64) {
    return ctx.Error("T must be an int64 scalar, got ", DescribeTensor(t));
  }
  const size_t rest = ctx.num_inputs() - 2;
  if (rest == 0 || rest % groups != 0 || ctx.outputs.size() != rest / groups * (groups - 1)) {
    return ctx.Error("expects ", groups, " groups of equally many tensors after R and T, and ",
                     groups - 1, " groups of outputs; got ", rest, " inputs and ",
                     ctx.outputs.size(), " outputs");
  }
  OptimizerInputs in{r.GetAsDouble(0), t.GetAsInt64(0), rest / groups};
  for (size_t i = 2; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing");
    const Tensor& x = ctx.input(i);
    const Tensor& first = ctx.input(2 + (i - 2) % in.n);
    if ((x.type() != DataType::kFloat && x.type() != DataType::kDouble) ||
        x.type() != first.type() || x.dims() != first.dims()) {
      return ctx.Error("input ", i, " is ", DescribeTensor(x), ", expected ", DescribeTensor(first),
                       " like the tensor it belongs to");
    }
  }
  return in;
}

// Input `group` of tensor k, element e, as double.
double In(const KernelContext& ctx, const OptimizerInputs& in, size_t group, size_t k, int64_t e) {
  return ctx.input(2 + group * in.n + k).GetAsDouble(e);
}

// Output `group` of tensor k, shaped like its X.
Tensor& Out(KernelContext& ctx, const OptimizerInputs& in, size_t group, size_t k) {
  const Tensor& x = ctx.input(2 + k);
  return ctx.Output(group * in.n + k, x.type(), x.dims());
}

void Set(Tensor& t, int64_t e, double v) {
  if (t.type() == DataType::kFloat) {
    t.data<float>()[e] = static_cast<float>(v);
  } else {
    t.data<double>()[e] = v;
  }
}

// The loop of every optimizer: for each optimized tensor k, allocates its kOutputs outputs
// (shaped like its X), then calls step(out, k, e, x, g) for each element e, with out[j] output
// j of the tensor, x the element and g its gradient plus norm * x.
template <size_t kOutputs, typename Step>
void UpdateEach(KernelContext& ctx, const OptimizerInputs& in, double norm, Step step) {
  for (size_t k = 0; k < in.n; ++k) {
    std::array<Tensor*, kOutputs> out;
    for (size_t j = 0; j < kOutputs; ++j) out[j] = &Out(ctx, in, j, k);
    for (int64_t e = 0; e < out[0]->numel(); ++e) {
      const double x = In(ctx, in, 0, k, e);
      step(out, k, e, x, norm * x + In(ctx, in, 1, k, e));
    }
  }
}

absl::Status Adagrad(KernelContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(OptimizerInputs in, ReadOptimizerInputs(ctx, 3));  // X, G, H
  const double decay = ctx.node.GetFloat("decay_factor", 0.0f);
  const double epsilon = ctx.node.GetFloat("epsilon", 1e-6f);
  const double norm = ctx.node.GetFloat("norm_coefficient", 0.0f);
  const double rate = in.rate / (1.0 + static_cast<double>(in.count) * decay);
  UpdateEach<2>(ctx, in, norm, [&](auto& out, size_t k, int64_t e, double x, double g) {
    const double h = In(ctx, in, 2, k, e) + g * g;
    Set(*out[1], e, h);
    Set(*out[0], e, x - rate * g / (std::sqrt(h) + epsilon));
  });
  return absl::OkStatus();
}

absl::Status Adam(KernelContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(OptimizerInputs in, ReadOptimizerInputs(ctx, 4));  // X, G, V, H
  const double alpha = ctx.node.GetFloat("alpha", 0.9f);
  const double beta = ctx.node.GetFloat("beta", 0.999f);
  const double epsilon = ctx.node.GetFloat("epsilon", 1e-6f);
  const double norm = ctx.node.GetFloat("norm_coefficient", 0.0f);
  const double norm_post = ctx.node.GetFloat("norm_coefficient_post", 0.0f);
  const double t = static_cast<double>(in.count);
  const double rate =
      in.count > 0 ? in.rate * std::sqrt(1.0 - std::pow(beta, t)) / (1.0 - std::pow(alpha, t))
                   : in.rate;
  UpdateEach<3>(ctx, in, norm, [&](auto& out, size_t k, int64_t e, double x, double g) {
    const double v = alpha * In(ctx, in, 2, k, e) + (1.0 - alpha) * g;
    const double h = beta * In(ctx, in, 3, k, e) + (1.0 - beta) * g * g;
    Set(*out[1], e, v);
    Set(*out[2], e, h);
    Set(*out[0], e, (1.0 - norm_post) * (x - rate * v / (std::sqrt(h) + epsilon)));
  });
  return absl::OkStatus();
}

absl::Status Momentum(KernelContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(OptimizerInputs in, ReadOptimizerInputs(ctx, 3));  // X, G, V
  for (const char* required : {"alpha", "beta", "norm_coefficient", "mode"}) {
    if (!ctx.node.HasAttribute(required)) return ctx.Error("needs the attribute ", required);
  }
  const double alpha = ctx.node.GetFloat("alpha", 0.0f);
  const double beta = in.count > 0 ? ctx.node.GetFloat("beta", 0.0f) : 1.0;
  const double norm = ctx.node.GetFloat("norm_coefficient", 0.0f);
  const std::string mode = ctx.node.GetString("mode");
  if (mode != "standard" && mode != "nesterov") {
    return ctx.Error("mode must be \"standard\" or \"nesterov\", got \"", mode, "\"");
  }
  const bool nesterov = mode == "nesterov";
  UpdateEach<2>(ctx, in, norm, [&](auto& out, size_t k, int64_t e, double x, double g) {
    const double v = alpha * In(ctx, in, 2, k, e) + beta * g;
    Set(*out[1], e, v);
    Set(*out[0], e, x - in.rate * (nesterov ? g + alpha * v : v));
  });
  return absl::OkStatus();
}

}  // namespace

void AddTrainingKernels(std::vector<KernelDef>& table) {
  constexpr std::string_view kDomain = "ai.onnx.preview.training";
  table.push_back({kDomain, "Adagrad", 1, 1, &Adagrad});
  table.push_back({kDomain, "Adam", 1, 1, &Adam});
  table.push_back({kDomain, "Momentum", 1, 1, &Momentum});
}

}  // namespace ovfix::exec
