#include "rules/passes/island_marks.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/constant.h"
#include "ir/op_schemas.h"
#include "ir/status_macros.h"
#include "onnx/defs/schema.h"
#include "re2/re2.h"

namespace ovfix::rules {

bool IsFloatNode(const Node& n) {
  for (const Value* v : n.inputs()) {
    if (IsFloat32(v)) return true;
  }
  for (const Value* v : n.outputs()) {
    if (IsFloat32(v)) return true;
  }
  return false;
}

bool OutputTypeSetByAttribute(const Node& n, int64_t opset) {
  static const absl::flat_hash_set<std::string> kTypeFromAttribute = {
      "RandomNormal",      "RandomUniform", "RandomNormalLike",
      "RandomUniformLike", "Multinomial",   "Bernoulli"};
  if (kTypeFromAttribute.contains(n.op_type()) || (IsOp(n, "EyeLike") && n.HasAttribute("dtype"))) {
    return true;
  }
  if (!n.domain().empty() || IsOp(n, "Cast") || IsOp(n, "Constant") || IsOp(n, "ConstantOfShape")) {
    return false;
  }
  const onnx::OpSchema* schema = FindSchema(n.op_type(), static_cast<int>(opset), "");
  if (schema == nullptr || schema->outputs().empty()) return false;
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    if (!IsFloat32(n.output(i))) continue;
    const std::string& param =
        schema->outputs()[std::min(i, schema->outputs().size() - 1)].GetTypeStr();
    bool shared = false;
    for (const auto& input : schema->inputs()) shared = shared || input.GetTypeStr() == param;
    if (!shared) return true;
  }
  return false;
}

namespace {

std::string OwnName(const Node& n) {
  if (!n.name().empty() || n.outputs().empty() || n.output(0) == nullptr) return n.name();
  return n.output(0)->name();
}

}  // namespace

std::string NodePath(const Node& n) {
  std::string path = OwnName(n);
  for (const Graph* g = n.owner(); g != nullptr && g->owner_node() != nullptr;
       g = g->owner_node()->owner()) {
    const Node& holder = *g->owner_node();
    std::string body;
    for (const Subgraph& s : holder.subgraphs()) {
      if (s.graph.get() != g) continue;
      body = s.attribute == "then_branch"   ? "then"
             : s.attribute == "else_branch" ? "else"
                                            : s.attribute;
      if (s.index >= 0) absl::StrAppend(&body, "[", s.index, "]");
    }
    path = absl::StrCat(OwnName(holder), "/", body, "/", path);
  }
  return path;
}

bool KeepFp32Matches(const Node& n, const RE2& pattern) {
  if (RE2::FullMatch(n.name(), pattern) || RE2::FullMatch(n.op_type(), pattern)) return true;
  return n.owner() != nullptr && n.owner()->owner_node() != nullptr &&
         RE2::FullMatch(NodePath(n), pattern);
}

bool KeepFp32MatchesAny(const Graph& root, const RE2& pattern) {
  for (const Node* n : root.nodes()) {
    if (KeepFp32Matches(*n, pattern)) return true;
    for (const Subgraph& s : n->subgraphs()) {
      if (s.graph != nullptr && KeepFp32MatchesAny(*s.graph, pattern)) return true;
    }
  }
  return false;
}

absl::StatusOr<IslandMarks::Islands> IslandMarks::Run() {
  const std::vector<Node*> nodes = g_.NodeList();
  OVFIX_RETURN_IF_ERROR(MarkRequested(nodes, o_));
  Decide(nodes);
  if (o_.structural) {
    Closure(nodes, join_between_);
    Pull(nodes);
  }
  return std::move(islands_);
}

absl::Status IslandMarks::MarkRequested(const std::vector<Node*>& nodes,
                                        const IslandOptions& options) {
  std::vector<std::unique_ptr<RE2>> patterns;
  for (const std::string& p : options.keep_fp32) {
    auto re = std::make_unique<RE2>(p, RE2::Quiet);
    if (!re->ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--keep-fp32 '", p, "': not a valid regex: ", re->error()));
    }
    patterns.push_back(std::move(re));
  }
  for (const Node* n : nodes) {
    if (!IsFloatNode(*n)) continue;
    if (!n->outputs().empty() && n->output(0) != nullptr) {
      if (auto it = options.keep_outputs.find(n->output(0)->name());
          it != options.keep_outputs.end()) {
        Mark(n, it->second);
      }
    }
    for (size_t i = 0; i < patterns.size(); ++i) {
      if (KeepFp32Matches(*n, *patterns[i])) {
        Mark(n, absl::StrCat("--keep-fp32 '", options.keep_fp32[i], "'"));
        break;
      }
    }
  }
  return absl::OkStatus();
}

void IslandMarks::Mark(const Node* n, std::string reason) {
  if (n->owner() != &g_) return;
  if (!o_.release_outputs.empty() && !n->outputs().empty() && n->output(0) != nullptr &&
      o_.release_outputs.contains(n->output(0)->name())) {
    return;  // given back by the island certificate
  }
  islands_.try_emplace(n, std::move(reason));
}

void IslandMarks::MarkWithFeeding(const Node& n, const std::string& why,
                                  const absl::flat_hash_set<std::string>& through) {
  Mark(&n, why);
  constexpr int kMaxDepth = 8;
  std::vector<std::pair<const Node*, int>> stack = {{&n, 0}};
  absl::flat_hash_set<const Node*> seen = {&n};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (depth == kMaxDepth) continue;
    for (const Value* v : node->inputs()) {
      if (!IsFloat32(v) || IsConstant(v)) continue;
      const Node* p = v->producer();
      if (p == nullptr || p->owner() != &g_ || !p->domain().empty() ||
          !through.contains(p->op_type()) || !seen.insert(p).second) {
        continue;
      }
      Mark(p, why);
      stack.emplace_back(p, depth + 1);
    }
  }
}

void IslandMarks::IntegerFeeding(const Node& n, std::string_view note) {
  const bool to_integer = IsOp(n, "Cast") && IsFloat32(n.input(0)) &&
                          IsInteger(static_cast<DataType>(n.GetInt("to", 0)));
  const bool rounds =
      (IsOp(n, "Round") || IsOp(n, "Floor") || IsOp(n, "Ceil")) && IsFloat32(n.input(0));
  if (!to_integer && !rounds && !IsOp(n, "QuantizeLinear")) return;
  static const absl::flat_hash_set<std::string> kArithmetic = {
      "Mul",   "Div",   "Add",  "Sub",     "Neg",     "Abs",       "Clip",    "Max",     "Min",
      "Round", "Floor", "Ceil", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"};
  MarkWithFeeding(n,
                  absl::StrCat("computes integers from floats (", n.Describe(),
                               note.empty() ? "" : "; ", std::string(note), ")"),
                  kArithmetic);
}

void IslandMarks::AngleFeeding(const Node& n, std::string_view type) {
  if (!(IsOp(n, "Sin") || IsOp(n, "Cos")) || !IsFloat32(n.input(0))) return;
  static const absl::flat_hash_set<std::string> kAngleArithmetic = {
      "Mul",     "Div",       "Add",     "Sub",    "Neg",   "MatMul",
      "Einsum",  "Concat",    "Reshape", "Expand", "Tile",  "Transpose",
      "Squeeze", "Unsqueeze", "Flatten", "Gather", "Slice", "Identity"};
  MarkWithFeeding(
      n, absl::StrCat("angle of ", n.Describe(), " (", std::string(type), " cannot resolve it)"),
      kAngleArithmetic);
}

void IslandMarks::Closure(const std::vector<Node*>& nodes, bool join_between) {
  for (bool joined = true; joined;) {
    joined = false;
    for (const Node* n : nodes) {
      if (islands_.contains(n) || !IsFloatNode(*n)) continue;
      int from_islands = 0, others = 0;
      for (const Value* v : n->inputs()) {
        if (!IsFloat32(v) || IsConstant(v)) continue;
        const Node* p = v->producer();
        (p != nullptr && islands_.contains(p)) ? ++from_islands : ++others;
      }
      if (others > 0 || from_islands == 0) continue;
      if (from_islands >= 2) {
        Mark(n, "all its float inputs come from fp32 islands");
        joined = join_between;
      } else if (join_between && OnlyIslandsRead(*n)) {
        Mark(n, "between fp32 islands (a Cast pair would cost more than it saves)");
        joined = true;
      }
    }
  }
}

bool IslandMarks::OnlyIslandsRead(const Node& n) const {
  bool read = false;
  for (const Value* o : n.outputs()) {
    if (o == nullptr || !IsFloat32(o)) continue;
    if (o->is_graph_output()) return false;
    for (const Use& u : o->uses()) {
      if (!islands_.contains(u.node)) return false;
      read = true;
    }
  }
  return read;
}

void IslandMarks::Pull(const std::vector<Node*>& nodes) {
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node* n = *it;
    if (islands_.contains(n) || !IsFloatNode(*n)) continue;
    bool float_inputs = false;
    for (const Value* v : n->inputs()) float_inputs = float_inputs || IsFloat32(v);
    if (float_inputs) continue;
    bool only_islands = true, read = false;
    for (const Value* o : n->outputs()) {
      if (!IsFloat32(o)) continue;
      if (o->is_graph_output()) only_islands = false;
      for (const Use& u : o->uses()) {
        read = true;
        only_islands = only_islands && islands_.contains(u.node);
      }
    }
    if (read && only_islands) Mark(n, "makes float that only fp32 islands read");
  }
}

}  // namespace ovfix::rules
