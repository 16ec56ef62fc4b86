#include "exec/cpu/recurrent_attributes.h"

namespace ovfix::exec {

int64_t GateCount(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::kRnn:
      return 1;
    case RecurrentCell::kGru:
      return 3;
    case RecurrentCell::kLstm:
      return 4;
  }
  return 0;
}

const std::vector<std::string>& DefaultActivations(RecurrentCell cell) {
  static const std::vector<std::string> kRnn = {"Tanh"};
  static const std::vector<std::string> kGru = {"Sigmoid", "Tanh"};
  static const std::vector<std::string> kLstm = {"Sigmoid", "Tanh", "Tanh"};
  return cell == RecurrentCell::kRnn ? kRnn : cell == RecurrentCell::kGru ? kGru : kLstm;
}

absl::StatusOr<RecurrentAttributes> ReadRecurrentAttributes(const KernelContext& ctx,
                                                            RecurrentCell cell,
                                                            const std::vector<int64_t>& x_dims,
                                                            const std::vector<int64_t>& r_dims) {
  RecurrentAttributes p;
  p.cell = cell;
  const std::string direction = ctx.node.GetString("direction", "forward");
  if (direction == "bidirectional") {
    p.num_directions = 2;
  } else if (direction == "reverse") {
    p.reverse = true;
  } else if (direction != "forward") {
    return ctx.Error("unknown direction '", direction, "'");
  }
  const int64_t layout = ctx.opset >= 14 ? ctx.node.GetInt("layout", 0) : 0;
  if (layout != 0 && layout != 1) return ctx.Error("layout must be 0 or 1, got ", layout);
  p.batch_first = layout == 1;
  p.seq_length = x_dims[p.batch_first ? 1 : 0];
  p.batch = x_dims[p.batch_first ? 0 : 1];
  p.input_size = x_dims[2];
  p.hidden = ctx.node.GetInt("hidden_size", r_dims[2]);
  if (p.hidden <= 0) return ctx.Error("hidden_size must be positive, got ", p.hidden);
  if (cell == RecurrentCell::kGru) {
    p.linear_before_reset = ctx.node.GetInt("linear_before_reset", 0) != 0;
  }
  if (cell == RecurrentCell::kLstm) p.input_forget = ctx.node.GetInt("input_forget", 0) != 0;
  if (ctx.node.HasAttribute("clip")) {
    p.clip = ctx.node.GetFloat("clip", 0.0f);
    if (!(p.clip > 0)) return ctx.Error("clip must be positive, got ", p.clip);
  }
  return p;
}

}  // namespace ovfix::exec
