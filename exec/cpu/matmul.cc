// MatMul (numpy semantics: batch dims broadcast, 1-D operands promoted and their dim dropped
// again) and Gemm (all opsets: transA/transB, alpha/beta, C broadcast to M x N). Float goes
// through the packed GEMM; double through Dgemm; integers through a plain wrapping loop.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cpu/broadcast.h"
#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/dispatch.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/math_kernels.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// Each broadcast batch's element offset into A and into B, in the output's batch order; one
// batch at offset 0 when neither has batch dims.
absl::Status BatchOffsets(const std::vector<int64_t>& a_batch, const std::vector<int64_t>& b_batch,
                          std::vector<int64_t>& a_offsets, std::vector<int64_t>& b_offsets) {
  if (a_batch.empty() && b_batch.empty()) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::Make(a_batch, b_batch));
  a_offsets = plan.OperandOffsets(0);
  b_offsets = plan.OperandOffsets(1);
  return absl::OkStatus();
}

// C[m x n] = alpha * op(A) * op(B) + beta * C for element types without a fast path.
// Integers wrap around like the hardware does (accumulated as uint64, then truncated).
template <typename T>
void PlainGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
               const T* a, int64_t lda, const T* b, int64_t ldb, double beta, T* c, int64_t ldc) {
  using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, T>;
  std::vector<Acc> row(n);
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), Acc(0));
    for (int64_t p = 0; p < k; ++p) {
      const Acc x = static_cast<Acc>(trans_a ? a[p * lda + i] : a[i * lda + p]);
      for (int64_t j = 0; j < n; ++j) {
        row[j] += x * static_cast<Acc>(trans_b ? b[j * ldb + p] : b[p * ldb + j]);
      }
    }
    T* out = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) {
      const T product = static_cast<T>(row[j]);
      if (alpha == 1.0 && (beta == 1.0 || beta == 0.0)) {
        out[j] = beta == 0.0 ? product
                             : static_cast<T>(static_cast<Acc>(product) + static_cast<Acc>(out[j]));
      } else {
        const double value = alpha * static_cast<double>(product) +
                             (beta == 0.0 ? 0.0 : beta * static_cast<double>(out[j]));
        out[j] = static_cast<T>(value);
      }
    }
  }
}

template <typename T>
void AnyGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const T* a,
             int64_t lda, const T* b, int64_t ldb, double beta, T* c, int64_t ldc,
             ThreadPool* pool) {
  if constexpr (std::is_same_v<T, float>) {
    Sgemm(trans_a, trans_b, m, n, k, static_cast<float>(alpha), a, lda, b, ldb,
          static_cast<float>(beta), c, ldc, pool);
  } else if constexpr (std::is_same_v<T, double>) {
    Dgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pool);
  } else {
    PlainGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

// A constant B (weights) packed once for the micro-kernel in use and kept in the node's state.
struct PackedWeights {
  std::string kernel;  // micro-kernel the packing was made for
  PackedB b;
};

// B (k x n, or with trans_b n x k read transposed) packed once for the micro-kernel in use and
// kept in the node's state when it is an initializer and a product of `m` rows repays packing
// it; null otherwise. The same panels and blocking as packing on the fly, so the same result
// bit for bit.
const PackedB* ConstantPackedB(KernelContext& ctx, int64_t m, int64_t n, int64_t k,
                               bool trans_b = false) {
  // Few rows stream B once (Sgemm) rather than keeping a packed copy of it.
  if (ctx.state == nullptr || !ctx.input_is_constant(1) || m <= kFewRows || n <= 1 || k <= 0) {
    return nullptr;
  }
  const std::string kernel = CurrentGemmGeometry().name;
  auto* cache = static_cast<PackedWeights*>(ctx.state->get());
  if (cache == nullptr || cache->kernel != kernel) {
    auto fresh = std::make_shared<PackedWeights>();
    fresh->kernel = kernel;
    fresh->b = PackedB(ctx.input(1).data<float>(), trans_b ? k : n, trans_b, k, n);
    *ctx.state = fresh;
    cache = fresh.get();
  }
  return &cache->b;
}

// Y = A * B with B an initializer, packed once instead of block by block on every run. A bias
// the session fused into the node (KernelContext::fused_bias) is added by the GEMM to each
// tile of the result as it is finished.
bool MatMulConstantB(KernelContext& ctx, const float* a, int64_t m, int64_t n, int64_t k,
                     float* out) {
  const PackedB* b = ConstantPackedB(ctx, m, n, k);
  if (b == nullptr) return false;
  GemmEpilogue epilogue;
  if (ctx.fused_bias != nullptr) epilogue.column_bias = ctx.fused_bias->data<float>();
  GemmRowsInPlace(a, k, m, k, *b, n, out, n, epilogue, ctx.pool);
  return true;
}

// Returns whether the fused bias (if any) was added.
template <typename T>
bool BatchedMatMul(KernelContext& ctx, const std::vector<int64_t>& a_offsets,
                   const std::vector<int64_t>& b_offsets, int64_t m, int64_t n, int64_t k,
                   bool b_shared, Tensor& y) {
  const T* a = ctx.input(0).data<T>();
  const T* b = ctx.input(1).data<T>();
  T* out = y.data<T>();
  const int64_t batches = static_cast<int64_t>(a_offsets.size());
  if (b_shared) {
    // Every batch multiplies the same B and A's batches are contiguous: one taller product.
    if constexpr (std::is_same_v<T, float>) {
      if (MatMulConstantB(ctx, a, batches * m, n, k, out)) return true;
    }
    AnyGemm<T>(false, false, batches * m, n, k, 1.0, a, k, b, n, 0.0, out, n, ctx.pool);
    return false;
  }
  // Small products, or enough of them for every thread to take a few whole (attention heads):
  // one per thread at a time. Otherwise one after another, each spread over the threads.
  const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  const bool across_batches =
      batches > 1 && (m * n * k < (int64_t{1} << 20) || batches >= 2 * threads);
  auto run = [&](int64_t i, ThreadPool* pool) {
    AnyGemm<T>(false, false, m, n, k, 1.0, a + a_offsets[i] * m * k, k, b + b_offsets[i] * k * n, n,
               0.0, out + i * m * n, n, pool);
  };
  if (across_batches) {
    ParallelForEach(ctx.pool, batches, [&](int64_t i) { run(i, nullptr); });
  } else {
    for (int64_t i = 0; i < batches; ++i) run(i, ctx.pool);
  }
  return false;
}

absl::Status MatMul(KernelContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs A and B");
  }
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.type() != b.type()) return ctx.Error("A and B have different element types");
  if (a.rank() == 0 || b.rank() == 0) return ctx.Error("MatMul operands must not be scalars");
  std::vector<int64_t> a_dims = a.dims(), b_dims = b.dims();
  if (a.rank() == 1) a_dims.insert(a_dims.begin(), 1);
  if (b.rank() == 1) b_dims.push_back(1);
  const int64_t m = a_dims[a_dims.size() - 2], k = a_dims.back();
  const int64_t n = b_dims.back();
  if (b_dims[b_dims.size() - 2] != k) {
    return ctx.Error("inner dims differ: ", DescribeTensor(a), " times ", DescribeTensor(b));
  }
  const std::vector<int64_t> a_batch(a_dims.begin(), a_dims.end() - 2);
  const std::vector<int64_t> b_batch(b_dims.begin(), b_dims.end() - 2);
  auto batch = BroadcastShape(a_batch, b_batch);
  if (!batch.ok()) return ctx.Error(batch.status().message());
  std::vector<int64_t> dims = *batch;
  if (a.rank() > 1) dims.push_back(m);
  if (b.rank() > 1) dims.push_back(n);
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, dims));
  Tensor& y = ctx.OutputToOverwrite(0, a.type(), dims);  // every product path writes all of Y
  if (y.numel() == 0) return absl::OkStatus();

  std::vector<int64_t> a_offsets = {0}, b_offsets = {0};
  if (absl::Status s = BatchOffsets(a_batch, b_batch, a_offsets, b_offsets); !s.ok()) {
    return ctx.Error(s.message());
  }
  const bool b_shared = Tensor::NumElements(b_batch) == 1 &&
                        Tensor::NumElements(a_batch) == static_cast<int64_t>(a_offsets.size());
  bool biased = false;
  OVFIX_RETURN_IF_ERROR(Dispatch(
      ctx, a.type(), kFloatTypes + TypeList<int32_t, int64_t, uint32_t, uint64_t>(), [&](auto tag) {
        biased = BatchedMatMul<typename decltype(tag)::type>(ctx, a_offsets, b_offsets, m, n, k,
                                                             b_shared, y);
        return absl::OkStatus();
      }));
  if (ctx.fused_bias != nullptr && !biased) {
    // The session fuses a bias only over float products with B of at least 2 dims.
    if (y.type() != DataType::kFloat || b.rank() < 2 || ctx.fused_bias->numel() != n) {
      return ctx.Error("internal: a fused bias of ", DescribeTensor(*ctx.fused_bias),
                       " does not fit the product ", DescribeTensor(y));
    }
    FinishColumns(y.data<float>(), n, y.numel() / n, n, ctx.fused_bias->data<float>(), nullptr,
                  FusedActivation{});
  }
  return absl::OkStatus();
}

// Y = C broadcast to m x n (C's dims align to the right, each 1 or equal).
template <typename T>
absl::Status FillFromC(KernelContext& ctx, const Tensor& c, int64_t m, int64_t n, T* y) {
  if (c.rank() > 2) return ctx.Error("C must have at most 2 dims, is ", DescribeTensor(c));
  const int64_t rows = c.rank() == 2 ? c.dim(0) : 1;
  const int64_t cols = c.rank() >= 1 ? c.dim(c.rank() - 1) : 1;
  if ((rows != 1 && rows != m) || (cols != 1 && cols != n)) {
    return ctx.Error("C ", DescribeTensor(c), " does not broadcast to [", m, ",", n, "]");
  }
  const T* src = c.data<T>();
  for (int64_t i = 0; i < m; ++i) {
    const T* row = src + (rows == 1 ? 0 : i * cols);
    T* out = y + i * n;
    if (cols == 1) {
      std::fill(out, out + n, row[0]);
    } else {
      std::copy(row, row + n, out);
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status TypedGemm(KernelContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                       int64_t k, double alpha, double beta, Tensor& y) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const bool with_c = ctx.has_input(2) && beta != 0.0 && ctx.input(2).numel() > 0;
  if (with_c) {
    if (ctx.input(2).type() != a.type()) return ctx.Error("C has a different element type");
    OVFIX_RETURN_IF_ERROR(FillFromC<T>(ctx, ctx.input(2), m, n, y.data<T>()));
  }
  AnyGemm<T>(trans_a, trans_b, m, n, k, alpha, a.data<T>(), a.dim(1), b.data<T>(), b.dim(1),
             with_c ? beta : 0.0, y.data<T>(), n, ctx.pool);
  return absl::OkStatus();
}

absl::Status Gemm(KernelContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs A and B");
  }
  if (ctx.opset < 11 && !ctx.has_input(2)) return ctx.Error("needs input C before opset 11");
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.type() != b.type()) return ctx.Error("A and B have different element types");
  if (a.rank() != 2 || b.rank() != 2) {
    return ctx.Error("A and B must be matrices, are ", DescribeTensor(a), " and ",
                     DescribeTensor(b));
  }
  const bool trans_a = ctx.node.GetInt("transA", 0) != 0;
  const bool trans_b = ctx.node.GetInt("transB", 0) != 0;
  const double alpha = ctx.node.GetFloat("alpha", 1.0f);
  const double beta = ctx.node.GetFloat("beta", 1.0f);
  const int64_t m = trans_a ? a.dim(1) : a.dim(0), k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  if ((trans_b ? b.dim(1) : b.dim(0)) != k) {
    return ctx.Error("inner dims differ: ", DescribeTensor(a), " times ", DescribeTensor(b),
                     trans_a ? " (transA)" : "", trans_b ? " (transB)" : "");
  }
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, {m, n}));
  Tensor& y = ctx.OutputToOverwrite(0, a.type(), {m, n});  // C or the product writes all of Y
  if (y.numel() == 0) return absl::OkStatus();
  constexpr TypeList<float, double, int32_t, int64_t, uint32_t, uint64_t> kGemmTypes;
  absl::Status status;
  const bool supported = VisitType(a.type(), kGemmTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    status = TypedGemm<T>(ctx, trans_a, trans_b, m, n, k, alpha, beta, y);
  });
  if (!supported) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(a.type())));
  }
  return status;
}

// ovfix.fused.MatMul<transA, transB>(a, b): MatMul(a, b) with a (transA) or b (transB) read
// with its last two dims swapped, what MatMul(Transpose(a), b) or MatMul(a, Transpose(b))
// computes when the Transpose swaps the last two axes (rules/builtin/session_fusion.rules):
// the product reads the operand in place instead of a transposed copy (attention's K^T).
// Float operands of rank 2 or more, batch dims broadcast as MatMul's.
absl::Status TransposedMatMul(KernelContext& ctx) {
  if (ctx.num_inputs() != 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs A and B");
  }
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.type() != DataType::kFloat || b.type() != DataType::kFloat) {
    return ctx.Error("expects float operands");
  }
  if (a.rank() < 2 || b.rank() < 2) return ctx.Error("expects operands of rank 2 or more");
  const bool trans_a = ctx.node.GetInt("transA", 0) != 0;
  const bool trans_b = ctx.node.GetInt("transB", 0) != 0;
  const std::vector<int64_t>& ad = a.dims();
  const std::vector<int64_t>& bd = b.dims();
  const int64_t a_rows = ad[ad.size() - 2], a_cols = ad.back();
  const int64_t b_rows = bd[bd.size() - 2], b_cols = bd.back();
  const int64_t m = trans_a ? a_cols : a_rows, k = trans_a ? a_rows : a_cols;
  const int64_t n = trans_b ? b_rows : b_cols;
  if ((trans_b ? b_cols : b_rows) != k) {
    return ctx.Error("inner dims differ: ", DescribeTensor(a), trans_a ? " (transA)" : "",
                     " times ", DescribeTensor(b), trans_b ? " (transB)" : "");
  }
  const std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2);
  const std::vector<int64_t> b_batch(bd.begin(), bd.end() - 2);
  auto batch = BroadcastShape(a_batch, b_batch);
  if (!batch.ok()) return ctx.Error(batch.status().message());
  std::vector<int64_t> dims = *batch;
  dims.push_back(m);
  dims.push_back(n);
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, dims));
  Tensor& y = ctx.OutputToOverwrite(0, DataType::kFloat, dims);
  if (y.numel() == 0) return absl::OkStatus();
  std::vector<int64_t> a_offsets = {0}, b_offsets = {0};
  if (absl::Status s = BatchOffsets(a_batch, b_batch, a_offsets, b_offsets); !s.ok()) {
    return ctx.Error(s.message());
  }
  const float* ap = a.data<float>();
  const float* bp = b.data<float>();
  float* out = y.data<float>();
  const int64_t batches = static_cast<int64_t>(a_offsets.size());
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
  // One constant B for every batch (PaddleOCR's CTC head reads its features transposed, 40 x
  // 120 by 120 x 6625): packed once, not on every run (1.25 -> 0.94 ms on one thread).
  // A bias the session fused into the node (B not transposed: FusesOutputBias) is added by
  // the GEMM to each tile as it is finished, or to the rows once they are.
  const float* bias = ctx.fused_bias != nullptr ? ctx.fused_bias->data<float>() : nullptr;
  if (const PackedB* packed_b = b_batch.empty() ? ConstantPackedB(ctx, m, n, k, trans_b) : nullptr;
      packed_b != nullptr) {
    GemmEpilogue epilogue;
    epilogue.column_bias = bias;
    for (int64_t i = 0; i < batches; ++i) {
      const float* a_i = ap + a_offsets[i] * m * k;
      if (!trans_a) {
        GemmRowsInPlace(a_i, k, m, k, *packed_b, n, out + i * m * n, n, epilogue, ctx.pool);
        continue;
      }
      thread_local PackedA packed_a;  // stays with the thread for the next product
      packed_a.Pack(a_i, lda, /*trans=*/true, m, k, ctx.pool);
      GemmPacked(packed_a, *packed_b, n, out + i * m * n, n, epilogue, ctx.pool);
    }
    return absl::OkStatus();
  }
  auto run = [&](int64_t i, ThreadPool* pool) {
    AnyGemm<float>(trans_a, trans_b, m, n, k, 1.0, ap + a_offsets[i] * m * k, lda,
                   bp + b_offsets[i] * k * n, ldb, 0.0, out + i * m * n, n, pool);
  };
  // As BatchedMatMul: small products or many of them one per thread at a time.
  const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  if (batches > 1 && (m * n * k < (int64_t{1} << 20) || batches >= 2 * threads)) {
    ParallelForEach(ctx.pool, batches, [&](int64_t i) { run(i, nullptr); });
  } else {
    for (int64_t i = 0; i < batches; ++i) run(i, ctx.pool);
  }
  if (bias != nullptr) FinishColumns(out, n, batches * m, n, bias, nullptr, FusedActivation{});
  return absl::OkStatus();
}

}  // namespace

void AddMatMulKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "MatMul", 1, kLatestOpset, &MatMul, Float16Mode::kAsFloat});
  table.push_back({"ovfix.fused", "MatMul", 1, 1, &TransposedMatMul});
  table.push_back({"", "Gemm", 1, kLatestOpset, &Gemm, Float16Mode::kAsFloat});
}

void AddMathKernels(std::vector<KernelDef>& table) {
  AddMatMulKernels(table);
  AddConvKernels(table);
  AddNhwcKernels(table);
  AddConvTransposeKernels(table);
  AddConvIntegerKernels(table);
  AddPoolingKernels(table);
  AddBatchNormKernels(table);
}

}  // namespace ovfix::exec
