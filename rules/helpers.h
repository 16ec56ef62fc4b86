// The registry of named C++ helpers that rule files call in `where` and `let` clauses:
// conditions (rank, dtype, is_constant, single_use, opset, name_matches, ...) and
// computations (leading_axes, constant_with_rank, squeeze_axes, conv_pads, ...). A rule is
// text; the helpers are the only C++ a rule relies on. docs/rules.md lists every helper.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/model.h"
#include "ir/tensor.h"
#include "rules/pass.h"

namespace ovfix::rules {

// A constant to use in a replacement: `tensor` replaces the data of `source` in place when
// nothing else reads `source`, else it becomes a new initializer. Either way, no new node.
struct ConstantInPlace {
  Value* source = nullptr;
  Tensor tensor;
};

using ValueList = std::vector<Value*>;
// What an expression evaluates to. Value* is a model value bound by the match.
using HelperValue =
    std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>,
                 std::vector<double>, Value*, ValueList, Tensor, ConstantInPlace>;

// "4", "[0, 1]", "'x'" ...: how messages show a value.
std::string DescribeHelperValue(const HelperValue& v);

// An attribute's value as expressions see it (int, float, string, ints, floats, tensor).
HelperValue FromAttribute(const onnx::AttributeProto& attribute);
// An attribute named `name` holding `v` (for `name = @ref` in a replacement).
absl::StatusOr<onnx::AttributeProto> ToAttribute(const std::string& name, const HelperValue& v);

struct Helper;
// Results of helpers of one value while one rule is matched at one node: the graph does not
// change meanwhile, and a condition such as broadcast_rank(y) over a node with 10^6 inputs
// then costs one pass over them, not one per input order the matcher tries.
using HelperMemo =
    absl::flat_hash_map<std::pair<const Helper*, const Value*>, absl::StatusOr<HelperValue>>;

struct HelperContext {
  const Model& model;
  const ConvertOptions* options = nullptr;  // null outside a conversion (tests, explain)
  HelperMemo* memo = nullptr;               // null: nothing is remembered
};

// A helper returns FailedPrecondition when it does not apply to its arguments (an unknown
// rank, a non-constant value): the rule does not match, and the message says why. Any other
// error is a mistake in the rule (a wrong argument type) and is reported as such.
using HelperFn =
    std::function<absl::StatusOr<HelperValue>(const HelperContext&, std::span<const HelperValue>)>;

struct Helper {
  std::string name;
  int min_args = 0;
  int max_args = 0;
  std::string signature;    // "rank(x) -> int"
  std::string description;  // one line, for `ovfix rules list` and the docs
  HelperFn fn;
};

// Checks a string literal given as argument `index` of helper `name` when a rule file is
// read (a regex that does not compile): a bad rule is refused instead of never matching.
absl::Status CheckLiteralArgument(std::string_view name, size_t index, const std::string& literal);
// nullptr when there is no such helper.
const Helper* FindHelper(std::string_view name);
// Every helper, sorted by name.
const std::vector<Helper>& AllHelpers();

// FailedPrecondition: the helper does not apply to this match (the rule is skipped).
absl::Status NotApplicable(std::string message);
// The data of constant `v`; does not apply to other values or to strings.
absl::StatusOr<Tensor> ConstantOf(const Value* v);
// A type given by its onnx name ("float16") or code (10).
absl::StatusOr<DataType> DataTypeArg(std::string_view helper, std::span<const HelperValue> args,
                                     size_t i);
// The value's rank / static shape, or FailedPrecondition when not known.
absl::StatusOr<int64_t> KnownRank(const Value* v);
absl::StatusOr<std::vector<int64_t>> KnownShape(const Value* v);
// The node that produces `v`, or FailedPrecondition.
absl::StatusOr<Node*> ProducerOf(const Value* v);

// Registration, used by the helper files (helpers_*.cc) through AllHelpers().
void AddShapeHelpers(std::vector<Helper>& out);
void AddConvHelpers(std::vector<Helper>& out);

}  // namespace ovfix::rules
