#include "converter/session_nhwc.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "converter/session_graph.h"
#include "exec/cpu/conv_nhwc.h"
#include "exec/plan_fusion.h"
#include "onnx/defs/attr_proto_util.h"

namespace ovfix::converter {
namespace {

bool IsDefaultDomain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

// Element-wise ops whose output element i depends on element i of each input alone (with
// inputs of one shape): they run on channels-last values as on planes.
bool IsElementwise(const Node& n) {
  if (!IsDefaultDomain(n)) return false;
  static const auto* ops = new absl::flat_hash_set<std::string_view>{
      "Relu", "Clip",     "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "Elu",
      "Selu", "Softplus", "Erf",     "Abs",  "Neg",         "Exp",       "Sqrt",      "Identity",
      "Add",  "Sub",      "Mul",     "Div",  "Max",         "Min",       "Sum"};
  return ops->contains(n.op_type());
}

// The static shape of a float value (an initializer's dims), when known.
std::optional<std::vector<int64_t>> FloatShape(const Value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_initializer()) {
    if (v->tensor().type() != DataType::kFloat) return std::nullopt;
    return v->tensor().dims();
  }
  if (v->elem_type() != DataType::kFloat) return std::nullopt;
  return v->static_shape();
}

bool IsConstant(const Value* v) {
  return v != nullptr && v->is_initializer() && !v->is_graph_input();
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// How a node of a region reads one of its inputs.
enum class Read {
  kAsIs,           // no layout: omitted, one element, or a Conv's weights and bias
  kTensor,         // NCHW, the output's shape: read channels-last
  kChannelVector,  // [N or 1, C, 1, 1] or [C, 1, 1]: per channel, read as [.., 1, 1, C]
};

// Whether `dims` broadcast against the NCHW `out` as a vector along its channels.
bool IsChannelVector(const std::vector<int64_t>& dims, const std::vector<int64_t>& out) {
  if (dims.size() == 4) {
    return (dims[0] == 1 || dims[0] == out[0]) && dims[1] == out[1] && dims[2] == 1 && dims[3] == 1;
  }
  return dims.size() == 3 && dims[0] == out[1] && dims[1] == 1 && dims[2] == 1;
}

// What a node of a region is.
// A Transpose to channels-last of a region's value (ConvNeXt's permute before its LayerNorm)
// is the region's value itself, and a Transpose from channels-last that the region reads (the
// permute back) reads as its input: the graph's own layout changes go with the region's.
enum class Role {
  kNone,
  kConv,
  kElementwise,
  kConcat,  // along the channels: along the last axis channels-last
  kPool,
  kToChannelsLast,
  kFromChannelsLast
};

// Whether `n` is a Transpose by `perm` of a 4-D float tensor.
bool IsTransposeBy(const Node& n, const std::vector<int64_t>& perm) {
  if (!IsDefaultDomain(n) || n.op_type() != "Transpose" || !n.HasAttribute("perm") ||
      n.GetInts("perm") != perm) {
    return false;
  }
  const std::optional<std::vector<int64_t>> x = FloatShape(n.input(0));
  return x && x->size() == 4;
}

// Whether `conv` reads a BatchNormalization that the session's plan folds into it.
bool ReadsFoldedBatchNorm(const Node& conv, int opset) {
  const Value* x = conv.input(0);
  for (int hops = 0; hops < 2 && x != nullptr; ++hops) {
    const Node* p = x->producer();
    if (p == nullptr) return false;
    const std::optional<exec::ConsumerFusion> f = exec::FusionIntoConsumer(*p, opset);
    if (f && f->consumer == &conv) return true;
    x = p->num_inputs() > 0 ? p->input(0) : nullptr;
  }
  return false;
}

// A node that may join a region, with how it reads its inputs and, for a Conv, the path the
// Conv kernel takes.
struct Candidate {
  Role role = Role::kNone;
  std::vector<Read> reads;
  exec::ConvPath path = exec::ConvPath::kPointwise;
};

Candidate CandidateOf(const Node& n, const Graph& g, int opset) {
  Candidate c;
  if (n.owner() != &g || n.num_outputs() != 1 || n.output(0) == nullptr) return c;
  const std::optional<std::vector<int64_t>> out = FloatShape(n.output(0));
  if (!out || out->size() != 4) return c;
  c.reads.assign(n.num_inputs(), Read::kAsIs);
  if (IsDefaultDomain(n) && n.op_type() == "Conv") {
    const std::optional<std::vector<int64_t>> x = FloatShape(n.input(0));
    const Value* w = n.input(1);
    if (!x || x->size() != 4 || !IsConstant(w) || w->tensor().type() != DataType::kFloat ||
        (n.num_inputs() > 2 && n.input(2) != nullptr && !IsConstant(n.input(2))) ||
        ReadsFoldedBatchNorm(n, opset)) {
      return c;
    }
    const std::optional<exec::ConvPath> path = exec::NhwcConvPath(n, opset, *x, w->tensor().dims());
    if (!path) return c;
    c.role = Role::kConv;
    c.path = *path;
    c.reads[0] = Read::kTensor;
    return c;
  }
  if (IsTransposeBy(n, {0, 2, 3, 1})) {
    c.role = Role::kToChannelsLast;
    c.reads[0] = Read::kTensor;
    return c;
  }
  if (IsTransposeBy(n, {0, 3, 1, 2})) {
    c.role = Role::kFromChannelsLast;  // its input is read as it is
    return c;
  }
  if (IsDefaultDomain(n) && n.op_type() == "Concat" && n.num_inputs() > 0 &&
      (n.GetInt("axis", 0) == 1 || n.GetInt("axis", 0) == -3)) {
    for (size_t i = 0; i < n.num_inputs(); ++i) {
      const std::optional<std::vector<int64_t>> x = FloatShape(n.input(i));
      if (!x || x->size() != 4) return c;
      c.reads[i] = Read::kTensor;
    }
    c.role = Role::kConcat;
    return c;
  }
  if (IsDefaultDomain(n) && n.op_type() == "GlobalAveragePool") {
    const std::optional<std::vector<int64_t>> x = FloatShape(n.input(0));
    if (!x || x->size() != 4) return c;
    c.role = Role::kPool;
    c.reads[0] = Read::kTensor;
    return c;
  }
  if (!IsElementwise(n)) return c;
  bool any_tensor = false;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    const Value* v = n.input(i);
    if (v == nullptr) continue;
    const std::optional<std::vector<int64_t>> dims = FloatShape(v);
    if (!dims || dims->size() > 4) return c;
    if (Product(*dims) == 1) continue;
    if (*dims == *out) {
      c.reads[i] = Read::kTensor;
      any_tensor = true;
    } else if (IsChannelVector(*dims, *out)) {
      c.reads[i] = Read::kChannelVector;
    } else {
      return c;
    }
  }
  if (any_tensor) c.role = Role::kElementwise;
  return c;
}

int64_t Elements(const Value* v) { return Product(*FloatShape(v)); }

onnx::TypeProto FloatTensorType(const std::vector<int64_t>& dims) {
  onnx::TypeProto type;
  auto* tensor = type.mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  return type;
}

// The permutation that reads an NCHW tensor, or a channel vector of rank 3 or 4, channels-last.
std::vector<int64_t> ChannelsLastPerm(size_t rank) {
  return rank == 3 ? std::vector<int64_t>{1, 2, 0} : std::vector<int64_t>{0, 2, 3, 1};
}

std::vector<int64_t> Permuted(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(dims[p]);
  return out;
}

// What the Conv kernel moves on a path that ovfix.fused.NhwcConv does not: a pointwise
// product packs its input (as B; transposed: as A, then transposes the product back), the
// channels-last and Winograd paths copy their input channels-last and transpose their product
// back, and the depthwise kernel reads a plane a channel where the channels-last one reads
// vectors of channels (measured 0.6-0.9x its time: counted as a pass over its output). In
// floats, as the Transposes at a region's ends are counted: each of these passes costs about
// what a Transpose of the same floats does (both an AVX2 8x8 register transposition a block,
// or a copy).
int64_t SavedByChannelsLast(exec::ConvPath path, int64_t in, int64_t out) {
  switch (path) {
    case exec::ConvPath::kPointwise:
      return in;
    case exec::ConvPath::kPointwiseTransposed:
    case exec::ConvPath::kChannelsLast:
    case exec::ConvPath::kWinograd:
      return in + out;
    case exec::ConvPath::kDepthwise:
      return out;
    default:
      return 0;
  }
}

// Whether a node of a region makes a value of the region (channels-last).
bool MakesChannelsLastValue(Role role) {
  return role == Role::kConv || role == Role::kElementwise || role == Role::kConcat ||
         role == Role::kFromChannelsLast;
}

// The nodes of one region, in graph order, and what crosses its border.
struct Region {
  std::vector<Node*> nodes;
  int64_t saved_elements = 0;
  int64_t transposed_elements = 0;
};

// Whether value `v` (made by a node of the region) is read outside it.
bool ReadOutside(const Value* v, const absl::flat_hash_set<const Node*>& inside) {
  if (v->is_graph_output()) return true;
  for (const Use& use : v->uses()) {
    if (!inside.contains(use.node)) return true;
  }
  return false;
}

}  // namespace

bool KeepsChannelsLast(int64_t saved_elements, int64_t transposed_elements) {
  return transposed_elements < saved_elements;
}

absl::StatusOr<int> KeepChannelsLast(rules::PassContext& ctx) {
  Graph& g = ctx.model.graph();
  rules::Rewriter& r = ctx.rewriter;
  const int opset = static_cast<int>(ctx.model.OpsetVersion(""));
  const std::vector<Node*> order = g.NodeList();

  absl::flat_hash_map<const Node*, Candidate> candidates;
  for (Node* n : order) {
    Candidate c = CandidateOf(*n, g, opset);
    if (c.role != Role::kNone) candidates.emplace(n, std::move(c));
  }
  // Regions: nodes joined by the values one makes and another reads as a tensor (a pool or a
  // Transpose to channels-last makes no channels-last value: it joins the region of its input
  // alone), and by the values they read.
  absl::flat_hash_map<const Node*, const Node*> parent;
  auto find = [&](const Node* n) {
    while (parent.at(n) != n) n = parent[n] = parent.at(parent.at(n));
    return n;
  };
  for (const auto& [n, c] : candidates) parent[n] = n;
  for (const auto& [n, c] : candidates) {
    if (!MakesChannelsLastValue(c.role)) continue;
    for (const Use& use : n->output(0)->uses()) {
      auto it = candidates.find(use.node);
      if (it == candidates.end() || it->second.reads[use.input_index] != Read::kTensor) continue;
      parent[find(use.node)] = find(n);
    }
  }
  // Readers of one value from outside share its Transpose: one region.
  absl::flat_hash_map<const Value*, const Node*> first_reader;
  for (const auto& [n, c] : candidates) {
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      if (c.reads[i] != Read::kTensor) continue;
      auto [it, fresh] = first_reader.try_emplace(n->input(i), n);
      if (!fresh) parent[find(n)] = find(it->second);
    }
  }
  absl::flat_hash_map<const Node*, Region> regions;
  for (Node* n : order) {
    if (candidates.contains(n)) regions[find(n)].nodes.push_back(n);
  }

  int changed = 0;
  for (auto& [root, region] : regions) {
    const absl::flat_hash_set<const Node*> inside(region.nodes.begin(), region.nodes.end());
    // What the region's convolutions save, and what its ends transpose: each value that comes
    // in from NCHW once, each that leaves once.
    absl::flat_hash_set<const Value*> entering;
    for (const Node* n : region.nodes) {
      const Candidate& c = candidates.at(n);
      for (size_t i = 0; i < n->num_inputs(); ++i) {
        const Value* v = n->input(i);
        if (c.reads[i] == Read::kAsIs) continue;
        const Node* p = v->producer();
        if (p == nullptr || !inside.contains(p) || !MakesChannelsLastValue(candidates.at(p).role)) {
          if (entering.insert(v).second) region.transposed_elements += Elements(v);
        }
      }
      const bool leaves = ReadOutside(n->output(0), inside);
      switch (c.role) {
        case Role::kConv:
          region.saved_elements +=
              SavedByChannelsLast(c.path, Elements(n->input(0)), Elements(n->output(0)));
          break;
        case Role::kToChannelsLast:
          region.saved_elements += Elements(n->output(0));  // no longer transposed
          break;
        case Role::kFromChannelsLast:
          if (!leaves) region.saved_elements += Elements(n->output(0));  // else it stays
          break;
        case Role::kConcat:
          // The session makes an NCHW Concat's inputs in place in its output; channels-last
          // the pixels interleave, so they are copied.
          region.transposed_elements += Elements(n->output(0));
          break;
        default:
          break;
      }
      if (leaves && MakesChannelsLastValue(c.role) && c.role != Role::kFromChannelsLast) {
        region.transposed_elements += Elements(n->output(0));
      }
    }
    if (!KeepsChannelsLast(region.saved_elements, region.transposed_elements)) continue;

    // What each node reads and whether its value leaves the region, as written: the rewrite
    // below rewires the readers of a value that leaves.
    std::vector<std::vector<Value*>> reads;
    std::vector<bool> leaves;
    for (const Node* n : region.nodes) {
      reads.push_back(n->inputs());
      leaves.push_back(ReadOutside(n->output(0), inside));
    }
    // Residual Adds that fold into the convolution making one of their operands (its output
    // read by the Add alone): the convolution adds the other operand once its bias is added
    // (NhwcConv's fourth input), so the Relu after the Add folds into it too. By index in the
    // region: the Add's, the Conv's and which input of the Add is the residual.
    struct Fold {
      size_t conv = 0;
      size_t residual = 0;
    };
    absl::flat_hash_map<size_t, Fold> folds;
    absl::flat_hash_set<size_t> folded_convs;
    absl::flat_hash_map<const Node*, size_t> index;
    for (size_t k = 0; k < region.nodes.size(); ++k) index[region.nodes[k]] = k;
    for (size_t k = 0; k < region.nodes.size(); ++k) {
      const Node* add = region.nodes[k];
      if (!IsDefaultDomain(*add) || add->op_type() != "Add" || add->num_inputs() != 2 ||
          candidates.at(add).reads != std::vector<Read>{Read::kTensor, Read::kTensor} ||
          add->input(0) == add->input(1)) {
        continue;
      }
      for (size_t side = 0; side < 2; ++side) {
        const Value* v = add->input(side);
        const Node* conv = v->producer();
        if (conv == nullptr || !inside.contains(conv) || v->uses().size() != 1 ||
            v->is_graph_output() || conv->num_inputs() > 3) {
          continue;
        }
        const Candidate& c = candidates.at(conv);
        if (c.role != Role::kConv || c.path == exec::ConvPath::kDepthwise ||
            folded_convs.contains(index.at(conv))) {
          continue;
        }
        folds[k] = {index.at(conv), 1 - side};
        folded_convs.insert(index.at(conv));
        break;
      }
    }
    r.Begin(kKeepChannelsLast, region.nodes);
    // Each value of the region as it is channels-last.
    absl::flat_hash_map<const Value*, Value*> nhwc;
    auto channels_last = [&](Value* v, Node* before) {
      auto it = nhwc.find(v);
      if (it != nhwc.end()) return it->second;
      const std::vector<int64_t> dims = *FloatShape(v);
      const std::vector<int64_t> perm = ChannelsLastPerm(dims.size());
      Node* t = r.CreateNode(g, "Transpose", {v}, {r.UniqueName(v->name() + "_nhwc")}, before);
      r.SetAttribute(t, onnx::MakeAttribute("perm", perm));
      r.SetType(t->output(0), FloatTensorType(Permuted(dims, perm)));
      return nhwc[v] = t->output(0);
    };
    absl::flat_hash_set<size_t> kept;  // Transposes from channels-last also read outside
    for (size_t k = 0; k < region.nodes.size(); ++k) {
      if (folded_convs.contains(k)) continue;  // made where its Add is
      Node* n = region.nodes[k];
      if (candidates.at(n).role == Role::kToChannelsLast) {
        r.ReplaceAllUsesWith(n->output(0), channels_last(reads[k][0], n));
        continue;
      }
      if (candidates.at(n).role == Role::kFromChannelsLast) {
        nhwc[n->output(0)] = reads[k][0];
        if (leaves[k]) kept.insert(k);
        continue;
      }
      // The node whose computation makes n's value: n, or the Conv whose Add n is.
      auto fold = folds.find(k);
      const size_t source = fold != folds.end() ? fold->second.conv : k;
      const Node* computing = region.nodes[source];
      const Candidate& c = candidates.at(computing);
      std::vector<Value*> inputs = reads[source];
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (c.reads[i] != Read::kAsIs) inputs[i] = channels_last(inputs[i], n);
      }
      if (fold != folds.end()) {
        inputs.resize(3, nullptr);
        inputs.push_back(channels_last(reads[k][fold->second.residual], n));
      }
      Value* y = n->output(0);
      const std::string_view op = c.role == Role::kConv   ? "NhwcConv"
                                  : c.role == Role::kPool ? "NhwcGlobalAveragePool"
                                                          : std::string_view(n->op_type());
      const std::string domain =
          c.role == Role::kElementwise || c.role == Role::kConcat ? n->domain() : kFusedDomain;
      Node* m = r.CreateNode(
          g, op, inputs, {r.UniqueName(y->name() + (c.role == Role::kPool ? "_pool" : "_nhwc"))}, n,
          computing->name(), domain);
      for (const onnx::AttributeProto& a : computing->attributes()) r.SetAttribute(m, a);
      if (c.role == Role::kConcat) r.SetAttribute(m, onnx::MakeAttribute("axis", int64_t{3}));
      if (c.role == Role::kPool) {
        r.SetType(m->output(0), y->type());
        r.ReplaceAllUsesWith(y, m->output(0));
        continue;
      }
      r.SetType(m->output(0), FloatTensorType(Permuted(*FloatShape(y), ChannelsLastPerm(4))));
      nhwc[y] = m->output(0);
      if (leaves[k]) {
        Node* back =
            r.CreateNode(g, "Transpose", {m->output(0)}, {r.UniqueName(y->name() + "_nchw")}, n);
        r.SetAttribute(back, onnx::MakeAttribute("perm", std::vector<int64_t>{0, 3, 1, 2}));
        r.SetType(back->output(0), y->type());
        r.ReplaceAllUsesWith(y, back->output(0));
      }
    }
    for (size_t k = region.nodes.size(); k-- > 0;) {
      if (kept.contains(k)) continue;
      r.EraseNode(region.nodes[k]);
      for (Value* v : reads[k]) r.ConsiderDead(v);
    }
    if (rules::FinishRewrite(ctx)) ++changed;
  }
  return changed;
}

}  // namespace ovfix::converter
