#include "rules/passes/lower_conv3d_unit_kernel.h"

#include "absl/strings/str_cat.h"
#include "ir/graph_walk.h"
#include "onnx/defs/attr_proto_util.h"

namespace ovfix::rules {
namespace {

struct Plan {
  int unit = -1;           // spatial index (0..2) of the unit kernel dim
  std::vector<int64_t> x;  // input dims [N, C, D1, D2, D3]
  std::vector<int64_t> kernel, pads, strides, dilations;  // the 3-D attributes
  std::vector<int64_t> out;                               // output dims [N, M, O1, O2, O3]
};

// Why `n` cannot be lowered, or "" with `plan` filled.
std::string Check(const Node& n, Plan& plan) {
  if (n.op_type() != "Conv" || !n.domain().empty()) return "not a Conv";
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  std::optional<std::vector<int64_t>> xs = x ? x->static_shape() : std::nullopt;
  if (!xs || xs->size() != 5) return "input is not a 5-D tensor of known shape";
  if (w == nullptr || !w->is_initializer() || w->tensor().rank() != 5) {
    return "weight is not a 5-D constant";
  }
  if (n.GetString("auto_pad", "NOTSET") != "NOTSET") return "auto_pad is set (normalize first)";
  const Tensor& wt = w->tensor();
  plan.x = *xs;
  plan.kernel = {wt.dim(2), wt.dim(3), wt.dim(4)};
  plan.pads = n.GetInts("pads", {0, 0, 0, 0, 0, 0});
  plan.strides = n.GetInts("strides", {1, 1, 1});
  plan.dilations = n.GetInts("dilations", {1, 1, 1});
  if (plan.pads.size() != 6 || plan.strides.size() != 3 || plan.dilations.size() != 3) {
    return "pads/strides/dilations do not have 3-D sizes";
  }
  for (int d = 2; d >= 0; --d) {
    if (plan.kernel[d] == 1 && plan.pads[d] == 0 && plan.pads[d + 3] == 0 && plan.strides[d] == 1) {
      plan.unit = d;
      break;
    }
  }
  if (plan.unit < 0) return "no kernel dim of size 1 with zero pads and stride 1";
  plan.out = {plan.x[0], wt.dim(0)};
  for (int d = 0; d < 3; ++d) {
    const int64_t span = plan.dilations[d] * (plan.kernel[d] - 1) + 1;
    const int64_t padded = plan.x[2 + d] + plan.pads[d] + plan.pads[d + 3];
    if (padded < span || plan.strides[d] <= 0) return "kernel larger than the padded input";
    plan.out.push_back((padded - span) / plan.strides[d] + 1);
  }
  return "";
}

Tensor Ints(const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>(DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
}

// The 2-D list of a 3-D attribute without spatial dim `unit`.
std::vector<int64_t> Drop(const std::vector<int64_t>& v, int unit) {
  std::vector<int64_t> out;
  for (int d = 0; d < 3; ++d) {
    if (d != unit) out.push_back(v[d]);
  }
  return out;
}

void Lower(PassContext& ctx, Node* conv, const Plan& p) {
  Rewriter& r = ctx.rewriter;
  Graph& g = *conv->owner();
  const std::string base = conv->name().empty() ? conv->output(0)->name() : conv->name();
  const int u = p.unit;
  const int64_t n = p.x[0], c = p.x[1], du = p.x[2 + u];
  // x: [N, C, S0, S1, S2] -> [N, Du, C, Sa, Sb] -> [N*Du, C, Sa, Sb]
  std::vector<int64_t> perm = {0, 2 + u, 1};
  std::vector<int64_t> rest_in, rest_out;
  for (int d = 0; d < 3; ++d) {
    if (d == u) continue;
    perm.push_back(2 + d);
    rest_in.push_back(p.x[2 + d]);
    rest_out.push_back(p.out[2 + d]);
  }
  Node* t1 = r.CreateNode(g, "Transpose", {conv->input(0)}, {base + "/unit_kernel_transpose"}, conv,
                          base + "/unit_kernel_transpose");
  r.SetAttribute(t1, onnx::MakeAttribute("perm", perm));
  Value* shape_in = r.CreateInitializer(g, base + "/unit_kernel_shape_in",
                                        Ints({n * du, c, rest_in[0], rest_in[1]}));
  Node* r1 = r.CreateNode(g, "Reshape", {t1->output(0), shape_in}, {base + "/unit_kernel_reshape"},
                          conv, base + "/unit_kernel_reshape");
  // The weight without its unit dim.
  const Tensor& wt = conv->input(1)->tensor();
  const std::vector<int64_t> kernel2 = Drop(p.kernel, u);
  Value* w2 = r.CreateInitializer(g, conv->input(1)->name() + "_2d",
                                  wt.Reshaped({wt.dim(0), wt.dim(1), kernel2[0], kernel2[1]}));
  std::vector<Value*> conv_inputs = {r1->output(0), w2};
  if (conv->input(2) != nullptr) conv_inputs.push_back(conv->input(2));
  Node* conv2 = r.CreateNode(g, "Conv", conv_inputs, {base + "/unit_kernel_conv2d"}, conv,
                             base + "/unit_kernel_conv2d");
  const std::vector<int64_t> pads_begin = Drop({p.pads[0], p.pads[1], p.pads[2]}, u);
  const std::vector<int64_t> pads_end = Drop({p.pads[3], p.pads[4], p.pads[5]}, u);
  r.SetAttribute(conv2, onnx::MakeAttribute("kernel_shape", kernel2));
  r.SetAttribute(conv2,
                 onnx::MakeAttribute("pads", std::vector<int64_t>{pads_begin[0], pads_begin[1],
                                                                  pads_end[0], pads_end[1]}));
  r.SetAttribute(conv2, onnx::MakeAttribute("strides", Drop(p.strides, u)));
  r.SetAttribute(conv2, onnx::MakeAttribute("dilations", Drop(p.dilations, u)));
  r.SetAttribute(conv2, onnx::MakeAttribute("group", conv->GetInt("group", 1)));
  // [N*Du, M, Oa, Ob] -> [N, Du, M, Oa, Ob] -> [N, M, O0, O1, O2]
  const int64_t m = p.out[1];
  Value* shape_out = r.CreateInitializer(g, base + "/unit_kernel_shape_out",
                                         Ints({n, du, m, rest_out[0], rest_out[1]}));
  Node* r2 = r.CreateNode(g, "Reshape", {conv2->output(0), shape_out},
                          {base + "/unit_kernel_unreshape"}, conv, base + "/unit_kernel_unreshape");
  // Where each output axis comes from in [N, Du, M, Oa, Ob].
  std::vector<int64_t> back = {0, 2};
  int next_rest = 3;
  for (int d = 0; d < 3; ++d) back.push_back(d == u ? 1 : next_rest++);
  Node* t2 = r.CreateNode(g, "Transpose", {r2->output(0)}, {base + "/unit_kernel_untranspose"},
                          conv, base + "/unit_kernel_untranspose");
  r.SetAttribute(t2, onnx::MakeAttribute("perm", back));
  r.ReplaceAllUsesWith(conv->output(0), t2->output(0));
  r.EraseNode(conv);
}

}  // namespace

absl::StatusOr<int> LowerConv3dUnitKernel(PassContext& ctx) {
  // Runs only when the option asks for it: the pass manager decides (converter/pass_manager.cc).
  int lowered = 0;
  VisitGraphs(ctx.model.graph(), [&](Graph& g) {
    for (Node* n : g.NodeList()) {
      if (n->op_type() != "Conv") continue;
      Plan plan;
      if (std::string why = Check(*n, plan); !why.empty()) {
        if (n->input(0) != nullptr && n->input(0)->rank() == 5) {
          ctx.log(absl::StrCat(kLowerConv3dUnitKernel, ": ", n->Describe(), " not lowered: ", why));
        }
        continue;
      }
      ctx.rewriter.Begin(kLowerConv3dUnitKernel, {n});
      Lower(ctx, n, plan);
      if (FinishRewrite(ctx)) ++lowered;
    }
    return absl::OkStatus();
  });
  return lowered;
}

}  // namespace ovfix::rules
