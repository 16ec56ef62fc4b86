#include "rules/matcher.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/constant.h"
#include "ir/op_schemas.h"
#include "ir/tensor_proto.h"
#include "onnx/defs/schema.h"

namespace ovfix::rules {
namespace {

// Commutative nodes with many inputs would make the orders explode; this bounds the search.
constexpr size_t kMaxOrders = 720;

struct Task {
  std::string name;  // pattern value
  Value* value;      // model value it must match
};

struct State {
  Match match;
  std::map<std::string, int64_t> symbols;  // dim symbols of declarations
};

bool IsDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

std::string Quote(const Value* v) { return absl::StrCat("'", v->name(), "'"); }

bool SameAttributeValue(const onnx::AttributeProto& a, const onnx::AttributeProto& b) {
  using A = onnx::AttributeProto;
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case A::INT:
      return a.i() == b.i();
    case A::FLOAT:
      return a.f() == b.f();
    case A::STRING:
      return a.s() == b.s();
    case A::INTS:
      return std::equal(a.ints().begin(), a.ints().end(), b.ints().begin(), b.ints().end());
    case A::FLOATS:
      return std::equal(a.floats().begin(), a.floats().end(), b.floats().begin(), b.floats().end());
    case A::STRINGS:
      return std::equal(a.strings().begin(), a.strings().end(), b.strings().begin(),
                        b.strings().end());
    default:
      return a.SerializeAsString() == b.SerializeAsString();
  }
}

std::string AttributeText(const onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT:
      return absl::StrCat(a.i());
    case A::FLOAT:
      return absl::StrCat(a.f());
    case A::STRING:
      return absl::StrCat("\"", a.s(), "\"");
    case A::INTS:
      return absl::StrCat("[", absl::StrJoin(a.ints(), ", "), "]");
    case A::FLOATS:
      return absl::StrCat("[", absl::StrJoin(a.floats(), ", "), "]");
    default:
      return "(value)";
  }
}

// The attribute as the node has it, or onnx's default for the op when it has none.
const onnx::AttributeProto* AttributeOrDefault(const Node& n, const std::string& name,
                                               int64_t opset) {
  if (const auto* a = n.FindAttribute(name)) return a;
  if (!IsDefaultDomain(n.domain()) || opset <= 0) return nullptr;
  const auto* schema = FindSchema(n.op_type(), static_cast<int>(opset), "");
  if (schema == nullptr) return nullptr;
  auto it = schema->attributes().find(name);
  if (it == schema->attributes().end() || !it->second.default_value.has_type()) return nullptr;
  return &it->second.default_value;
}

absl::StatusOr<Tensor> PatternConstant(const TemplateNode& n) {
  for (const auto& a : n.attributes) {
    if (a.name() == "value" && a.has_t()) return TensorFromProto(a.t());
    if (a.name() == "value_float") return Tensor::FromVector<float>(DataType::kFloat, {}, {a.f()});
    if (a.name() == "value_int") {
      return Tensor::FromVector<int64_t>(DataType::kInt64, {}, {a.i()});
    }
    if (a.name() == "value_floats") {
      std::vector<float> v(a.floats().begin(), a.floats().end());
      return Tensor::FromVector<float>(DataType::kFloat, {static_cast<int64_t>(v.size())}, v);
    }
    if (a.name() == "value_ints") {
      std::vector<int64_t> v(a.ints().begin(), a.ints().end());
      return Tensor::FromVector<int64_t>(DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
    }
  }
  return absl::InvalidArgumentError("a pattern Constant needs a value attribute");
}

bool IsPatternConstant(const TemplateNode& n) {
  return IsDefaultDomain(n.domain) && n.op_type == "Constant" && n.inputs.empty();
}

// The orders of InputOrders for a node with `any_input` captures at pattern positions `any`.
std::vector<std::vector<int>> AnyPositionOrders(const std::vector<int>& any, size_t fixed,
                                                size_t count) {
  std::vector<std::vector<int>> orders;
  std::vector<int> at(any.size(), 0);  // the model position of each any_input capture
  std::function<void(size_t)> place = [&](size_t k) {
    if (orders.size() >= kMaxOrders) return;
    if (k < any.size()) {
      for (size_t p = 0; p < count; ++p) {
        if (std::find(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(k),
                      static_cast<int>(p)) != at.begin() + static_cast<std::ptrdiff_t>(k)) {
          continue;
        }
        at[k] = static_cast<int>(p);
        place(k + 1);
      }
      return;
    }
    std::vector<int> order(fixed, -1);
    std::vector<bool> taken(count, false);
    for (size_t j = 0; j < any.size(); ++j) {
      order[any[j]] = at[j];
      taken[at[j]] = true;
    }
    size_t next = 0;
    for (size_t i = 0; i < fixed; ++i) {
      if (order[i] >= 0) continue;
      while (taken[next]) ++next;
      order[i] = static_cast<int>(next++);
    }
    orders.push_back(std::move(order));
  };
  place(0);
  return orders;
}

// Injective choices of model input positions for the `fixed` pattern inputs of `pn` out of
// `count`, the model's own order first. A commutative node tries every choice; `any_input`
// captures try every position, the other pattern inputs filling the positions left in order.
std::vector<std::vector<int>> InputOrders(const TemplateNode& pn, size_t fixed, size_t count) {
  std::vector<int> all(count);
  std::iota(all.begin(), all.end(), 0);
  if (!pn.commutative && pn.any_position.empty()) {
    return {std::vector<int>(all.begin(), all.begin() + fixed)};
  }
  if (!pn.commutative) return AnyPositionOrders(pn.any_position, fixed, count);
  std::vector<std::vector<int>> orders;
  std::vector<int> current;
  std::vector<bool> used(count, false);
  std::function<void()> extend = [&] {
    if (orders.size() >= kMaxOrders) return;
    if (current.size() == fixed) {
      orders.push_back(current);
      return;
    }
    for (size_t i = 0; i < count; ++i) {
      if (used[i]) continue;
      used[i] = true;
      current.push_back(static_cast<int>(i));
      extend();
      current.pop_back();
      used[i] = false;
    }
  };
  extend();
  return orders;
}

class Solver {
 public:
  Solver(const Pattern& pattern, const AcceptFn& accept, int64_t opset, bool explain)
      : pattern_(pattern), accept_(accept), opset_(opset), explain_(explain) {}

  bool MatchNode(int index, Node* n, std::vector<Task> tasks, State state);
  std::string Why() const;
  std::optional<Match> result;

 private:
  enum class Step { kFail, kBound, kNode };
  bool Solve(std::vector<Task> tasks, State state);
  // Checks or binds one value; kNode when it needs a new node matched (`index`, `node`).
  Step MatchValue(const Task& task, State& state, int& index, Node*& node);
  bool CheckDeclared(const std::string& name, const Value* v, State& state);
  bool MatchConstant(const TemplateNode& pn, const std::string& name, Value* v);
  // Records why an alternative failed, for `explain`; a conversion does not ask, and the
  // message is then never built (`why` makes it).
  template <typename Why>
  bool Fail(Why&& why) {
    if (!explain_) return false;
    std::string text = why();
    if (std::find(failures_.begin(), failures_.end(), text) == failures_.end()) {
      failures_.push_back(std::move(text));
    }
    return false;
  }

  const Pattern& pattern_;
  const AcceptFn& accept_;
  int64_t opset_;
  bool explain_;
  std::vector<std::string> failures_;
};

std::string Solver::Why() const {
  if (failures_.empty()) return "no match";
  if (failures_.size() <= 3) return absl::StrJoin(failures_, "; ");
  return absl::StrCat(failures_[0], "; ", failures_[1], "; ", failures_[2], " (and ",
                      failures_.size() - 3, " more alternatives)");
}

bool Solver::CheckDeclared(const std::string& name, const Value* v, State& state) {
  auto it = pattern_.constraints.find(name);
  if (it == pattern_.constraints.end()) return true;
  const ValueConstraint& c = it->second;
  if (c.type != DataType::kUndefined && v->elem_type() != c.type) {
    return Fail([&] {
      return absl::StrCat(Quote(v), " (pattern '", name, "') is ",
                          v->elem_type() == DataType::kUndefined
                              ? std::string("of unknown type")
                              : std::string(DataTypeName(v->elem_type())),
                          ", pattern wants ", std::string(DataTypeName(c.type)));
    });
  }
  if (!c.dims) return true;
  const auto shape = v->shape();
  if (!shape) return Fail([&] { return absl::StrCat("rank of ", Quote(v), " is unknown"); });
  if (shape->size() != c.dims->size()) {
    return Fail([&] {
      return absl::StrCat(Quote(v), " has rank ", shape->size(), ", pattern '", name, "' wants ",
                          c.dims->size());
    });
  }
  for (size_t i = 0; i < shape->size(); ++i) {
    const DimConstraint& want = (*c.dims)[i];
    const Dim& have = (*shape)[i];
    if (want.value < 0 && want.symbol.empty()) continue;
    if (!have.known())
      return Fail([&] { return absl::StrCat("dim ", i, " of ", Quote(v), " is unknown"); });
    if (want.value >= 0 && have.value != want.value) {
      return Fail([&] {
        return absl::StrCat("dim ", i, " of ", Quote(v), " is ", have.value, ", pattern wants ",
                            want.value);
      });
    }
    if (!want.symbol.empty()) {
      auto [sym, fresh] = state.symbols.emplace(want.symbol, have.value);
      if (!fresh && sym->second != have.value) {
        return Fail([&, bound = sym->second] {
          return absl::StrCat("dim ", i, " of ", Quote(v), " is ", have.value, " but '",
                              want.symbol, "' is ", bound);
        });
      }
    }
  }
  return true;
}

bool Solver::MatchConstant(const TemplateNode& pn, const std::string& name, Value* v) {
  if (!IsConstant(v)) return Fail([&] { return absl::StrCat(Quote(v), " is not a constant"); });
  auto want = PatternConstant(pn);
  auto have = ConstantValue(v);
  if (!want.ok() || !have.ok())
    return Fail([&] { return absl::StrCat("cannot read constant ", Quote(v)); });
  const int64_t n = have->numel();
  if (want->numel() != 1 && want->numel() != n) {
    return Fail([&] {
      return absl::StrCat(Quote(v), " has ", n, " elements, pattern constant '", name, "' has ",
                          want->numel());
    });
  }
  if (have->type() == DataType::kString || want->type() == DataType::kString) {
    return Fail([&] { return std::string("string constants are not matched"); });
  }
  for (int64_t i = 0; i < n; ++i) {
    const double w = want->GetAsDouble(want->numel() == 1 ? 0 : i);
    if (have->GetAsDouble(i) != w) {
      return Fail([&] {
        return absl::StrCat("constant ", Quote(v), " differs from pattern '", name, "'");
      });
    }
  }
  return true;
}

Solver::Step Solver::MatchValue(const Task& task, State& state, int& index, Node*& node) {
  const std::string& name = task.name;
  Value* v = task.value;
  if (v == nullptr) {
    Fail(
        [&] { return absl::StrCat("an omitted input stands where the pattern has '", name, "'"); });
    return Step::kFail;
  }
  auto bound = state.match.values.find(name);
  if (bound != state.match.values.end()) {
    if (bound->second == v) return Step::kBound;
    Fail([&] {
      return absl::StrCat("'", name, "' is bound to ", Quote(bound->second), " but this input is ",
                          Quote(v));
    });
    return Step::kFail;
  }
  if (pattern_.IsCapture(name)) {
    if (!CheckDeclared(name, v, state)) return Step::kFail;
    state.match.values[name] = v;
    return Step::kBound;
  }
  const auto [pattern_index, output] = pattern_.producers.at(name);
  const TemplateNode& pn = pattern_.nodes[pattern_index];
  if (IsPatternConstant(pn)) {
    if (!MatchConstant(pn, name, v) || !CheckDeclared(name, v, state)) return Step::kFail;
    state.match.values[name] = v;
    // A constant of an enclosing graph is read, never taken over by the rewrite.
    Node* constant = v->producer();
    if (constant != nullptr && constant->owner() == state.match.root->owner()) {
      state.match.nodes[pattern_index] = constant;
    }
    return Step::kBound;
  }
  Node* n = v->producer();
  if (n == nullptr) {
    Fail([&] {
      return absl::StrCat(Quote(v), " is not produced by a node (pattern wants ", pn.op_type, ")");
    });
    return Step::kFail;
  }
  // A pattern lies within one graph: a value of an enclosing graph read by a body is only
  // ever a capture, so a rule never rewrites across an If/Loop/Scan boundary.
  if (n->owner() != state.match.root->owner()) {
    Fail([&] {
      return absl::StrCat(Quote(v), " comes from an enclosing graph (pattern wants ", pn.op_type,
                          " in the same graph)");
    });
    return Step::kFail;
  }
  if (v->producer_output() != output) {
    Fail([&, wanted = output] {
      return absl::StrCat(Quote(v), " is output ", v->producer_output(), " of ", n->Describe(),
                          ", pattern wants output ", wanted);
    });
    return Step::kFail;
  }
  if (state.match.nodes[pattern_index] != nullptr) {
    if (state.match.nodes[pattern_index] == n) return Step::kBound;
    Fail([&, other = state.match.nodes[pattern_index]] {
      return absl::StrCat("pattern node ", pn.op_type, " matched both ", other->Describe(), " and ",
                          n->Describe());
    });
    return Step::kFail;
  }
  index = pattern_index;
  node = n;
  return Step::kNode;
}

bool Solver::MatchNode(int index, Node* n, std::vector<Task> tasks, State state) {
  const TemplateNode& pn = pattern_.nodes[index];
  if (n->op_type() != pn.op_type || IsDefaultDomain(n->domain()) != IsDefaultDomain(pn.domain) ||
      (!IsDefaultDomain(pn.domain) && n->domain() != pn.domain)) {
    if (n->op_type() == pn.op_type) {
      return Fail([&] {
        return absl::StrCat(n->Describe(), " is in domain '", n->domain(), "', pattern wants '",
                            pn.domain, "'");
      });
    }
    return Fail([&] { return absl::StrCat(n->Describe(), " is not ", pn.op_type); });
  }
  for (Node* other : state.match.nodes) {
    if (other == n) return Fail([&] { return absl::StrCat(n->Describe(), " is matched twice"); });
  }
  if (n->num_outputs() < pn.outputs.size()) {
    return Fail([&] {
      return absl::StrCat(n->Describe(), " has ", n->num_outputs(), " outputs, pattern wants ",
                          pn.outputs.size());
    });
  }
  for (const auto& a : pn.attributes) {
    if (!a.ref_attr_name().empty()) {
      if (const auto* have = n->FindAttribute(a.name())) {
        state.match.attributes[a.ref_attr_name()] = *have;
      }
      continue;
    }
    const onnx::AttributeProto* have = AttributeOrDefault(*n, a.name(), opset_);
    if (have == nullptr) {
      return Fail([&] {
        return absl::StrCat(n->Describe(), " has no attribute '", a.name(), "', pattern wants ",
                            AttributeText(a));
      });
    }
    if (!SameAttributeValue(*have, a)) {
      return Fail([&] {
        return absl::StrCat(n->Describe(), " has ", a.name(), " = ", AttributeText(*have),
                            ", pattern wants ", AttributeText(a));
      });
    }
  }
  for (size_t k = 0; k < pn.outputs.size(); ++k) {
    if (pn.outputs[k].empty()) continue;
    Value* out = n->output(k);
    if (out == nullptr)
      return Fail([&] { return absl::StrCat(n->Describe(), " has no output ", k); });
    if (!CheckDeclared(pn.outputs[k], out, state)) return false;
    state.match.values[pn.outputs[k]] = out;
  }
  size_t count = n->num_inputs();
  while (count > 0 && n->input(count - 1) == nullptr) --count;
  const size_t fixed = pn.inputs.size() - (pn.variadic ? 1 : 0);
  if (!pn.variadic && count != fixed) {
    return Fail([&] {
      return absl::StrCat(n->Describe(), " has ", count, " inputs, pattern wants ", fixed);
    });
  }
  if (pn.variadic && count < fixed) {
    return Fail([&] {
      return absl::StrCat(n->Describe(), " has ", count, " inputs, pattern wants at least ", fixed);
    });
  }
  state.match.nodes[index] = n;
  // A variadic node may have 10^6 inputs and is looked at once per order tried (up to
  // kMaxOrders): each order copies the inputs around the chosen ones as whole ranges, and
  // checks per input only what needs it (a declared list type, omitted inputs).
  const std::vector<Value*>& inputs = n->inputs();
  const bool list_declared =
      pn.variadic && pattern_.constraints.find(pn.inputs.back()) != pattern_.constraints.end();
  const bool any_omitted = std::find(inputs.begin(), inputs.begin() + count, nullptr) !=
                           inputs.begin() + static_cast<std::ptrdiff_t>(count);
  for (const auto& order : InputOrders(pn, fixed, count)) {
    State next = state;
    std::vector<int> chosen = order;
    std::sort(chosen.begin(), chosen.end());
    chosen.push_back(static_cast<int>(count));
    std::vector<int> full = order;
    full.reserve(count);
    std::vector<Value*> rest;
    rest.reserve(count - fixed);
    for (size_t from = 0, c = 0; c < chosen.size(); from = chosen[c++] + 1) {
      const size_t to = chosen[c];
      if (to <= from) continue;
      full.resize(full.size() + (to - from));
      std::iota(full.end() - static_cast<std::ptrdiff_t>(to - from), full.end(),
                static_cast<int>(from));
      rest.insert(rest.end(), inputs.begin() + static_cast<std::ptrdiff_t>(from),
                  inputs.begin() + static_cast<std::ptrdiff_t>(to));
    }
    bool ok = true;
    if (pn.variadic) {
      const std::string& list = pn.inputs.back();
      for (size_t i = 0; ok && (list_declared || any_omitted) && i < rest.size(); ++i) {
        if (rest[i] == nullptr) {
          ok = Fail(
              [&] { return absl::StrCat("variadic '", list, "' would bind an omitted input"); });
        } else if (list_declared) {
          ok = CheckDeclared(list, rest[i], next);
        }
      }
      next.match.lists[list] = std::move(rest);
    }
    next.match.input_order[index] = std::move(full);
    std::vector<Task> more = tasks;
    for (size_t i = fixed; i-- > 0;) {
      Value* v = n->input(order[i]);
      if (pn.inputs[i].empty()) {
        if (v != nullptr)
          ok = Fail([&] {
            return absl::StrCat(n->Describe(), " has input ", order[i],
                                ", pattern wants it omitted");
          });
        continue;
      }
      more.push_back({pn.inputs[i], v});
    }
    if (ok && Solve(std::move(more), std::move(next))) return true;
  }
  return false;
}

bool Solver::Solve(std::vector<Task> tasks, State state) {
  while (!tasks.empty()) {
    Task task = std::move(tasks.back());
    tasks.pop_back();
    int index = -1;
    Node* node = nullptr;
    switch (MatchValue(task, state, index, node)) {
      case Step::kFail:
        return false;
      case Step::kBound:
        break;
      // The node's inputs may match in several orders: MatchNode branches and solves the
      // remaining tasks in each branch.
      case Step::kNode:
        return MatchNode(index, node, std::move(tasks), std::move(state));
    }
  }
  std::string why;
  if (accept_(state.match, why)) {
    result = state.match;
    return true;
  }
  return Fail([&] { return std::move(why); });
}

}  // namespace

std::optional<Match> MatchPattern(const Pattern& pattern, Node* node, const AcceptFn& accept,
                                  std::string& why, int64_t opset, bool explain) {
  Solver solver(pattern, accept, opset, explain);
  State state;
  state.match.nodes.assign(pattern.nodes.size(), nullptr);
  state.match.input_order.assign(pattern.nodes.size(), {});
  state.match.root = node;
  if (solver.MatchNode(pattern.root, node, {}, std::move(state))) return solver.result;
  if (explain) why = solver.Why();
  return std::nullopt;
}

}  // namespace ovfix::rules
