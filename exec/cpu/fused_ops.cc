// Kernels of the executor's internal domain `ovfix.fused`: the nodes that the session graph's
// fusions (rules/builtin/session_fusion.rules) put in place of patterns exporters write. They
// exist only in the copy of a model that a session runs; no file ovfix writes holds them.
// Each computes what its pattern computes, in one pass over the data:
//   Gelu (approximate "none"): x * 0.5 * (1 + erf(x / sqrt 2)); "tanh": the tanh form;
//   RMSNormalization: x / sqrt(mean(x^2 over the last axis) + epsilon) * scale;
//   LayerNormalization: ONNX's LayerNormalization (normalization.cc registers it here too);
//   AddLayerNormalization: LayerNormalization of a + b over the last axis (and a + b itself as
//   an optional second output), ChannelLayerNormalization: LayerNorm over axis 1 of
//   [N, C, ...] with per-channel scale and bias (both normalization.cc's);
//   MatMul (transA/transB: an operand read with its last two axes swapped) is matmul.cc's;
//   Attention is fused_attention.cc's, Elementwise (a chain of element-wise ops)
//   fused_elementwise.cc's.
#include <algorithm>
#include <cmath>
#include <vector>

#include "exec/cpu/vector_math.h"
#include "exec/kernel.h"

namespace ovfix::exec {
namespace {

constexpr int64_t kChunk = 4096;  // elements per task: enough to amortize a task's cost

absl::Status GeluKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  if (input.type() != DataType::kFloat) return ctx.Error("expects float input");
  const std::string approximate = ctx.node.GetString("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    return ctx.Error("approximate must be none or tanh, not '", approximate, "'");
  }
  const float* x = input.data<float>();
  float* y = ctx.OutputToOverwrite(0, DataType::kFloat, input.dims()).data<float>();
  const int64_t n = input.numel();
  const bool tanh_form = approximate == "tanh";
  ParallelFor(ctx.pool, (n + kChunk - 1) / kChunk, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first = c * kChunk, count = std::min(kChunk, n - first);
      const float* in = x + first;
      float* out = y + first;
      if (tanh_form) {
        for (int64_t i = 0; i < count; ++i) {
          const float v = in[i];
          const float inner = (v + v * v * v * 0.044715f) * 0.7978846f;
          out[i] = v * 0.5f * (1.0f + std::tanh(inner));
        }
        continue;
      }
      GeluFloats(in, out, count);
    }
  });
  return absl::OkStatus();
}

absl::Status RmsNormalizationKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects inputs X and Scale");
  const Tensor& input = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  if (input.type() != DataType::kFloat || scale.type() != DataType::kFloat || input.rank() < 1) {
    return ctx.Error("expects float inputs of rank 1 or more");
  }
  const int64_t n = input.dim(input.rank() - 1);
  if (ctx.node.GetInt("axis", -1) != -1 || scale.numel() != n) {
    return ctx.Error("normalizes over the last axis with one scale per element of it");
  }
  const float epsilon = ctx.node.GetFloat("epsilon", 1e-5f);
  const int64_t rows = n == 0 ? 0 : input.numel() / n;
  const float* x = input.data<float>();
  const float* w = scale.data<float>();
  float* y = ctx.OutputToOverwrite(0, DataType::kFloat, input.dims()).data<float>();
  ParallelFor(ctx.pool, rows, std::max<int64_t>(1, kChunk / std::max<int64_t>(n, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const float* in = x + r * n;
                  float* out = y + r * n;
                  double sum = 0;
                  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(in[i]) * in[i];
                  const float root =
                      std::sqrt(static_cast<float>(sum / static_cast<double>(n)) + epsilon);
                  for (int64_t i = 0; i < n; ++i) out[i] = in[i] / root * w[i];
                }
              });
  return absl::OkStatus();
}

}  // namespace

void AddFusedAttentionKernels(std::vector<KernelDef>& table);    // fused_attention.cc
void AddFusedElementwiseKernels(std::vector<KernelDef>& table);  // fused_elementwise.cc

void AddFusedKernels(std::vector<KernelDef>& table) {
  table.push_back({"ovfix.fused", "Gelu", 1, 1, &GeluKernel});
  table.push_back({"ovfix.fused", "RMSNormalization", 1, 1, &RmsNormalizationKernel});
  AddFusedAttentionKernels(table);
  AddFusedElementwiseKernels(table);
}

}  // namespace ovfix::exec
