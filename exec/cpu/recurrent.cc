// RNN, GRU and LSTM (opsets 7 to 18; `layout` from opset 14): one recurrent layer run over a
// sequence forward, in reverse, or both ways (bidirectional: direction 0 forward, 1 reverse).
//
// Each direction projects the input of every time step at once (X · Wᵀ plus the biases, one
// GEMM), then walks the steps: one GEMM over the batch for the recurrent product Ht-1 · Rᵀ,
// then the cell's gate equations. A batch entry stops at its sequence length: its Y rows past
// it stay zero and its state freezes, so Y_h / Y_c hold its last valid step (zero for a length
// of 0, as onnxruntime does). In reverse an entry starts at its own last valid step, so Y[t]
// is the state after reading X[t] in every direction.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/opset_split_kernels.h"
#include "exec/cpu/recurrent_attributes.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

using Cell = RecurrentCell;

// ---- activation functions (the list every recurrent op shares) ----

struct Activation : RecurrentActivation {
  // The formulas as the recurrent ops' spec writes them (ThresholdedRelu keeps x == alpha).
  template <typename T>
  T operator()(T x) const {
    const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
    switch (kind) {
      case ActivationKind::kRelu:
        return std::max(x, T{0});
      case ActivationKind::kTanh:
        return std::tanh(x);
      case ActivationKind::kSigmoid:  // no overflow of exp for large |x|
        return x >= 0 ? T{1} / (T{1} + std::exp(-x)) : std::exp(x) / (T{1} + std::exp(x));
      case ActivationKind::kAffine:
        return a * x + b;
      case ActivationKind::kLeakyRelu:
        return x >= 0 ? x : a * x;
      case ActivationKind::kThresholdedRelu:
        return x >= a ? x : T{0};
      case ActivationKind::kScaledTanh:
        return a * std::tanh(b * x);
      case ActivationKind::kHardSigmoid:
        return std::min(std::max(a * x + b, T{0}), T{1});
      case ActivationKind::kElu:
        return x >= 0 ? x : a * std::expm1(x);
      case ActivationKind::kSoftsign:
        return x / (T{1} + std::fabs(x));
      case ActivationKind::kSoftplus:  // log(1 + e^x) without overflow for large x
        return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }
};

// ---- the problem: sizes, attributes and where each (step, direction, batch entry) lives ----

enum Output { kY, kYH, kYC };

// The attributes with the activations and sequence lengths read.
struct Problem : RecurrentAttributes {
  std::vector<Activation> activations;  // per direction, in the order f, g, h
  std::vector<int64_t> lengths;         // per batch entry

  int64_t activations_per_direction() const {
    return static_cast<int64_t>(DefaultActivations(cell).size());
  }
  bool is_reverse(int64_t direction) const { return reverse || direction == 1; }
  // Row of X (input_size wide) for step t of batch entry b.
  int64_t XRow(int64_t t, int64_t b) const {
    return batch_first ? b * seq_length + t : t * batch + b;
  }
  // Offset of the hidden_size values of Y for step t, direction d, batch entry b.
  int64_t YOffset(int64_t t, int64_t d, int64_t b) const {
    return (batch_first ? (b * seq_length + t) * num_directions + d
                        : (t * num_directions + d) * batch + b) *
           hidden;
  }
  // Offset of the hidden_size values of initial_h / initial_c / Y_h / Y_c for (d, b).
  int64_t StateOffset(int64_t d, int64_t b) const {
    return (batch_first ? b * num_directions + d : d * batch + b) * hidden;
  }
};

absl::StatusOr<Problem> ReadProblem(const KernelContext& ctx, Cell cell) {
  if (!ctx.has_input(kX) || !ctx.has_input(kW) || !ctx.has_input(kR)) {
    return ctx.Error("expects inputs X, W and R");
  }
  const Tensor& x = ctx.input(kX);
  const Tensor& r = ctx.input(kR);
  if (x.type() != DataType::kFloat && x.type() != DataType::kDouble) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(x.type())));
  }
  if (x.rank() != 3) return ctx.Error("X must be 3-D, got ", DescribeTensor(x));
  if (r.rank() != 3) return ctx.Error("R must be 3-D, got ", DescribeTensor(r));

  Problem p;
  OVFIX_ASSIGN_OR_RETURN(static_cast<RecurrentAttributes&>(p),
                         ReadRecurrentAttributes(ctx, cell, x.dims(), r.dims()));

  OVFIX_RETURN_IF_ERROR(CheckRecurrentInputs(ctx, p, [&](size_t i) {
    const Tensor& t = ctx.input(i);
    return std::make_tuple(t.type(), t.dims(), DescribeTensor(t));
  }));

  OVFIX_ASSIGN_OR_RETURN(
      p.lengths, ReadSequenceLengths(
                     ctx, ctx.has_input(kSequenceLens) ? &ctx.input(kSequenceLens) : nullptr, p));

  OVFIX_ASSIGN_OR_RETURN(const std::vector<RecurrentActivation> activations,
                         ReadRecurrentActivations(ctx, cell, p.num_directions));
  for (const RecurrentActivation& a : activations) p.activations.push_back(Activation{a});
  return p;
}

// ---- the computation ----

// C (m x n, row stride ldc) = A · Bᵀ (+ C when `accumulate`); A is m x k, B is n x k.
template <typename T>
void MultiplyTransposed(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                        int64_t ldb, bool accumulate, T* c, int64_t ldc, ThreadPool* pool) {
  if constexpr (std::is_same_v<T, float>) {
    Sgemm(false, true, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c, ldc, pool);
  } else {
    Dgemm(false, true, m, n, k, 1.0, a, lda, b, ldb, accumulate ? 1.0 : 0.0, c, ldc, pool);
  }
}

// One direction's slices of the weights (nullptr for omitted inputs) and its activations.
template <typename T>
struct Direction {
  const T* w;                    // [gates * hidden, input_size]
  const T* r;                    // [gates * hidden, hidden]
  const T* bias;                 // [2 * gates * hidden]: Wb then Rb
  const T* peephole;             // [3 * hidden]: P_i, P_o, P_f
  const Activation* activation;  // f, g, h
  int64_t index;                 // 0, or 1 for the reverse half of a bidirectional op
};

template <typename T>
T Clip(const Problem& p, T x) {
  return std::clamp(x, static_cast<T>(-p.clip), static_cast<T>(p.clip));
}

// Ht = f(Xt·Wᵀ + Ht-1·Rᵀ + Wb + Rb); `x_part` holds Xt·Wᵀ + Wb + Rb, `h_part` Ht-1·Rᵀ.
template <typename T>
void RnnStep(const Problem& p, const Direction<T>& dir, const T* x_part, const T* h_part, T* h) {
  const Activation& f = dir.activation[0];
  for (int64_t j = 0; j < p.hidden; ++j) h[j] = f(Clip(p, x_part[j] + h_part[j]));
}

// it = f(Xt·Wiᵀ + Ht-1·Riᵀ + Pi ⊙ Ct-1 + Wbi + Rbi), ft likewise with Pf (or 1 - it with
// input_forget), ct = g(Xt·Wcᵀ + Ht-1·Rcᵀ + Wbc + Rbc), Ct = ft ⊙ Ct-1 + it ⊙ ct,
// ot = f(Xt·Woᵀ + Ht-1·Roᵀ + Po ⊙ Ct + Wbo + Rbo), Ht = ot ⊙ h(Ct).
template <typename T>
void LstmStep(const Problem& p, const Direction<T>& dir, const T* x_part, const T* h_part, T* h,
              T* c) {
  const int64_t n = p.hidden;
  const Activation& f = dir.activation[0];
  const Activation& g = dir.activation[1];
  const Activation& act_h = dir.activation[2];
  const T* peephole = dir.peephole;
  for (int64_t j = 0; j < n; ++j) {
    const auto gate = [&](int64_t k) { return x_part[k * n + j] + h_part[k * n + j]; };
    const T p_i = peephole != nullptr ? peephole[j] : T{0};
    const T p_o = peephole != nullptr ? peephole[n + j] : T{0};
    const T p_f = peephole != nullptr ? peephole[2 * n + j] : T{0};
    const T input = f(Clip(p, gate(0) + p_i * c[j]));
    const T forget = p.input_forget ? T{1} - input : f(Clip(p, gate(2) + p_f * c[j]));
    const T cell = g(Clip(p, gate(3)));
    const T c_new = forget * c[j] + input * cell;
    const T output = f(Clip(p, gate(1) + p_o * c_new));
    h[j] = output * act_h(Clip(p, c_new));
    c[j] = c_new;
  }
}

// GRU, first half: zt = f(Xt·Wzᵀ + Ht-1·Rzᵀ + Wbz + Rbz) and rt likewise, written over
// h_part's z and r columns; with linear_before_reset 0 also rt ⊙ Ht-1 into `reset_h`, the
// left operand of the product with Rh.
template <typename T>
void GruGates(const Problem& p, const Direction<T>& dir, const T* x_part, T* h_part, const T* h,
              T* reset_h) {
  const int64_t n = p.hidden;
  const Activation& f = dir.activation[0];
  for (int64_t j = 0; j < n; ++j) {
    h_part[j] = f(Clip(p, x_part[j] + h_part[j]));
    h_part[n + j] = f(Clip(p, x_part[n + j] + h_part[n + j]));
    if (!p.linear_before_reset) reset_h[j] = h_part[n + j] * h[j];
  }
}

// GRU, second half: ht = g(Xt·Whᵀ + (rt ⊙ Ht-1)·Rhᵀ + Rbh + Wbh), or with linear_before_reset
// ht = g(Xt·Whᵀ + rt ⊙ (Ht-1·Rhᵀ + Rbh) + Wbh); Ht = (1 - zt) ⊙ ht + zt ⊙ Ht-1. `x_part`'s
// h columns hold Xt·Whᵀ + Wbh (+ Rbh without linear_before_reset).
template <typename T>
void GruUpdate(const Problem& p, const Direction<T>& dir, const T* x_part, const T* h_part, T* h) {
  const int64_t n = p.hidden;
  const Activation& g = dir.activation[1];
  const T* rbh = dir.bias != nullptr ? dir.bias + 5 * n : nullptr;  // after Wb and Rbz, Rbr
  for (int64_t j = 0; j < n; ++j) {
    const T z = h_part[j], reset = h_part[n + j], product = h_part[2 * n + j];
    const T candidate =
        p.linear_before_reset
            ? g(Clip(p, x_part[2 * n + j] + reset * (product + (rbh != nullptr ? rbh[j] : T{0}))))
            : g(Clip(p, x_part[2 * n + j] + product));
    h[j] = (T{1} - z) * candidate + z * h[j];
  }
}

template <typename T>
void RunDirection(const Problem& p, const Direction<T>& dir, const T* x, const T* initial_h,
                  const T* initial_c, T* y, T* y_h, T* y_c, ThreadPool* pool) {
  const int64_t n = p.hidden, gh = p.gates() * n, batch = p.batch;
  const bool reverse = p.is_reverse(dir.index);
  const bool reset_product = p.cell == Cell::kGru && !p.linear_before_reset;

  // Every step's input part at once: x_parts[row] = X[row] · Wᵀ + Wb + Rb (GRU with
  // linear_before_reset leaves Rbh to be added inside the reset product).
  std::vector<T> x_parts(static_cast<size_t>(p.seq_length * batch * gh));
  if (dir.bias != nullptr) {
    std::vector<T> bias(dir.bias, dir.bias + gh);
    for (int64_t j = 0; j < gh; ++j) {
      const bool inside_reset = p.linear_before_reset && j >= 2 * n;
      if (!inside_reset) bias[j] += dir.bias[gh + j];
    }
    for (int64_t row = 0; row < p.seq_length * batch; ++row) {
      std::copy(bias.begin(), bias.end(), x_parts.begin() + row * gh);
    }
  }
  MultiplyTransposed(p.seq_length * batch, gh, p.input_size, x, p.input_size, dir.w, p.input_size,
                     dir.bias != nullptr, x_parts.data(), gh, pool);

  std::vector<T> h(batch * n), c(batch * n), h_parts(batch * gh);
  std::vector<T> reset_h(reset_product ? batch * n : 0);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t state = p.StateOffset(dir.index, b);
    if (initial_h != nullptr) std::copy_n(initial_h + state, n, h.begin() + b * n);
    if (initial_c != nullptr) std::copy_n(initial_c + state, n, c.begin() + b * n);
  }

  const int64_t max_length = *std::max_element(p.lengths.begin(), p.lengths.end());
  // Step s of batch entry b's walk reads X at time time_of(s, b), while s < lengths[b].
  const auto time_of = [&](int64_t s, int64_t b) { return reverse ? p.lengths[b] - 1 - s : s; };
  for (int64_t s = 0; s < max_length; ++s) {
    // Ht-1 · Rᵀ for the whole batch (finished entries are computed and left unused); without
    // linear_before_reset the GRU's Rh product waits for rt.
    MultiplyTransposed(batch, reset_product ? 2 * n : gh, n, h.data(), n, dir.r, n, false,
                       h_parts.data(), gh, pool);
    if (p.cell == Cell::kGru) {
      for (int64_t b = 0; b < batch; ++b) {
        if (s >= p.lengths[b]) continue;
        GruGates(p, dir, x_parts.data() + p.XRow(time_of(s, b), b) * gh, h_parts.data() + b * gh,
                 h.data() + b * n, reset_product ? reset_h.data() + b * n : nullptr);
      }
      if (reset_product) {
        MultiplyTransposed(batch, n, n, reset_h.data(), n, dir.r + 2 * n * n, n, false,
                           h_parts.data() + 2 * n, gh, pool);
      }
    }
    for (int64_t b = 0; b < batch; ++b) {
      if (s >= p.lengths[b]) continue;
      const int64_t t = time_of(s, b);
      const T* x_part = x_parts.data() + p.XRow(t, b) * gh;
      T* h_b = h.data() + b * n;
      switch (p.cell) {
        case Cell::kRnn:
          RnnStep(p, dir, x_part, h_parts.data() + b * gh, h_b);
          break;
        case Cell::kGru:
          GruUpdate(p, dir, x_part, h_parts.data() + b * gh, h_b);
          break;
        case Cell::kLstm:
          LstmStep(p, dir, x_part, h_parts.data() + b * gh, h_b, c.data() + b * n);
          break;
      }
      if (y != nullptr) std::copy_n(h_b, n, y + p.YOffset(t, dir.index, b));
    }
  }

  // Entries of length 0 keep the zeros of the freshly allocated outputs.
  for (int64_t b = 0; b < batch; ++b) {
    if (p.lengths[b] == 0) continue;
    const int64_t state = p.StateOffset(dir.index, b);
    if (y_h != nullptr) std::copy_n(h.begin() + b * n, n, y_h + state);
    if (y_c != nullptr) std::copy_n(c.begin() + b * n, n, y_c + state);
  }
}

// The output's data, or nullptr when the node leaves it out.
template <typename T>
T* OptionalOutput(KernelContext& ctx, size_t index, const std::vector<int64_t>& dims) {
  if (index >= ctx.outputs.size() || ctx.node.output(index) == nullptr) return nullptr;
  return ctx.Output(index, ctx.input(kX).type(), dims).data<T>();
}

template <typename T>
const T* OptionalInput(const KernelContext& ctx, size_t index) {
  return ctx.has_input(index) ? ctx.input(index).data<T>() : nullptr;
}

template <typename T>
absl::Status Run(KernelContext& ctx, const Problem& p) {
  const bool lstm = p.cell == Cell::kLstm;
  T* y = OptionalOutput<T>(ctx, kY, p.y_dims());
  T* y_h = OptionalOutput<T>(ctx, kYH, p.state_dims());
  T* y_c = lstm ? OptionalOutput<T>(ctx, kYC, p.state_dims()) : nullptr;
  if (p.batch == 0) return absl::OkStatus();
  const int64_t gh = p.gates() * p.hidden;
  const T* bias = OptionalInput<T>(ctx, kB);
  const T* peephole = lstm ? OptionalInput<T>(ctx, kP) : nullptr;
  for (int64_t d = 0; d < p.num_directions; ++d) {
    const Direction<T> dir{
        .w = ctx.input(kW).data<T>() + d * gh * p.input_size,
        .r = ctx.input(kR).data<T>() + d * gh * p.hidden,
        .bias = bias != nullptr ? bias + d * 2 * gh : nullptr,
        .peephole = peephole != nullptr ? peephole + d * 3 * p.hidden : nullptr,
        .activation = p.activations.data() + d * p.activations_per_direction(),
        .index = d,
    };
    RunDirection(p, dir, ctx.input(kX).data<T>(), OptionalInput<T>(ctx, kInitialH),
                 lstm ? OptionalInput<T>(ctx, kInitialC) : nullptr, y, y_h, y_c, ctx.pool);
  }
  return absl::OkStatus();
}

template <Cell kCell>
absl::Status RecurrentKernel(KernelContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(Problem problem, ReadProblem(ctx, kCell));
  if (ctx.input(kX).type() == DataType::kFloat) return Run<float>(ctx, problem);
  return Run<double>(ctx, problem);
}

}  // namespace

void AddRecurrentKernels(std::vector<KernelDef>& table) {
  // Opset 14 added `layout`; the kernels read ctx.opset, so each op has two entries.
  AddOpsSplitAtOpset(table, 7, 14,
                     {{"RNN", &RecurrentKernel<Cell::kRnn>},
                      {"GRU", &RecurrentKernel<Cell::kGru>},
                      {"LSTM", &RecurrentKernel<Cell::kLstm>}});
}

}  // namespace ovfix::exec
