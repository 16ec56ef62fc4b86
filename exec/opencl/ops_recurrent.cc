// RNN, GRU and LSTM on the device (opsets 7-18, `layout` from 14): the CPU kernel's problem
// (exec/cpu/recurrent.cc: directions, layout, sequence_lens, clip, input_forget, peepholes,
// linear_before_reset, the activation list with its alphas and betas) with the same checks
// and messages, computed by kernels/recurrent.cl: one projection of every step's input, then
// one launch per time step for both directions (GRU without linear_before_reset: two, as its
// reset product needs every unit's reset gate first).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "exec/cpu/recurrent_attributes.h"
#include "exec/kernel.h"
#include "exec/opencl/host_upload.h"
#include "exec/opencl/op_context.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

using Cell = RecurrentCell;
enum Output { kY, kYH, kYC };

// Three activation slots per direction (unused ones are Tanh).
struct Activations {
  std::vector<int32_t> kinds;
  std::vector<float> alphas, betas;
};

absl::StatusOr<Activations> ReadActivations(OpContext& ctx, Cell cell, int64_t directions) {
  OVFIX_ASSIGN_OR_RETURN(
      const std::vector<RecurrentActivation> read,
      ReadRecurrentActivations(KernelContext::For(ctx.node, ctx.opset), cell, directions));
  const size_t per_direction = DefaultActivations(cell).size();
  Activations out;
  out.kinds.assign(3 * directions, 1);
  out.alphas.assign(3 * directions, 0.0f);
  out.betas.assign(3 * directions, 0.0f);
  for (size_t i = 0; i < read.size(); ++i) {
    const size_t slot = i / per_direction * 3 + i % per_direction;
    out.kinds[slot] = static_cast<int32_t>(read[i].kind);
    out.alphas[slot] = read[i].alpha;
    out.betas[slot] = read[i].beta;
  }
  return out;
}

// The attributes with the activations and sequence lengths read.
struct Problem : RecurrentAttributes {
  Activations activations;
  std::vector<int32_t> lengths;
};

std::string Describe(const ClValue& v) {
  return absl::StrCat(std::string(DataTypeName(v.type)), "[", absl::StrJoin(v.dims, ","), "]");
}

absl::StatusOr<Problem> ReadProblem(OpContext& ctx, Cell cell) {
  if (!ctx.has_input(kX) || !ctx.has_input(kW) || !ctx.has_input(kR)) {
    return ctx.Error("expects inputs X, W and R");
  }
  const ClValue& x = ctx.input(kX);
  const ClValue& r = ctx.input(kR);
  if (x.type == DataType::kDouble) return ctx.Unsupported("double");
  if (x.type != DataType::kFloat && x.type != DataType::kFloat16) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(x.type)));
  }
  if (x.dims.size() != 3) return ctx.Error("X must be 3-D, got ", Describe(x));
  if (r.dims.size() != 3) return ctx.Error("R must be 3-D, got ", Describe(r));

  Problem p;
  OVFIX_ASSIGN_OR_RETURN(
      static_cast<RecurrentAttributes&>(p),
      ReadRecurrentAttributes(KernelContext::For(ctx.node, ctx.opset), cell, x.dims, r.dims));
  OVFIX_RETURN_IF_ERROR(CheckRecurrentInputs(ctx, p, [&](size_t i) {
    const ClValue& t = ctx.input(i);
    return std::make_tuple(t.type, t.dims, Describe(t));
  }));
  const Tensor* lens = nullptr;
  if (ctx.has_input(kSequenceLens)) {
    OVFIX_ASSIGN_OR_RETURN(lens, ctx.Host(kSequenceLens));
  }
  OVFIX_ASSIGN_OR_RETURN(const std::vector<int64_t> lengths,
                         ReadSequenceLengths(KernelContext::For(ctx.node, ctx.opset), lens, p));
  p.lengths.assign(lengths.begin(), lengths.end());  // int32 for the kernel; at most seq_length
  OVFIX_ASSIGN_OR_RETURN(p.activations, ReadActivations(ctx, cell, p.num_directions));
  return p;
}

absl::StatusOr<std::shared_ptr<cl::Buffer>> Scratch(OpContext& ctx, int64_t floats) {
  return ctx.rt.AllocateShared(static_cast<size_t>(std::max<int64_t>(1, floats)) * sizeof(float));
}

bool Wants(const OpContext& ctx, size_t output) {
  return output < ctx.outputs.size() && ctx.node.output(output) != nullptr;
}

template <Cell kCell>
absl::Status Recurrent(OpContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(Problem p, ReadProblem(ctx, kCell));
  const ClValue& x = ctx.input(kX);
  ClValue *y = nullptr, *y_h = nullptr, *y_c = nullptr;
  if (Wants(ctx, kY)) {
    OVFIX_ASSIGN_OR_RETURN(y, ctx.NewOutput(kY, x.type, p.y_dims()));
  }
  if (Wants(ctx, kYH)) {
    OVFIX_ASSIGN_OR_RETURN(y_h, ctx.NewOutput(kYH, x.type, p.state_dims()));
  }
  if (kCell == Cell::kLstm && Wants(ctx, kYC)) {
    OVFIX_ASSIGN_OR_RETURN(y_c, ctx.NewOutput(kYC, x.type, p.state_dims()));
  }
  if (p.batch == 0) return absl::OkStatus();
  const int64_t n = p.hidden, gh = p.gates() * n, dirs = p.num_directions;
  const int64_t rows = p.seq_length * p.batch;
  const bool two_phase = kCell == Cell::kGru && !p.linear_before_reset;

  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(kX));
  OVFIX_ASSIGN_OR_RETURN(auto dw, ctx.Device(kW));
  OVFIX_ASSIGN_OR_RETURN(auto dr, ctx.Device(kR));
  const bool has_bias = ctx.has_input(kB);
  const bool has_peephole = kCell == Cell::kLstm && ctx.has_input(kP);
  const bool has_initial_h = ctx.has_input(kInitialH);
  const bool has_initial_c = kCell == Cell::kLstm && ctx.has_input(kInitialC);
  // Any valid buffer for an absent input (the kernel is told not to read it).
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * db, ctx.DeviceOr(kB, dw));
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * dh0, ctx.DeviceOr(kInitialH, dx));
  cl::Buffer* dp = dw;
  cl::Buffer* dc0 = dx;
  if (has_peephole) {
    OVFIX_ASSIGN_OR_RETURN(dp, ctx.Device(kP));
  }
  if (has_initial_c) {
    OVFIX_ASSIGN_OR_RETURN(dc0, ctx.Device(kInitialC));
  }

  OVFIX_ASSIGN_OR_RETURN(auto x_parts, Scratch(ctx, dirs * rows * gh));
  OVFIX_ASSIGN_OR_RETURN(auto h0, Scratch(ctx, dirs * p.batch * n));
  OVFIX_ASSIGN_OR_RETURN(auto h1, Scratch(ctx, dirs * p.batch * n));
  OVFIX_ASSIGN_OR_RETURN(auto c, Scratch(ctx, dirs * p.batch * n));
  OVFIX_ASSIGN_OR_RETURN(auto gru_z, Scratch(ctx, two_phase ? dirs * p.batch * n : 1));
  OVFIX_ASSIGN_OR_RETURN(auto gru_rh, Scratch(ctx, two_phase ? dirs * p.batch * n : 1));
  OVFIX_ASSIGN_OR_RETURN(auto lengths, UploadVector(ctx, p.lengths));
  OVFIX_ASSIGN_OR_RETURN(auto kinds, UploadVector(ctx, p.activations.kinds));
  OVFIX_ASSIGN_OR_RETURN(auto alphas, UploadVector(ctx, p.activations.alphas));
  OVFIX_ASSIGN_OR_RETURN(auto betas, UploadVector(ctx, p.activations.betas));

  const ClValue* out = y != nullptr ? y : y_h != nullptr ? y_h : y_c;
  const ClValue* initial =
      has_initial_h ? &ctx.input(kInitialH) : (has_initial_c ? &ctx.input(kInitialC) : nullptr);
  const std::string base =
      ctx.Options({{"A", &x}, {"W", &ctx.input(kW)}, {"C", initial}, {"Y", out}},
                  absl::StrCat("-DCELL=", static_cast<int>(kCell)));
  const auto options = [&](int phase) { return absl::StrCat(base, " -DPHASE=", phase); };
  const int main_phase = two_phase ? 1 : 0;
  const cl_int batch = static_cast<cl_int>(p.batch), num_dirs = static_cast<cl_int>(dirs);
  const cl_int seq = static_cast<cl_int>(p.seq_length), batch_first = p.batch_first;
  const cl::NDRange units(static_cast<size_t>(n), static_cast<size_t>(p.batch),
                          static_cast<size_t>(dirs));

  OVFIX_ASSIGN_OR_RETURN(auto project,
                         ctx.Kernel("recurrent.cl", "input_projection", options(main_phase)));
  if (rows > 0) {
    const cl_int reset_bias_from =
        static_cast<cl_int>(kCell == Cell::kGru && p.linear_before_reset ? 2 * n : gh);
    OVFIX_RETURN_IF_ERROR(SetArgs(ctx, project, *dx, *dw, *db, cl_int{has_bias}, *x_parts,
                                  static_cast<cl_int>(rows), static_cast<cl_int>(gh),
                                  static_cast<cl_int>(p.input_size), reset_bias_from));
    OVFIX_RETURN_IF_ERROR(
        ctx.Run(project, cl::NDRange(static_cast<size_t>(gh), static_cast<size_t>(rows),
                                     static_cast<size_t>(dirs))));
  }
  OVFIX_ASSIGN_OR_RETURN(auto init, ctx.Kernel("recurrent.cl", "init_state", options(main_phase)));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, init, *dh0, cl_int{has_initial_h}, *dc0, cl_int{has_initial_c},
                                *h0, *c, num_dirs, batch, batch_first));
  OVFIX_RETURN_IF_ERROR(ctx.Run(init, units));
  const int32_t max_length = *std::max_element(p.lengths.begin(), p.lengths.end());
  const int32_t min_length = *std::min_element(p.lengths.begin(), p.lengths.end());
  if (y != nullptr && min_length < p.seq_length && y->numel() > 0) {
    // Steps past an entry's length stay zero.
    OVFIX_ASSIGN_OR_RETURN(auto zero, ctx.Kernel("recurrent.cl", "fill_zero", options(main_phase)));
    OVFIX_RETURN_IF_ERROR(SetArgs(ctx, zero, *y->device));
    OVFIX_RETURN_IF_ERROR(ctx.Run(zero, cl::NDRange(static_cast<size_t>(y->numel()))));
  }
  cl::Buffer* y_buffer = y != nullptr ? y->device.get() : x_parts.get();
  std::vector<int> phases = two_phase ? std::vector<int>{1, 2} : std::vector<int>{0};
  std::vector<cl::Kernel> steps;
  for (int phase : phases) {
    OVFIX_ASSIGN_OR_RETURN(auto k, ctx.Kernel("recurrent.cl", "recurrent_step", options(phase)));
    steps.push_back(k);
  }
  std::shared_ptr<cl::Buffer> h_in = h0, h_out = h1;
  for (int32_t s = 0; s < max_length; ++s) {
    for (cl::Kernel& k : steps) {
      OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *x_parts, *dr, *db, cl_int{has_bias}, *dp,
                                    cl_int{has_peephole}, *h_in, *h_out, *c, *gru_z, *gru_rh,
                                    *lengths, *y_buffer, cl_int{y != nullptr}, cl_int{s}, seq,
                                    batch, num_dirs, cl_int{p.reverse}, batch_first, p.clip,
                                    cl_int{p.input_forget}, *kinds, *alphas, *betas));
      OVFIX_RETURN_IF_ERROR(ctx.Run(k, units));
    }
    std::swap(h_in, h_out);
  }
  if (y_h != nullptr || y_c != nullptr) {
    OVFIX_ASSIGN_OR_RETURN(auto final_state,
                           ctx.Kernel("recurrent.cl", "final_state", options(main_phase)));
    cl::Buffer* yh = y_h != nullptr ? y_h->device.get() : y_buffer;
    cl::Buffer* yc = y_c != nullptr ? y_c->device.get() : y_buffer;
    OVFIX_RETURN_IF_ERROR(SetArgs(ctx, final_state, *h_in, *c, *lengths, *yh,
                                  cl_int{y_h != nullptr}, *yc, cl_int{y_c != nullptr}, num_dirs,
                                  batch, batch_first));
    OVFIX_RETURN_IF_ERROR(ctx.Run(final_state, units));
  }
  return absl::OkStatus();
}

}  // namespace

void AddRecurrentOps(std::vector<OpDef>& table) {
  table.push_back({"RNN", 7, kLatestOpset, Recurrent<Cell::kRnn>});
  table.push_back({"GRU", 7, kLatestOpset, Recurrent<Cell::kGru>});
  table.push_back({"LSTM", 7, kLatestOpset, Recurrent<Cell::kLstm>});
}

}  // namespace ovfix::exec::opencl
