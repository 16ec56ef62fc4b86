// RNN, GRU and LSTM: the cell kinds and the attributes every backend reads the same way
// (direction, layout, hidden_size, linear_before_reset, input_forget, clip) with the sizes
// they imply. The CPU kernel and the OpenCL one share them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"
#include "ir/tensor.h"

namespace ovfix::exec {

// The values are recurrent.cl's cell numbering.
enum class RecurrentCell { kRnn = 0, kGru = 1, kLstm = 2 };

// Gates per cell, in the order of the rows of W, R and B: RNN i; GRU z, r, h; LSTM i, o, f, c.
int64_t GateCount(RecurrentCell cell);

// The activations of one direction when the node names none: f (RNN), f, g (GRU), f, g, h (LSTM).
const std::vector<std::string>& DefaultActivations(RecurrentCell cell);

struct RecurrentAttributes {
  RecurrentCell cell = RecurrentCell::kRnn;
  int64_t seq_length = 0, batch = 0, input_size = 0, hidden = 0, num_directions = 1;
  bool reverse = false;      // direction "reverse" (bidirectional reverses direction 1)
  bool batch_first = false;  // layout 1: X [batch, seq, input], states [batch, dirs, hidden]
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM: f = 1 - i
  float clip = std::numeric_limits<float>::infinity();

  int64_t gates() const { return GateCount(cell); }
  std::vector<int64_t> y_dims() const {
    return batch_first ? std::vector<int64_t>{batch, seq_length, num_directions, hidden}
                       : std::vector<int64_t>{seq_length, num_directions, batch, hidden};
  }
  std::vector<int64_t> state_dims() const {
    return batch_first ? std::vector<int64_t>{batch, num_directions, hidden}
                       : std::vector<int64_t>{num_directions, batch, hidden};
  }
};

// The activation functions, in the numbering of recurrent.cl's activate().
enum class ActivationKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus,
};

struct RecurrentActivation {
  ActivationKind kind = ActivationKind::kTanh;
  float alpha = 0.0f, beta = 0.0f;
};

// The activations of every direction, DefaultActivations(cell).size() per direction, with
// their parameters: one that takes alpha (beta) consumes the next value of activation_alpha
// (activation_beta), in the order of the activations list, or else takes the default of the
// ONNX operator of the same name.
absl::StatusOr<std::vector<RecurrentActivation>> ReadRecurrentActivations(const KernelContext& ctx,
                                                                          RecurrentCell cell,
                                                                          int64_t num_directions);

// The attributes of a `cell` node with X of `x_dims` and R of `r_dims` (both 3-D).
absl::StatusOr<RecurrentAttributes> ReadRecurrentAttributes(const KernelContext& ctx,
                                                            RecurrentCell cell,
                                                            const std::vector<int64_t>& x_dims,
                                                            const std::vector<int64_t>& r_dims);

// Each batch entry's sequence length: input sequence_lens (`lens`, null when absent: all
// seq_length), int32 or int64 of [batch], each in [0, seq_length].
absl::StatusOr<std::vector<int64_t>> ReadSequenceLengths(const KernelContext& ctx,
                                                         const Tensor* lens,
                                                         const RecurrentAttributes& p);

// The inputs of RNN, GRU and LSTM, by position.
enum RecurrentInput { kX, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kP };

// Checks W, R, B, initial_h and (LSTM) initial_c and P, where the node has them, against X's
// type and the dims `p` implies. `type_dims_of(i)` gives input i's element type, dims and a
// description ("float[1,8,4]").
template <typename Context, typename TypeDimsOf>
absl::Status CheckRecurrentInputs(const Context& ctx, const RecurrentAttributes& p,
                                  TypeDimsOf type_dims_of) {
  const int64_t d = p.num_directions, h = p.hidden, gh = p.gates() * h;
  // A named variable, not a structured binding: clang 14 (the fuzz build) cannot capture those.
  const DataType x_type = std::get<0>(type_dims_of(kX));
  auto check = [&](RecurrentInput index, const char* name,
                   const std::vector<int64_t>& want) -> absl::Status {
    if (!ctx.has_input(index)) return absl::OkStatus();
    const auto [type, dims, text] = type_dims_of(index);
    if (type != x_type) {
      return ctx.Error(name, " is ", text, " but X is ", std::string(DataTypeName(x_type)));
    }
    if (dims != want) {
      return ctx.Error(name, " is ", text, ", expected shape [", absl::StrJoin(want, ","), "]");
    }
    return absl::OkStatus();
  };
  OVFIX_RETURN_IF_ERROR(check(kW, "W", {d, gh, p.input_size}));
  OVFIX_RETURN_IF_ERROR(check(kR, "R", {d, gh, h}));
  OVFIX_RETURN_IF_ERROR(check(kB, "B", {d, 2 * gh}));
  OVFIX_RETURN_IF_ERROR(check(kInitialH, "initial_h", p.state_dims()));
  if (p.cell == RecurrentCell::kLstm) {
    OVFIX_RETURN_IF_ERROR(check(kInitialC, "initial_c", p.state_dims()));
    OVFIX_RETURN_IF_ERROR(check(kP, "P", {d, 3 * h}));
  }
  return absl::OkStatus();
}

}  // namespace ovfix::exec
