// The one explicit table of CPU kernels: every group of exec/cpu/ adds its entries here, in
// a fixed order, so `ovfix ops` lists them the same way every time.
//
// No weak fallback definitions of the group functions live here: ovfix_exec is a static
// library, and a weak definition in this object would be linked instead of a group's real
// definition (the linker never pulls an archive member to replace a weak symbol).
#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "exec/kernel.h"

namespace ovfix::exec {

// Groups declared here rather than in kernel.h, which every kernel includes.
void AddFourierKernels(std::vector<KernelDef>& table);   // DFT, STFT
void AddStringKernels(std::vector<KernelDef>& table);    // StringNormalizer, TfIdfVectorizer
void AddTrainingKernels(std::vector<KernelDef>& table);  // Adagrad, Adam, Momentum
void AddFusedKernels(std::vector<KernelDef>& table);     // ovfix.fused (session graph)
void AddModernOpKernels(std::vector<KernelDef>& table);  // ops added in opsets 18-26

namespace {

struct Table {
  std::vector<KernelDef> entries;
  // (domain, op type) -> indices into entries.
  absl::flat_hash_map<std::pair<std::string, std::string>, std::vector<size_t>> by_op;
};

const Table& GetTable() {
  static const Table* table = [] {
    auto* t = new Table();
    AddElementwiseKernels(t->entries);
    AddMathKernels(t->entries);
    AddReduceKernels(t->entries);
    AddShapeKernels(t->entries);
    AddMiscKernels(t->entries);
    AddControlFlowKernels(t->entries);
    AddRecurrentKernels(t->entries);
    AddLossKernels(t->entries);
    AddDetectionKernels(t->entries);
    AddSignalKernels(t->entries);
    AddFourierKernels(t->entries);
    AddStringKernels(t->entries);
    AddTrainingKernels(t->entries);
    AddFusedKernels(t->entries);
    AddModernOpKernels(t->entries);
    for (size_t i = 0; i < t->entries.size(); ++i) {
      const KernelDef& k = t->entries[i];
      std::string domain(k.domain == "ai.onnx" ? std::string_view() : k.domain);
      t->by_op[{domain, std::string(k.op_type)}].push_back(i);
    }
    return t;
  }();
  return *table;
}

}  // namespace

const KernelDef* FindKernel(std::string_view domain, std::string_view op_type, int opset) {
  const Table& table = GetTable();
  if (domain == "ai.onnx") domain = "";
  auto it = table.by_op.find(std::make_pair(std::string(domain), std::string(op_type)));
  if (it == table.by_op.end()) return nullptr;
  for (size_t i : it->second) {
    const KernelDef& k = table.entries[i];
    if (opset >= k.since_version && opset <= k.until_version) return &k;
  }
  return nullptr;
}

bool FusesOutputClamp(std::string_view domain, std::string_view op_type) {
  if (domain == "ovfix.fused") return op_type == "NhwcConv";
  return (domain.empty() || domain == "ai.onnx") &&
         (op_type == "Conv" || op_type == "BatchNormalization");
}

bool FusesOutputBias(std::string_view domain, std::string_view op_type) {
  return (domain.empty() || domain == "ai.onnx" || domain == "ovfix.fused") && op_type == "MatMul";
}

namespace {

// The two fallbacks below, vectorized where the CPU allows: they run over whole activations
// (e.g. after the depthwise convolution).
__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic"))) void
ClampRange(float* data, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    const float clipped = data[i] < lo ? lo : data[i];
    data[i] = clipped > hi ? hi : clipped;
  }
}

// No multiply-add contraction: rounded as the unfused HardSigmoid and Mul kernels.
__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic", "fp-contract=off"))) void
HardSwishRange(float* data, int64_t n, float alpha, float beta) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = data[i];
    data[i] = x * std::max(0.0f, std::min(1.0f, alpha * x + beta));
  }
}

}  // namespace

void ClampFloats(float* data, int64_t n, float lo, float hi, ThreadPool* pool) {
  ParallelFor(n >= (int64_t{1} << 16) ? pool : nullptr, n, 1 << 14,
              [&](int64_t begin, int64_t end) { ClampRange(data + begin, end - begin, lo, hi); });
}

void HardSwishFloats(float* data, int64_t n, float alpha, float beta, ThreadPool* pool) {
  ParallelFor(
      n >= (int64_t{1} << 16) ? pool : nullptr, n, 1 << 14,
      [&](int64_t begin, int64_t end) { HardSwishRange(data + begin, end - begin, alpha, beta); });
}

void ActivateFloats(float* data, int64_t n, const FusedActivation& activation, ThreadPool* pool) {
  if (activation.clamp) ClampFloats(data, n, activation.clamp_min, activation.clamp_max, pool);
  if (activation.hard_swish) {
    HardSwishFloats(data, n, activation.hard_swish_alpha, activation.hard_swish_beta, pool);
  }
}

}  // namespace ovfix::exec
