// What the fp16 and bf16 island policies (fp16_island_rules.h, bf16_island_rules.h) share: the
// marks with their reasons (the first reason given to a node stays), the islands a user or the
// repair asks for, the arithmetic feeding an integer or an angle, and the closing rules that
// spare Cast pairs (closure, pull). Each policy derives its decider from it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "re2/re2.h"
#include "rules/passes/fp16_island_rules.h"

namespace ovfix::rules {

// A default-domain node of type `op`.
inline bool IsOp(const Node& n, std::string_view op) {
  return n.domain().empty() && n.op_type() == op;
}
// A node reading or making float32 values.
bool IsFloatNode(const Node& n);
// A float output of `n` whose type an attribute sets (random generators, EyeLike's dtype, a
// window's output_datatype: a type parameter of onnx's schema that no input shares), so that
// retyping it would contradict the node. Cast and the constants are retyped with their
// attribute, so they are not among them.
bool OutputTypeSetByAttribute(const Node& n, int64_t opset);

// Where `n` sits: the name of each node holding a body around it, with the body ("then",
// "else", or the attribute's name: "body"), from the outermost in, then its own name:
// "If_0/then/LSTM_3", "Loop_0/body/LSTM_1"; a main-graph node's path is its name. An unnamed
// node goes by its first output's name.
std::string NodePath(const Node& n);
// Whether a --keep-fp32 regex matches the whole of `n`'s name, op type or NodePath.
bool KeepFp32Matches(const Node& n, const RE2& pattern);
// Whether it matches a node of `root` or of a body inside it, at any depth.
bool KeepFp32MatchesAny(const Graph& root, const RE2& pattern);

class IslandMarks {
 public:
  using Islands = absl::flat_hash_map<const Node*, std::string>;

  virtual ~IslandMarks() = default;

  // The islands of the graph: the nodes the user or the repair asked for, those the policy
  // marks (Decide), and, with the structural rules, the closing rules (Closure, Pull).
  absl::StatusOr<Islands> Run();

 protected:
  // `join_between`: what Closure joins under this policy.
  IslandMarks(const Graph& g, const IslandOptions& options, bool join_between)
      : g_(g), o_(options), join_between_(join_between) {}

  // The policy's marks over the graph's nodes (in graph order).
  virtual void Decide(const std::vector<Node*>& nodes) = 0;

  // Marks the float nodes of `nodes` that the repair chose (options.keep_outputs) or a
  // --keep-fp32 regex matches (KeepFp32Matches); InvalidArgument for a bad regex.
  absl::Status MarkRequested(const std::vector<Node*>& nodes, const IslandOptions& options);
  // Marks `n` (of this graph level only) unless it has a reason already.
  void Mark(const Node* n, std::string reason);
  // Marks `n`, then the nodes of `through` that compute its variable float inputs, back up to
  // a few steps.
  void MarkWithFeeding(const Node& n, const std::string& why,
                       const absl::flat_hash_set<std::string>& through);
  // A Cast to an integer type, Round/Floor/Ceil or QuantizeLinear of a float, and the
  // element-wise arithmetic feeding it: a scale or a size computed in a 16-bit float would move
  // the integers. `note` (may be empty) says why, for the precision at hand.
  void IntegerFeeding(const Node& n, std::string_view note);
  // Sin/Cos and the arithmetic computing their angle (rotary position embeddings): a 16-bit
  // float spaces values near 1000 half a radian apart or more. `type` names it in the reason.
  void AngleFeeding(const Node& n, std::string_view type);
  // A node whose float inputs (two or more, not constants) all come from islands joins them
  // rather than casting each of them down. With `join_between`, so does one whose every float
  // input comes from islands and whose every reader is one (a Relu between two fp32 Convs),
  // repeated until nothing joins.
  void Closure(const std::vector<Node*>& nodes, bool join_between);
  // Float made from non-float inputs (Cast from int, Constant) that only islands read stays
  // float rather than going to 16 bits and back.
  void Pull(const std::vector<Node*>& nodes);

  const Graph& g_;
  const IslandOptions& o_;
  Islands islands_;

 private:
  bool OnlyIslandsRead(const Node& n) const;

  const bool join_between_;
};

}  // namespace ovfix::rules
