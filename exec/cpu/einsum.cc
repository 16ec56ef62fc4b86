// Einsum (opset 12+): any equation, with implicit output, repeated labels (diagonals),
// ellipsis broadcasting and summed-out labels.
//
// Each operand first becomes a strided view with one axis per distinct label (a repeated label
// is one axis whose stride is the sum of its strides: the diagonal, no copy). Labels that no
// other operand and not the output use are summed out right away. Operands are then contracted
// pairwise, left to right, each contraction laid out as a batched matrix product
// [batch, left, shared] x [batch, shared, right]; the last result is summed down to the output
// labels and transposed into the output's order.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cpu/dispatch.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/misc_kernels.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

constexpr int kLetters = 52;  // a-z then A-Z; ellipsis dims get the labels after them

int LabelOf(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

struct Equation {
  std::vector<std::vector<int>> inputs;  // labels per input axis (ellipsis expanded)
  std::vector<int> output;
  int num_labels = kLetters;
};

// One term of the equation as written: labels, and where "..." stands (-1: nowhere).
struct Term {
  std::vector<int> letters;
  int ellipsis_at = -1;
};

absl::StatusOr<Term> ParseTerm(const KernelContext& ctx, const std::string& text) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '.') {
      if (text.compare(i, 3, "...") != 0 || term.ellipsis_at >= 0) {
        return ctx.Error("malformed ellipsis in equation term '", text, "'");
      }
      term.ellipsis_at = static_cast<int>(term.letters.size());
      i += 2;
      continue;
    }
    const int label = LabelOf(text[i]);
    if (label < 0)
      return ctx.Error("invalid character '", std::string(1, text[i]), "' in equation");
    term.letters.push_back(label);
  }
  return term;
}

// Ellipsis dims are right-aligned across operands (numpy broadcasting): with `total` ellipsis
// dims overall, an operand's `count` dims take the last `count` ellipsis labels.
std::vector<int> Expand(const Term& term, int count, int total) {
  std::vector<int> labels;
  for (size_t i = 0; i <= term.letters.size(); ++i) {
    if (static_cast<int>(i) == term.ellipsis_at) {
      for (int k = 0; k < count; ++k) labels.push_back(kLetters + total - count + k);
    }
    if (i < term.letters.size()) labels.push_back(term.letters[i]);
  }
  return labels;
}

absl::StatusOr<Equation> ParseEquation(const KernelContext& ctx) {
  std::string text;
  for (char c : ctx.node.GetString("equation")) {
    if (c != ' ' && c != '\t' && c != '\n') text.push_back(c);
  }
  const size_t arrow = text.find("->");
  const std::string left = text.substr(0, arrow);
  std::vector<Term> terms;
  size_t start = 0;
  for (;;) {
    const size_t comma = left.find(',', start);
    OVFIX_ASSIGN_OR_RETURN(Term term, ParseTerm(ctx, left.substr(start, comma - start)));
    terms.push_back(std::move(term));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ctx.num_inputs()) {
    return ctx.Error("equation has ", terms.size(), " operands but the node has ", ctx.num_inputs(),
                     " inputs");
  }
  Equation eq;
  int total_ellipsis = 0;
  std::vector<int> ellipsis_counts(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!ctx.has_input(i)) return ctx.Error("missing input ", i);
    const int rank = static_cast<int>(ctx.input(i).rank());
    const int letters = static_cast<int>(terms[i].letters.size());
    const int count = rank - letters;
    if (count < 0 || (count > 0 && terms[i].ellipsis_at < 0)) {
      return ctx.Error("equation term ", i, " does not match input rank ", rank);
    }
    ellipsis_counts[i] = count;
    total_ellipsis = std::max(total_ellipsis, count);
  }
  eq.num_labels = kLetters + total_ellipsis;
  std::vector<int> occurrences(eq.num_labels, 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    eq.inputs.push_back(Expand(terms[i], ellipsis_counts[i], total_ellipsis));
    for (int label : eq.inputs.back()) ++occurrences[label];
  }
  if (arrow == std::string::npos) {
    // Implicit output: the broadcast dims, then labels used once, in character order
    // (upper case sorts before lower case, as in numpy).
    for (int k = 0; k < total_ellipsis; ++k) eq.output.push_back(kLetters + k);
    for (int label = 26; label < kLetters; ++label) {
      if (occurrences[label] == 1) eq.output.push_back(label);
    }
    for (int label = 0; label < 26; ++label) {
      if (occurrences[label] == 1) eq.output.push_back(label);
    }
    return eq;
  }
  OVFIX_ASSIGN_OR_RETURN(Term out, ParseTerm(ctx, text.substr(arrow + 2)));
  eq.output = Expand(out, out.ellipsis_at >= 0 ? total_ellipsis : 0, total_ellipsis);
  std::vector<char> seen(eq.num_labels, 0);
  for (int label : eq.output) {
    if (seen[label]++) return ctx.Error("output label repeated in equation");
    if (occurrences[label] == 0) return ctx.Error("output label not used by any input");
  }
  return eq;
}

// A strided view of an operand: one axis per distinct label.
template <typename T>
struct View {
  const T* data = nullptr;
  std::vector<int> labels;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  std::vector<T> storage;  // owns the data when materialized

  int Find(int label) const {
    const auto it = std::find(labels.begin(), labels.end(), label);
    return it == labels.end() ? -1 : static_cast<int>(it - labels.begin());
  }
};

// Calls fn(offset) for every index over `dims` in row-major order.
template <typename Fn>
void ForEachOffset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, Fn&& fn) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  const int rank = static_cast<int>(dims.size());
  if (rank == 0) {
    fn(int64_t{0});
    return;
  }
  std::vector<int64_t> counter(rank, 0);
  int64_t offset = 0;
  const int64_t inner = dims[rank - 1], inner_stride = strides[rank - 1];
  for (;;) {
    for (int64_t i = 0; i < inner; ++i) fn(offset + i * inner_stride);
    int d = rank - 2;
    for (; d >= 0; --d) {
      offset += strides[d];
      if (++counter[d] < dims[d]) break;
      offset -= counter[d] * strides[d];
      counter[d] = 0;
    }
    if (d < 0) return;
  }
}

template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double,
                                       std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// The view's elements laid out contiguously in the order of `labels`, each of size dims (a
// label the view lacks, or has with size 1, is broadcast).
template <typename T>
std::vector<T> Gather(const View<T>& v, const std::vector<int>& labels,
                      const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(labels.size(), 0);
  int64_t total = 1;
  for (size_t i = 0; i < labels.size(); ++i) {
    const int axis = v.Find(labels[i]);
    if (axis >= 0 && v.dims[axis] != 1) strides[i] = v.strides[axis];
    total *= dims[i];
  }
  std::vector<T> out;
  out.reserve(total);
  ForEachOffset(dims, strides, [&](int64_t offset) { out.push_back(v.data[offset]); });
  return out;
}

template <typename T>
View<T> Contiguous(std::vector<T> data, std::vector<int> labels, std::vector<int64_t> dims) {
  View<T> v;
  v.storage = std::move(data);
  v.data = v.storage.data();
  v.labels = std::move(labels);
  v.dims = std::move(dims);
  v.strides.assign(v.dims.size(), 1);
  for (int i = static_cast<int>(v.dims.size()) - 2; i >= 0; --i) {
    v.strides[i] = v.strides[i + 1] * v.dims[i + 1];
  }
  return v;
}

// Sums out every label not in `keep` (a subsequence of v.labels, kept in v's order).
template <typename T>
View<T> SumOut(const View<T>& v, const std::vector<char>& keep) {
  std::vector<int> kept_labels;
  std::vector<int64_t> kept_dims, kept_strides, summed_dims, summed_strides;
  for (size_t i = 0; i < v.labels.size(); ++i) {
    if (keep[v.labels[i]]) {
      kept_labels.push_back(v.labels[i]);
      kept_dims.push_back(v.dims[i]);
      kept_strides.push_back(v.strides[i]);
    } else {
      summed_dims.push_back(v.dims[i]);
      summed_strides.push_back(v.strides[i]);
    }
  }
  std::vector<T> out;
  out.reserve(Tensor::NumElements(kept_dims));
  ForEachOffset(kept_dims, kept_strides, [&](int64_t base) {
    Accumulator<T> sum = 0;
    ForEachOffset(summed_dims, summed_strides, [&](int64_t offset) {
      sum += static_cast<Accumulator<T>>(v.data[base + offset]);
    });
    out.push_back(static_cast<T>(sum));
  });
  return Contiguous(std::move(out), std::move(kept_labels), std::move(kept_dims));
}

// C[b] (m x n) = A[b] (m x k) * B[b] (k x n) for each of `batch` products.
template <typename T>
void BatchedProduct(int64_t batch, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c,
                    ThreadPool* pool) {
  if (m == 0 || n == 0 || k == 0) return;  // c is zero-filled
  for (int64_t i = 0; i < batch; ++i) {
    const T* ai = a + i * m * k;
    const T* bi = b + i * k * n;
    T* ci = c + i * m * n;
    if constexpr (std::is_same_v<T, float>) {
      Sgemm(false, false, m, n, k, 1.0f, ai, k, bi, n, 0.0f, ci, n, pool);
    } else if constexpr (std::is_same_v<T, double>) {
      Dgemm(false, false, m, n, k, 1.0, ai, k, bi, n, 0.0, ci, n, pool);
    } else {
      ParallelFor(pool, m, 1, [&](int64_t begin, int64_t end) {
        std::vector<Accumulator<T>> row(n);
        for (int64_t r = begin; r < end; ++r) {
          std::fill(row.begin(), row.end(), 0);
          for (int64_t p = 0; p < k; ++p) {
            const Accumulator<T> x = ai[r * k + p];
            const T* brow = bi + p * n;
            for (int64_t j = 0; j < n; ++j) row[j] += x * static_cast<Accumulator<T>>(brow[j]);
          }
          for (int64_t j = 0; j < n; ++j) ci[r * n + j] = static_cast<T>(row[j]);
        }
      });
    }
  }
}

// Contracts two operands whose every label is in `keep` or in both operands.
template <typename T>
absl::StatusOr<View<T>> Contract(const KernelContext& ctx, const View<T>& a, const View<T>& b,
                                 const std::vector<char>& keep) {
  std::vector<int> batch, left, shared, right;
  std::vector<int64_t> batch_dims, left_dims, shared_dims, right_dims;
  int64_t batch_size = 1, m = 1, n = 1, k = 1;
  for (size_t i = 0; i < a.labels.size(); ++i) {
    const int label = a.labels[i];
    const int j = b.Find(label);
    const int64_t size = j < 0 ? a.dims[i] : std::max(a.dims[i], b.dims[j]);
    if (j < 0) {
      left.push_back(label);
      left_dims.push_back(size);
      m *= size;
    } else if (keep[label]) {
      batch.push_back(label);
      batch_dims.push_back(size);
      batch_size *= size;
    } else {
      shared.push_back(label);
      shared_dims.push_back(size);
      k *= size;
    }
  }
  for (size_t j = 0; j < b.labels.size(); ++j) {
    if (a.Find(b.labels[j]) < 0) {
      right.push_back(b.labels[j]);
      right_dims.push_back(b.dims[j]);
      n *= b.dims[j];
    }
  }
  // Broadcasting can make the operands' layouts far larger than the inputs.
  constexpr double kMaxElements = static_cast<double>(int64_t{1} << 36);
  const double batches = static_cast<double>(batch_size);
  if (batches * static_cast<double>(m) * static_cast<double>(k) > kMaxElements ||
      batches * static_cast<double>(k) * static_cast<double>(n) > kMaxElements ||
      batches * static_cast<double>(m) * static_cast<double>(n) > kMaxElements) {
    return ctx.Error("intermediate result too large");
  }
  const auto concat = [](auto x, const auto& y, const auto& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  const std::vector<T> a_data =
      Gather(a, concat(batch, left, shared), concat(batch_dims, left_dims, shared_dims));
  const std::vector<T> b_data =
      Gather(b, concat(batch, shared, right), concat(batch_dims, shared_dims, right_dims));
  std::vector<T> c(batch_size * m * n, T{0});
  BatchedProduct(batch_size, m, n, k, a_data.data(), b_data.data(), c.data(), ctx.pool);
  return Contiguous(std::move(c), concat(batch, left, right),
                    concat(batch_dims, left_dims, right_dims));
}

// The input as a view with distinct labels; a repeated label reads the diagonal.
template <typename T>
absl::StatusOr<View<T>> InputView(const KernelContext& ctx, const Tensor& t,
                                  const std::vector<int>& labels) {
  View<T> v;
  v.data = t.data<T>();
  int64_t stride = 1;
  std::vector<int64_t> strides(t.rank());
  for (int i = static_cast<int>(t.rank()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= t.dim(i);
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    const int axis = v.Find(labels[i]);
    if (axis < 0) {
      v.labels.push_back(labels[i]);
      v.dims.push_back(t.dim(i));
      v.strides.push_back(t.dim(i) == 1 ? 0 : strides[i]);
    } else if (v.dims[axis] != t.dim(i)) {
      return ctx.Error("repeated label has sizes ", v.dims[axis], " and ", t.dim(i));
    } else {
      v.strides[axis] += strides[i];
    }
  }
  return v;
}

template <typename T>
absl::Status RunEinsum(KernelContext& ctx, const Equation& eq) {
  // Size of each label across operands; a size of 1 broadcasts.
  std::vector<int64_t> sizes(eq.num_labels, -1);
  for (size_t i = 0; i < eq.inputs.size(); ++i) {
    const Tensor& t = ctx.input(i);
    for (size_t axis = 0; axis < eq.inputs[i].size(); ++axis) {
      int64_t& size = sizes[eq.inputs[i][axis]];
      const int64_t d = t.dim(axis);
      if (size == -1 || size == 1) {
        size = d;
      } else if (d != size && d != 1) {
        return ctx.Error("label sizes ", size, " and ", d, " do not match");
      }
    }
  }
  // uses[label]: the operands still to be contracted that use it, plus the output.
  std::vector<int> uses(eq.num_labels, 0);
  for (const auto& labels : eq.inputs) {
    std::vector<char> seen(eq.num_labels, 0);
    for (int label : labels) {
      if (!seen[label]++) ++uses[label];
    }
  }
  for (int label : eq.output) ++uses[label];

  View<T> result;
  for (size_t i = 0; i < eq.inputs.size(); ++i) {
    OVFIX_ASSIGN_OR_RETURN(View<T> view, InputView<T>(ctx, ctx.input(i), eq.inputs[i]));
    for (int label : view.labels) --uses[label];
    // Labels that nothing later needs are summed now, before they multiply the work.
    std::vector<char> keep(eq.num_labels, 0);
    for (int label = 0; label < eq.num_labels; ++label) keep[label] = uses[label] > 0;
    if (i == 0) {
      result = SumOut(view, keep);
      continue;
    }
    // Labels of this operand only that are not needed later are summed first; the others
    // shared with the result are contracted unless still needed.
    std::vector<char> keep_own = keep;
    for (int label : result.labels) keep_own[label] = 1;
    const View<T> operand = SumOut(view, keep_own);
    std::vector<char> keep_result = keep;
    for (int label : operand.labels) keep_result[label] = 1;
    const View<T> left = SumOut(result, keep_result);
    OVFIX_ASSIGN_OR_RETURN(View<T> product, Contract(ctx, left, operand, keep));
    result = std::move(product);
  }
  // Every output label is still in the result: its uses never dropped to zero.
  std::vector<int64_t> out_dims;
  for (int label : eq.output) out_dims.push_back(result.dims[result.Find(label)]);
  const std::vector<T> values = Gather(result, eq.output, out_dims);
  Tensor& y = ctx.Output(0, ctx.input(0).type(), out_dims);
  std::copy(values.begin(), values.end(), y.data<T>());
  return absl::OkStatus();
}

absl::Status Einsum(KernelContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.Error("needs at least one input");
  OVFIX_ASSIGN_OR_RETURN(Equation eq, ParseEquation(ctx));
  const DataType type = ctx.input(0).type();
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.input(i).type() != type) return ctx.Error("inputs have different element types");
  }
  return Dispatch(ctx, type, kNumericTypes,
                  [&](auto tag) { return RunEinsum<typename decltype(tag)::type>(ctx, eq); });
}

}  // namespace

void AddEinsumKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "Einsum", 12, kLatestOpset, Einsum, Float16Mode::kAsFloat});
}

}  // namespace ovfix::exec
