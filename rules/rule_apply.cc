#include "rules/rule_apply.h"

#include <algorithm>
#include <optional>
#include <variant>

#include "absl/strings/str_cat.h"
#include "ir/constant.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"
#include "rules/op_versions.h"

namespace ovfix::rules {
namespace {

onnx::TypeProto TensorType(const Tensor& t) {
  onnx::TypeProto type;
  auto* tensor = type.mutable_tensor_type();
  tensor->set_elem_type(static_cast<int32_t>(t.type()));
  auto* shape = tensor->mutable_shape();
  for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  return type;
}

bool IsDead(const Node& n) {
  for (Value* out : n.outputs()) {
    if (out != nullptr && (out->has_uses() || out->is_graph_output())) return false;
  }
  // Subgraph bodies may read outer values; such nodes are left to dead-code removal.
  return n.subgraphs().empty();
}

// Why the rewrite would rename a graph input or output (Rewriter::GraphInterfaceConflict): a
// replacement output that is a bound value, not a new one, must be able to take the name of
// the pattern output it replaces. "" when it can.
std::string GraphInterfaceConflict(const Rule& rule, const Match& m,
                                   const std::map<std::string, HelperValue>& lets) {
  for (size_t j = 0; j < rule.replacement.outputs.size(); ++j) {
    const std::string& name = rule.replacement.outputs[j];
    const Value* to = nullptr;
    if (auto let = lets.find(name); let != lets.end()) {
      if (auto* v = std::get_if<Value*>(&let->second)) to = *v;
    } else if (auto bound = m.values.find(name); bound != m.values.end()) {
      to = bound->second;
    }
    auto from = m.values.find(rule.pattern.outputs[j]);
    if (to == nullptr || from == m.values.end()) continue;
    if (std::string why = Rewriter::GraphInterfaceConflict(from->second, to); !why.empty()) {
      return why;
    }
  }
  return "";
}

// Builds one match's replacement inside the open transaction.
class Instantiation {
 public:
  Instantiation(const Rule& rule, const RuleMatch& m, Rewriter& rewriter)
      : rule_(rule), m_(m), rw_(rewriter), g_(*m.match.root->owner()), root_(m.match.root) {
    base_ = root_->output(0) != nullptr ? root_->output(0)->name() : rule.name;
  }

  absl::Status Run();

 private:
  absl::StatusOr<std::vector<Value*>> Resolve(const std::string& name);
  absl::StatusOr<std::vector<Value*>> Materialize(const std::string& name, const HelperValue& v);
  Value* InPlace(const std::string& name, const ConstantInPlace& c);
  absl::Status AddNode(const TemplateNode& rn);
  // The matched node that replacement node `rn` rewrites: same op type, producing the same
  // pattern output at the same position. -1 when it is a new node.
  int RewrittenPatternNode(const TemplateNode& rn, const std::string& op_type) const;
  // A builder's argument as the attribute of the op's versions before it became an input.
  absl::StatusOr<onnx::AttributeProto> BuilderAttribute(const Builder& builder,
                                                        const std::string& name) const;

  const Rule& rule_;
  const RuleMatch& m_;
  Rewriter& rw_;
  Graph& g_;
  Node* root_;
  std::string base_;
  std::map<std::string, Value*> local_;                      // produced by the replacement
  std::map<std::string, std::vector<Value*>> materialized_;  // let values turned into inputs
};

int Instantiation::RewrittenPatternNode(const TemplateNode& rn, const std::string& op_type) const {
  const auto& outputs = rule_.replacement.outputs;
  for (size_t k = 0; k < rn.outputs.size(); ++k) {
    auto it = std::find(outputs.begin(), outputs.end(), rn.outputs[k]);
    if (it == outputs.end()) continue;
    const std::string& replaced = rule_.pattern.outputs[it - outputs.begin()];
    const auto [index, output] = rule_.pattern.producers.at(replaced);
    const TemplateNode& pn = rule_.pattern.nodes[index];
    if (output == static_cast<int>(k) && pn.op_type == op_type && pn.domain == rn.domain &&
        m_.match.nodes[index] != nullptr) {
      return index;
    }
  }
  return -1;
}

Value* Instantiation::InPlace(const std::string& name, const ConstantInPlace& c) {
  Value* source = c.source;
  // In place only when the one reader is a matched node this rewrite replaces entirely.
  bool only_reader = false;
  if (source->uses().size() == 1 && !source->is_graph_output() && !source->is_graph_input()) {
    Node* reader = source->uses()[0].node;
    const bool matched =
        std::find(m_.match.nodes.begin(), m_.match.nodes.end(), reader) != m_.match.nodes.end();
    bool replaced = true;
    for (Value* out : reader->outputs()) {
      if (out == nullptr || !out->has_uses()) continue;
      bool is_pattern_output = false;
      for (const auto& po : rule_.pattern.outputs)
        is_pattern_output |= m_.match.values.at(po) == out;
      replaced &= is_pattern_output;
    }
    only_reader = matched && replaced;
  }
  if (only_reader && source->is_initializer()) {
    rw_.SetInitializer(source, c.tensor);
    return source;
  }
  Node* constant = source->producer();
  if (only_reader && constant != nullptr && constant->op_type() == "Constant") {
    for (const char* kind : {"value_float", "value_floats", "value_int", "value_ints"}) {
      rw_.RemoveAttribute(constant, kind);
    }
    onnx::AttributeProto value;
    value.set_name("value");
    value.set_type(onnx::AttributeProto::TENSOR);
    *value.mutable_t() = TensorToProto(c.tensor);
    rw_.SetAttribute(constant, std::move(value));
    rw_.SetType(source, TensorType(c.tensor));
    return source;
  }
  return rw_.CreateInitializer(g_, g_.UniqueName(absl::StrCat(source->name(), "_", name)),
                               c.tensor);
}

absl::StatusOr<std::vector<Value*>> Instantiation::Materialize(const std::string& name,
                                                               const HelperValue& v) {
  auto initializer = [&](Tensor t) {
    return std::vector<Value*>{
        rw_.CreateInitializer(g_, g_.UniqueName(absl::StrCat(base_, "_", name)), std::move(t))};
  };
  if (auto* value = std::get_if<Value*>(&v)) return std::vector<Value*>{*value};
  if (auto* list = std::get_if<ValueList>(&v)) return *list;
  if (auto* t = std::get_if<Tensor>(&v)) return initializer(*t);
  if (auto* c = std::get_if<ConstantInPlace>(&v)) return std::vector<Value*>{InPlace(name, *c)};
  if (auto* ints = std::get_if<std::vector<int64_t>>(&v)) {
    return initializer(
        Tensor::FromVector<int64_t>(DataType::kInt64, {static_cast<int64_t>(ints->size())}, *ints));
  }
  if (auto* i = std::get_if<int64_t>(&v)) {
    return initializer(Tensor::FromVector<int64_t>(DataType::kInt64, {}, {*i}));
  }
  if (auto* d = std::get_if<double>(&v)) {
    return initializer(Tensor::FromVector<float>(DataType::kFloat, {}, {static_cast<float>(*d)}));
  }
  if (auto* b = std::get_if<bool>(&v)) {
    return initializer(
        Tensor::FromVector<uint8_t>(DataType::kBool, {}, {*b ? uint8_t{1} : uint8_t{0}}));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "rule ", rule_.name, ": '", name, "' (", DescribeHelperValue(v), ") cannot be a node input"));
}

absl::StatusOr<std::vector<Value*>> Instantiation::Resolve(const std::string& name) {
  if (name.empty()) return std::vector<Value*>{nullptr};
  if (auto it = local_.find(name); it != local_.end()) return std::vector<Value*>{it->second};
  if (auto it = m_.lets.find(name); it != m_.lets.end()) {
    auto done = materialized_.find(name);
    if (done != materialized_.end()) return done->second;
    OVFIX_ASSIGN_OR_RETURN(auto values, Materialize(name, it->second));
    materialized_[name] = values;
    return values;
  }
  if (auto it = m_.match.values.find(name); it != m_.match.values.end()) {
    return std::vector<Value*>{it->second};
  }
  if (auto it = m_.match.lists.find(name); it != m_.match.lists.end()) return it->second;
  return absl::InvalidArgumentError(
      absl::StrCat("rule ", rule_.name, ": '", name, "' is not bound"));
}

absl::StatusOr<onnx::AttributeProto> Instantiation::BuilderAttribute(
    const Builder& builder, const std::string& name) const {
  const std::string argument(builder.argument);
  Value* v = nullptr;
  if (auto let = m_.lets.find(name); let != m_.lets.end()) {
    if (std::holds_alternative<std::vector<int64_t>>(let->second)) {
      return ToAttribute(argument, let->second);
    }
    if (auto* one = std::get_if<int64_t>(&let->second)) {
      return ToAttribute(argument, std::vector<int64_t>{*one});
    }
    if (auto* value = std::get_if<Value*>(&let->second)) v = *value;
  } else if (auto bound = m_.match.values.find(name); bound != m_.match.values.end()) {
    v = bound->second;
  }
  if (v != nullptr && IsConstant(v)) {
    if (auto t = ConstantValue(v); t.ok() && IsInteger(t->type())) {
      onnx::AttributeProto a;
      a.set_name(argument);
      a.set_type(onnx::AttributeProto::INTS);
      for (int64_t i = 0; i < t->numel(); ++i) a.add_ints(t->GetAsInt64(i));
      return a;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("rule ", rule_.name, ": ", std::string(builder.name), " writes ",
                   std::string(builder.op_type), "<", argument, " = ...> before version ",
                   builder.input_since, ", and '", name,
                   "' is not a list of ints known when the rule applies (a let or a constant)"));
}

absl::Status Instantiation::AddNode(const TemplateNode& rn) {
  // A builder becomes its op, with its argument as input 1 or, in the op's versions before
  // that, as an attribute.
  std::string op_type = rn.op_type;
  std::vector<std::string> input_names = rn.inputs;
  std::optional<onnx::AttributeProto> builder_attribute;
  if (const Builder* builder = rn.domain.empty() ? FindBuilder(rn.op_type) : nullptr) {
    op_type = std::string(builder->op_type);
    // input_since is a version of the op, so the op's version reaches it exactly when the
    // opset does (also past the newest opset onnx knows).
    if (rw_.model().OpsetVersion("") < builder->input_since) {
      OVFIX_ASSIGN_OR_RETURN(auto attribute, BuilderAttribute(*builder, input_names[1]));
      builder_attribute = std::move(attribute);
      input_names.resize(1);
    }
  }
  std::vector<Value*> inputs;
  for (const auto& name : input_names) {
    OVFIX_ASSIGN_OR_RETURN(auto values, Resolve(name));
    inputs.insert(inputs.end(), values.begin(), values.end());
  }
  std::string node_name;
  std::vector<onnx::AttributeProto> attributes;
  if (const int index = RewrittenPatternNode(rn, op_type); index >= 0) {
    // The same node with new inputs: it keeps its name, its attributes, and its input order
    // (a commutative match may have bound the inputs swapped).
    const Node* old = m_.match.nodes[index];
    node_name = old->name();
    attributes = old->attributes();
    const std::vector<int>& order = m_.match.input_order[index];
    if (order.size() == inputs.size()) {
      std::vector<Value*> reordered(inputs.size());
      for (size_t i = 0; i < order.size(); ++i) reordered[order[i]] = inputs[i];
      inputs = std::move(reordered);
    }
  } else if (!root_->name().empty() && !rn.outputs.empty()) {
    node_name = absl::StrCat(root_->name(), "_", rn.outputs[0]);
  }
  for (const auto& a : rn.attributes) {
    std::erase_if(attributes, [&](const auto& old) { return old.name() == a.name(); });
    if (a.ref_attr_name().empty()) {
      attributes.push_back(a);
      continue;
    }
    const std::string& ref = a.ref_attr_name();
    if (auto it = m_.lets.find(ref); it != m_.lets.end()) {
      OVFIX_ASSIGN_OR_RETURN(auto attribute, ToAttribute(a.name(), it->second));
      attributes.push_back(std::move(attribute));
    } else if (auto captured = m_.match.attributes.find(ref);
               captured != m_.match.attributes.end()) {
      onnx::AttributeProto copy = captured->second;
      copy.set_name(a.name());
      attributes.push_back(std::move(copy));
    }
    // An attribute captured as absent stays absent.
  }
  if (builder_attribute) {
    std::erase_if(attributes,
                  [&](const auto& old) { return old.name() == builder_attribute->name(); });
    attributes.push_back(std::move(*builder_attribute));
  }
  std::vector<std::string> output_names;
  const auto& outputs = rule_.replacement.outputs;
  for (const auto& out : rn.outputs) {
    auto it = std::find(outputs.begin(), outputs.end(), out);
    if (it != outputs.end()) {
      output_names.push_back(
          m_.match.values.at(rule_.pattern.outputs[it - outputs.begin()])->name());
    } else {
      output_names.push_back(out.empty() ? "" : absl::StrCat(base_, "_", out));
    }
  }
  Node* n = rw_.CreateNode(g_, op_type, inputs, output_names, root_, node_name, rn.domain);
  for (auto& a : attributes) rw_.SetAttribute(n, std::move(a));
  for (size_t k = 0; k < rn.outputs.size(); ++k) {
    if (!rn.outputs[k].empty()) local_[rn.outputs[k]] = n->output(k);
  }
  return absl::OkStatus();
}

absl::Status Instantiation::Run() {
  for (const auto& rn : rule_.replacement.nodes) {
    OVFIX_RETURN_IF_ERROR(AddNode(rn));
  }
  for (size_t j = 0; j < rule_.replacement.outputs.size(); ++j) {
    OVFIX_ASSIGN_OR_RETURN(auto values, Resolve(rule_.replacement.outputs[j]));
    if (values.size() != 1 || values.front() == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("rule ", rule_.name, ": replacement output ", j, " is not one value"));
    }
    Value* old = m_.match.values.at(rule_.pattern.outputs[j]);
    Value* now = values.front();
    if (now == old) continue;
    // The replacement computes the same tensor: it has the type the old value had.
    if (now->producer() != nullptr && !now->is_tensor()) rw_.SetType(now, old->type());
    rw_.ReplaceAllUsesWith(old, now);
  }
  // Matched nodes nothing reads any more go, the root first so that its inputs free up.
  std::vector<Node*> matched;
  for (Node* n : m_.match.nodes) {
    if (n != nullptr && std::find(matched.begin(), matched.end(), n) == matched.end()) {
      matched.push_back(n);
    }
  }
  std::sort(matched.begin(), matched.end(),
            [](const Node* a, const Node* b) { return a->order() > b->order(); });
  // Then whatever fed only them (a Shape -> Gather -> Concat chain feeding a replaced
  // Reshape target): taken out here, the validator sees them and the commit has none left.
  std::vector<Node*> work = matched;
  std::vector<Node*> erased;
  while (!work.empty()) {
    Node* n = work.front();
    work.erase(work.begin());
    if (std::find(erased.begin(), erased.end(), n) != erased.end() || !IsDead(*n)) continue;
    rw_.EraseNode(n);
    erased.push_back(n);
    for (Value* in : n->inputs()) {
      if (in != nullptr && in->producer() != nullptr && in->owner() == &g_) {
        work.push_back(in->producer());
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<RuleMatch> MatchRule(const Rule& rule, Node* node, const HelperContext& helpers,
                                   std::string& why, bool explain) {
  for (const OpVersionRange& range : rule.versions) {
    const int version = OpVersion(helpers.model, range.domain, range.op_type);
    if (range.Contains(version)) continue;
    if (!explain) return std::nullopt;
    const int64_t opset = helpers.model.OpsetVersion(range.domain);
    why = version < 0 ? absl::StrCat(range.op_type, " does not exist at opset ", opset)
                      : absl::StrCat(range.op_type, " is version ", version, " at opset ", opset);
    absl::StrAppend(&why, "; the rule is for ", range.ToString());
    return std::nullopt;
  }
  HelperMemo memo;
  const HelperContext context{helpers.model, helpers.options, &memo};
  std::map<std::string, HelperValue> lets;
  AcceptFn accept = [&](const Match& m, std::string& reason) {
    lets.clear();
    NameLookup lookup = [&](const std::string& name) -> absl::StatusOr<HelperValue> {
      if (auto it = lets.find(name); it != lets.end()) return it->second;
      if (auto it = m.values.find(name); it != m.values.end()) return it->second;
      if (auto it = m.lists.find(name); it != m.lists.end()) return it->second;
      if (auto it = m.attributes.find(name); it != m.attributes.end()) {
        return FromAttribute(it->second);
      }
      return absl::FailedPreconditionError(absl::StrCat("'", name, "' is not bound (absent)"));
    };
    for (const Clause& clause : rule.clauses) {
      if (clause.kind == Clause::Kind::kWhere) {
        if (!EvaluateCondition(clause.expr, lookup, context, reason)) return false;
        continue;
      }
      auto value = Evaluate(clause.expr, lookup, context);
      if (!value.ok()) {
        reason =
            absl::StrCat("let ", clause.name, " = ", clause.text, ": ", value.status().message());
        return false;
      }
      lets[clause.name] = std::move(*value);
    }
    reason = GraphInterfaceConflict(rule, m, lets);
    return reason.empty();
  };
  auto match =
      MatchPattern(rule.pattern, node, accept, why, context.model.OpsetVersion(""), explain);
  if (!match) return std::nullopt;
  return RuleMatch{std::move(*match), std::move(lets)};
}

absl::StatusOr<bool> ApplyRule(const Rule& rule, const RuleMatch& match, PassContext& ctx) {
  // A replacement that gives back the matched values changes nothing.
  bool changes = !rule.replacement.nodes.empty();
  for (size_t j = 0; j < rule.replacement.outputs.size() && !changes; ++j) {
    auto it = match.match.values.find(rule.replacement.outputs[j]);
    changes = it == match.match.values.end() ||
              it->second != match.match.values.at(rule.pattern.outputs[j]);
  }
  if (!changes) return false;
  std::vector<Node*> matched;
  for (Node* n : match.match.nodes) {
    if (n != nullptr) matched.push_back(n);
  }
  std::sort(matched.begin(), matched.end(),
            [](const Node* a, const Node* b) { return a->order() < b->order(); });
  ctx.rewriter.Begin(rule.name, matched);
  Instantiation instantiation(rule, match, ctx.rewriter);
  if (absl::Status s = instantiation.Run(); !s.ok()) {
    ctx.rewriter.Rollback(std::string(s.message()));
    return s;
  }
  ctx.rewriter.TypesPreserved();
  return FinishRewrite(ctx);
}

}  // namespace ovfix::rules
