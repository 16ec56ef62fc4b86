#include "exec/cpu/recurrent_attributes.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/match.h"

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

namespace {

struct ActivationSpec {
  const char* name;
  ActivationKind kind;
  bool takes_alpha, takes_beta;
  float default_alpha, default_beta;
};

constexpr ActivationSpec kActivationSpecs[] = {
    {"Relu", ActivationKind::kRelu, false, false, 0.0f, 0.0f},
    {"Tanh", ActivationKind::kTanh, false, false, 0.0f, 0.0f},
    {"Sigmoid", ActivationKind::kSigmoid, false, false, 0.0f, 0.0f},
    {"Affine", ActivationKind::kAffine, true, true, 1.0f, 0.0f},
    {"LeakyRelu", ActivationKind::kLeakyRelu, true, false, 0.01f, 0.0f},
    {"ThresholdedRelu", ActivationKind::kThresholdedRelu, true, false, 1.0f, 0.0f},
    {"ScaledTanh", ActivationKind::kScaledTanh, true, true, 1.0f, 1.0f},
    {"HardSigmoid", ActivationKind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"Elu", ActivationKind::kElu, true, false, 1.0f, 0.0f},
    {"Softsign", ActivationKind::kSoftsign, false, false, 0.0f, 0.0f},
    {"Softplus", ActivationKind::kSoftplus, false, false, 0.0f, 0.0f},
};

}  // namespace

absl::StatusOr<std::vector<RecurrentActivation>> ReadRecurrentActivations(const KernelContext& ctx,
                                                                          RecurrentCell cell,
                                                                          int64_t num_directions) {
  const std::vector<std::string>& defaults = DefaultActivations(cell);
  std::vector<std::string> names = ctx.node.GetStrings("activations");
  if (names.empty()) {
    for (int64_t d = 0; d < num_directions; ++d) {
      names.insert(names.end(), defaults.begin(), defaults.end());
    }
  }
  const size_t expected = defaults.size() * static_cast<size_t>(num_directions);
  if (names.size() != expected) {
    return ctx.Error("activations lists ", names.size(), " functions, expected ", expected);
  }
  const std::vector<float> alphas = ctx.node.GetFloats("activation_alpha");
  const std::vector<float> betas = ctx.node.GetFloats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<RecurrentActivation> activations;
  for (const std::string& name : names) {
    const auto* spec =
        std::find_if(std::begin(kActivationSpecs), std::end(kActivationSpecs),
                     [&](const ActivationSpec& s) { return absl::EqualsIgnoreCase(s.name, name); });
    if (spec == std::end(kActivationSpecs)) return ctx.Error("unknown activation '", name, "'");
    RecurrentActivation activation{spec->kind, spec->default_alpha, spec->default_beta};
    if (spec->takes_alpha && next_alpha < alphas.size()) activation.alpha = alphas[next_alpha++];
    if (spec->takes_beta && next_beta < betas.size()) activation.beta = betas[next_beta++];
    activations.push_back(activation);
  }
  return activations;
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

absl::StatusOr<std::vector<int64_t>> ReadSequenceLengths(const KernelContext& ctx,
                                                         const Tensor* lens,
                                                         const RecurrentAttributes& p) {
  std::vector<int64_t> lengths(p.batch, p.seq_length);
  if (lens == nullptr) return lengths;
  if ((lens->type() != DataType::kInt32 && lens->type() != DataType::kInt64) ||
      lens->dims() != std::vector<int64_t>{p.batch}) {
    return ctx.Error("sequence_lens is ", DescribeTensor(*lens), ", expected int32[", p.batch, "]");
  }
  for (int64_t b = 0; b < p.batch; ++b) {
    lengths[b] = lens->GetAsInt64(b);
    if (lengths[b] < 0 || lengths[b] > p.seq_length) {
      return ctx.Error("sequence_lens[", b, "] is ", lengths[b], ", outside [0, ", p.seq_length,
                       "]");
    }
  }
  return lengths;
}

}  // namespace ovfix::exec
