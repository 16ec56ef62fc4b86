// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12 to 18). Every sample
// (n, d1, ..., dk) of an [N, C, d1, ..., dk] input loses minus the log-probability of its
// target class c, weighted by weight[c] (1 without weights); a sample whose target equals
// ignore_index loses nothing and weighs nothing. SoftmaxCrossEntropyLoss takes scores and
// applies LogSoftmax over the class axis first (its optional second output).
//
// Reduction "none" keeps one loss per sample, "sum" adds them up, and "mean" divides that sum
// by the summed weights of the samples not ignored (0 / 0 = NaN when all are ignored, as the
// ONNX function body computes).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

enum class Reduction { kNone, kSum, kMean };

// The input seen as [batch, classes, inner]: class c of sample (n, i) lies at
// (n * classes + c) * inner + i, and the sample is number n * inner + i of the target.
struct LossProblem {
  int64_t batch = 0, classes = 0, inner = 1;
  Reduction reduction = Reduction::kMean;
  std::optional<int64_t> ignore_index;
  std::vector<int64_t> targets;    // one class (or ignore_index) per sample
  std::vector<int64_t> loss_dims;  // the target's shape: the loss per sample
};

// Reads inputs 0 (log-probabilities or scores), 1 (targets) and the optional 2 (weights),
// named as the op names them in messages.
absl::StatusOr<LossProblem> ReadLossProblem(const KernelContext& ctx, const char* input_name,
                                            const char* target_name, const char* weight_name) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("expects inputs ", input_name, " and ", target_name);
  }
  const Tensor& input = ctx.input(0);
  const Tensor& target = ctx.input(1);
  if (input.type() != DataType::kFloat && input.type() != DataType::kDouble) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(input.type())));
  }
  if (input.rank() < 2) {
    return ctx.Error(input_name, " must be at least 2-D (N, C, ...), got ", DescribeTensor(input));
  }
  LossProblem p;
  p.batch = input.dim(0);
  p.classes = input.dim(1);
  p.loss_dims = {p.batch};
  for (size_t d = 2; d < input.rank(); ++d) {
    p.inner *= input.dim(d);
    p.loss_dims.push_back(input.dim(d));
  }
  if ((target.type() != DataType::kInt32 && target.type() != DataType::kInt64) ||
      target.dims() != p.loss_dims) {
    return ctx.Error(target_name, " is ", DescribeTensor(target), ", expected int32 or int64 [",
                     absl::StrJoin(p.loss_dims, ","), "] for ", input_name, " ",
                     DescribeTensor(input));
  }
  if (ctx.has_input(2)) {
    const Tensor& weight = ctx.input(2);
    if (weight.type() != input.type() || weight.dims() != std::vector<int64_t>{p.classes}) {
      return ctx.Error(weight_name, " is ", DescribeTensor(weight), ", expected ",
                       std::string(DataTypeName(input.type())), "[", p.classes, "]");
    }
  }

  const std::string reduction = ctx.node.GetString("reduction", "mean");
  if (reduction == "none") {
    p.reduction = Reduction::kNone;
  } else if (reduction == "sum") {
    p.reduction = Reduction::kSum;
  } else if (reduction != "mean") {
    return ctx.Error("unknown reduction '", reduction, "'");
  }
  if (ctx.node.HasAttribute("ignore_index")) p.ignore_index = ctx.node.GetInt("ignore_index", 0);

  p.targets.resize(target.numel());
  for (int64_t i = 0; i < target.numel(); ++i) {
    const int64_t c = target.GetAsInt64(i);
    if (c != p.ignore_index && (c < 0 || c >= p.classes)) {
      return ctx.Error(target_name, " value ", c, " at element ", i, " is outside [0, ", p.classes,
                       ")");
    }
    p.targets[i] = c;
  }
  return p;
}

// Output 0 from the log-probabilities ([batch, classes, inner]) and the optional weights.
template <typename T>
void WriteLoss(KernelContext& ctx, const LossProblem& p, const T* log_prob, const T* weight) {
  const bool per_sample = p.reduction == Reduction::kNone;
  Tensor& output =
      ctx.Output(0, ctx.input(0).type(), per_sample ? p.loss_dims : std::vector<int64_t>{});
  T* loss = output.data<T>();
  double sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t i = 0; i < p.inner; ++i) {
      const int64_t sample = n * p.inner + i;
      const int64_t c = p.targets[sample];
      if (c == p.ignore_index) continue;  // loss 0 (the output is zero-filled), weight 0
      const double w = weight != nullptr ? static_cast<double>(weight[c]) : 1.0;
      const double l = -static_cast<double>(log_prob[(n * p.classes + c) * p.inner + i]) * w;
      if (per_sample) loss[sample] = static_cast<T>(l);
      sum += l;
      weight_sum += w;
    }
  }
  if (p.reduction == Reduction::kSum) loss[0] = static_cast<T>(sum);
  if (p.reduction == Reduction::kMean) loss[0] = static_cast<T>(sum / weight_sum);
}

template <typename T>
const T* OptionalWeight(const KernelContext& ctx) {
  return ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
}

absl::Status NegativeLogLikelihoodLossKernel(KernelContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(LossProblem p, ReadLossProblem(ctx, "input", "target", "weight"));
  if (ctx.input(0).type() == DataType::kFloat) {
    WriteLoss(ctx, p, ctx.input(0).data<float>(), OptionalWeight<float>(ctx));
  } else {
    WriteLoss(ctx, p, ctx.input(0).data<double>(), OptionalWeight<double>(ctx));
  }
  return absl::OkStatus();
}

// log_prob = LogSoftmax(scores) over the class axis, into `log_prob` (same layout).
template <typename T>
void LogSoftmaxOverClasses(const LossProblem& p, const T* scores, T* log_prob) {
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t i = 0; i < p.inner; ++i) {
      const T* x = scores + n * p.classes * p.inner + i;
      T* y = log_prob + n * p.classes * p.inner + i;
      double max = -INFINITY;
      for (int64_t c = 0; c < p.classes; ++c) {
        max = std::max(max, static_cast<double>(x[c * p.inner]));
      }
      double sum = 0;
      for (int64_t c = 0; c < p.classes; ++c) sum += std::exp(x[c * p.inner] - max);
      const double log_sum = std::log(sum);
      for (int64_t c = 0; c < p.classes; ++c) {
        y[c * p.inner] = static_cast<T>(x[c * p.inner] - max - log_sum);
      }
    }
  }
}

template <typename T>
void SoftmaxCrossEntropy(KernelContext& ctx, const LossProblem& p) {
  const Tensor& scores = ctx.input(0);
  std::vector<T> log_prob(scores.numel());
  LogSoftmaxOverClasses(p, scores.data<T>(), log_prob.data());
  WriteLoss(ctx, p, log_prob.data(), OptionalWeight<T>(ctx));
  if (ctx.outputs.size() > 1 && ctx.node.output(1) != nullptr) {
    std::copy(log_prob.begin(), log_prob.end(),
              ctx.Output(1, scores.type(), scores.dims()).data<T>());
  }
}

absl::Status SoftmaxCrossEntropyLossKernel(KernelContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(LossProblem p, ReadLossProblem(ctx, "scores", "labels", "weights"));
  if (ctx.input(0).type() == DataType::kFloat) {
    SoftmaxCrossEntropy<float>(ctx, p);
  } else {
    SoftmaxCrossEntropy<double>(ctx, p);
  }
  return absl::OkStatus();
}

}  // namespace

void AddLossKernels(std::vector<KernelDef>& table) {
  // Opset 13 only widened the element types; one entry covers 12 to the latest.
  table.push_back(
      {"", "NegativeLogLikelihoodLoss", 12, kLatestOpset, &NegativeLogLikelihoodLossKernel});
  table.push_back(
      {"", "SoftmaxCrossEntropyLoss", 12, kLatestOpset, &SoftmaxCrossEntropyLossKernel});
}

}  // namespace ovfix::exec
