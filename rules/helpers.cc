// Registry, argument access, and the helpers about values and nodes (rank, dtype, uses,
// opset, regex filters, attributes). Shape and conv computations are in helpers_shape.cc and
// helpers_conv.cc.
#include "rules/helpers.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/constant.h"
#include "ir/op_schemas.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"
#include "onnx/defs/schema.h"
#include "re2/re2.h"
#include "rules/conversion_options.h"
#include "rules/helper_registration.h"
#include "rules/matcher.h"

namespace ovfix::rules {
namespace {

using Args = std::span<const HelperValue>;

constexpr int64_t kMaxValueElements = 1 << 16;

std::string Quote(const Value* v) { return absl::StrCat("'", v->name(), "'"); }

// Whether every value of `from` converts to `to` and back unchanged.
bool IsExactCast(DataType from, DataType to) {
  if (from == to) return true;
  auto integer_bits = [](DataType t) -> int {
    if (t == DataType::kBool) return 1;
    return IsInteger(t) ? static_cast<int>(ElementSize(t)) * 8 : 0;
  };
  auto is_signed = [](DataType t) {
    return t == DataType::kInt8 || t == DataType::kInt16 || t == DataType::kInt32 ||
           t == DataType::kInt64;
  };
  // Bits of mantissa (with the implicit one) a float type holds exactly.
  auto mantissa = [](DataType t) -> int {
    switch (t) {
      case DataType::kFloat16:
        return 11;
      case DataType::kBfloat16:
        return 8;
      case DataType::kFloat:
        return 24;
      case DataType::kDouble:
        return 53;
      default:
        return 0;
    }
  };
  const int from_int = integer_bits(from), to_int = integer_bits(to);
  const int from_mantissa = mantissa(from), to_mantissa = mantissa(to);
  if (from_int > 0 && to_int > 0) {
    if (from == DataType::kBool) return true;
    if (to == DataType::kBool) return false;
    if (is_signed(from) && !is_signed(to)) return false;
    return to_int > from_int || (to_int == from_int && is_signed(from) == is_signed(to));
  }
  if (from_int > 0 && to_mantissa > 0) {
    return from == DataType::kBool || from_int - (is_signed(from) ? 1 : 0) <= to_mantissa;
  }
  if (from_mantissa > 0 && to_mantissa > 0) {
    // float16 -> bfloat16 loses range and bits; the wider types hold every narrower value.
    if (from == DataType::kBfloat16) return to == DataType::kFloat || to == DataType::kDouble;
    if (from == DataType::kFloat16) return to == DataType::kFloat || to == DataType::kDouble;
    return from == DataType::kFloat && to == DataType::kDouble;
  }
  return false;
}

absl::StatusOr<HelperValue> ConstantElements(Value* v) {
  OVFIX_ASSIGN_OR_RETURN(Tensor t, ConstantOf(v));
  // Rules read small constants (shapes, axes); big weights are not theirs.
  if (t.numel() > kMaxValueElements) {
    return NotApplicable(absl::StrCat(Quote(v), " is too large to read"));
  }
  if (IsFloatingPoint(t.type())) {
    std::vector<double> out;
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.GetAsDouble(i));
    return out;
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.GetAsInt64(i));
  return out;
}

void AddValueHelpers(std::vector<Helper>& out) {
  out.push_back(MakeHelper("rank(x) -> int", "the rank of x (does not apply when unknown)",
                           [](Value* v) { return KnownRank(v); }));
  out.push_back(MakeHelper("has_rank(x) -> bool", "whether the rank of x is known",
                           [](Value* v) { return v->rank() >= 0; }));
  out.push_back(MakeHelper(
      "dtype(x) -> string", "the element type of x as onnx spells it (\"float\", \"float16\", ...)",
      [](Value* v) -> absl::StatusOr<std::string> {
        if (v->elem_type() == DataType::kUndefined) {
          return NotApplicable(absl::StrCat("type of ", Quote(v), " is unknown"));
        }
        return std::string(DataTypeName(v->elem_type()));
      }));
  out.push_back(MakeHelper("type_name(code) -> string",
                           "the onnx name of a type code (e.g. a Cast's `to` attribute)",
                           [](DataType t) { return std::string(DataTypeName(t)); }));
  out.push_back(MakeHelper("is_float(x) -> bool", "whether x is float, float16, double or bfloat16",
                           [](Value* v) { return IsFloatingPoint(v->elem_type()); }));
  out.push_back(MakeHelper("is_exact_cast(from, to) -> bool",
                           "whether every value of type `from` survives a cast to `to` and back "
                           "(types as names or codes)",
                           IsExactCast));
  out.push_back(
      MakeHelper("is_constant(x) -> bool",
                 "whether x is an initializer (not also a graph input) or a Constant's output",
                 [](Value* v) { return IsConstant(v); }));
  out.push_back(MakeHelper("value(c) -> ints or floats",
                           "the elements of constant c (ints for integer types, floats otherwise)",
                           ConstantElements));
  out.push_back(
      MakeHelper("scalar_value(c) -> float",
                 "the one value of constant c (all its elements equal; an epsilon, an exponent)",
                 [](Value* v) -> absl::StatusOr<HelperValue> {
                   OVFIX_ASSIGN_OR_RETURN(Tensor t, ConstantOf(v));
                   if (!IsFloatingPoint(t.type()) || t.numel() < 1) {
                     return NotApplicable(absl::StrCat(Quote(v), " is not a float constant"));
                   }
                   for (int64_t i = 1; i < t.numel(); ++i) {
                     if (t.GetAsDouble(i) != t.GetAsDouble(0)) {
                       return NotApplicable(absl::StrCat(Quote(v), " holds more than one value"));
                     }
                   }
                   return HelperValue(t.GetAsDouble(0));
                 }));
  out.push_back(MakeHelper(
      "single_use(x) -> bool", "whether exactly one node input reads x and x is not a graph output",
      [](Value* v) { return v->uses().size() == 1 && !v->is_graph_output(); }));
  out.push_back(MakeHelper("num_uses(x) -> int", "how many node inputs read x",
                           [](Value* v) { return static_cast<int64_t>(v->uses().size()); }));
  out.push_back(MakeHelper("is_graph_input(x) -> bool", "whether x is an input of the graph",
                           [](Value* v) { return v->is_graph_input(); }));
  out.push_back(
      MakeHelper("same_graph(x, y) -> bool",
                 "whether x and y belong to one graph (a body reads outer values from outside)",
                 [](Value* x, Value* y) { return x->owner() == y->owner(); }));
  out.push_back(MakeHelper("is_graph_output(x) -> bool", "whether x is an output of the graph",
                           [](Value* v) { return v->is_graph_output(); }));
}

void AddNodeHelpers(std::vector<Helper>& out) {
  out.push_back(
      MakeHelper("opset([domain]) -> int",
                 "the model's opset version for a domain (default \"\"), -1 when not imported",
                 [](const HelperContext& c, std::optional<std::string> domain) {
                   return c.model.OpsetVersion(domain.value_or(""));
                 }));
  auto regex_helper = [](std::string name, bool on_name) {
    return [name, on_name](Value* v, std::string pattern) -> absl::StatusOr<bool> {
      OVFIX_ASSIGN_OR_RETURN(Node * node, ProducerOf(v));
      RE2 re(pattern, RE2::Quiet);
      if (!re.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": bad regex '", pattern, "': ", re.error()));
      }
      return RE2::PartialMatch(on_name ? node->name() : node->op_type(), re);
    };
  };
  out.push_back(
      MakeHelper("name_matches(x, \"regex\") -> bool",
                 "whether the name of the node producing x contains a match of the re2 regex",
                 regex_helper("name_matches", true)));
  out.push_back(
      MakeHelper("op_matches(x, \"regex\") -> bool",
                 "whether the op type of the node producing x contains a match of the regex",
                 regex_helper("op_matches", false)));
  out.push_back(MakeHelper("num_outputs(y) -> int",
                           "how many outputs the node producing y has (omitted ones not counted)",
                           [](Value* v) -> absl::StatusOr<int64_t> {
                             OVFIX_ASSIGN_OR_RETURN(Node * node, ProducerOf(v));
                             int64_t count = 0;
                             for (Value* out : node->outputs()) count += out != nullptr ? 1 : 0;
                             return count;
                           }));
  out.push_back(MakeHelper("has_attr(x, \"name\") -> bool",
                           "whether the node producing x sets the attribute",
                           [](Value* v, std::string name) -> absl::StatusOr<bool> {
                             OVFIX_ASSIGN_OR_RETURN(Node * node, ProducerOf(v));
                             return node->HasAttribute(name);
                           }));
  out.push_back(MakeHelper(
      "attr(x, \"name\") -> value",
      "an attribute of the node producing x, or onnx's default for its op",
      [](const HelperContext& c, Value* v, std::string name) -> absl::StatusOr<HelperValue> {
        OVFIX_ASSIGN_OR_RETURN(Node * node, ProducerOf(v));
        if (const auto* a = node->FindAttribute(name)) return FromAttribute(*a);
        const int64_t opset = c.model.OpsetVersion(node->domain());
        const auto* schema = FindSchema(node->op_type(), static_cast<int>(opset), node->domain());
        if (schema != nullptr) {
          auto it = schema->attributes().find(name);
          if (it != schema->attributes().end() && it->second.default_value.has_type()) {
            return FromAttribute(it->second.default_value);
          }
        }
        return NotApplicable(absl::StrCat(node->Describe(), " has no attribute '", name, "'"));
      }));
  out.push_back(MakeHelper("len(list) -> int", "the length of a list or variadic capture",
                           [](const HelperValue& list) -> absl::StatusOr<int64_t> {
                             if (auto* l = std::get_if<ValueList>(&list))
                               return static_cast<int64_t>(l->size());
                             if (auto* d = std::get_if<std::vector<double>>(&list)) {
                               return static_cast<int64_t>(d->size());
                             }
                             OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> ints,
                                                    helper_internal::Arg<std::vector<int64_t>>::Get(
                                                        "len", {&list, 1}, 0));
                             return static_cast<int64_t>(ints.size());
                           }));
  out.push_back(MakeHelper("contains(list, n) -> bool", "whether the list holds n",
                           [](const HelperValue& list, int64_t n) -> absl::StatusOr<bool> {
                             if (auto* d = std::get_if<std::vector<double>>(&list)) {
                               return std::find(d->begin(), d->end(), static_cast<double>(n)) !=
                                      d->end();
                             }
                             OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> ints,
                                                    helper_internal::Arg<std::vector<int64_t>>::Get(
                                                        "contains", {&list, 1}, 0));
                             return std::find(ints.begin(), ints.end(), n) != ints.end();
                           }));
  // max and min take any number of arguments: registered by hand.
  auto extremum = [](std::string name, bool max) {
    return [name, max](const HelperContext&, Args args) -> absl::StatusOr<HelperValue> {
      int64_t best = 0;
      for (size_t i = 0; i < args.size(); ++i) {
        OVFIX_ASSIGN_OR_RETURN(int64_t n, helper_internal::Arg<int64_t>::Get(name, args, i));
        if (i == 0 || (max ? n > best : n < best)) best = n;
      }
      return best;
    };
  };
  out.push_back({"max", 1, 8, "max(a, b, ...) -> int", "the largest of its integer arguments",
                 extremum("max", true)});
  out.push_back({"min", 1, 8, "min(a, b, ...) -> int", "the smallest of its integer arguments",
                 extremum("min", false)});
  out.push_back(MakeHelper(
      "option(\"name\") -> string",
      "a conversion option of the option table (rules/conversion_options.h) as text: "
      "\"target\", \"broadcast\" (rank or full), \"precision\" (fp32, fp16, bf16), \"fp16\"...",
      [](const HelperContext& c, std::string name) -> absl::StatusOr<std::string> {
        const ConvertOptions defaults;
        absl::StatusOr<std::string> value =
            GetOption(name, c.options != nullptr ? *c.options : defaults);
        if (!value.ok())
          return absl::InvalidArgumentError(absl::StrCat("option: ", value.status().message()));
        return value;
      }));
}

std::vector<Helper> MakeRegistry() {
  std::vector<Helper> out;
  AddValueHelpers(out);
  AddNodeHelpers(out);
  AddShapeHelpers(out);
  AddConvHelpers(out);
  std::sort(out.begin(), out.end(),
            [](const Helper& a, const Helper& b) { return a.name < b.name; });
  return out;
}

}  // namespace

const std::vector<Helper>& AllHelpers() {
  static const std::vector<Helper> registry = MakeRegistry();
  return registry;
}

absl::Status CheckLiteralArgument(std::string_view name, size_t index, const std::string& literal) {
  if (name == "option" && index == 0) {
    // A rule that asks for an option the table lacks would fail on every model.
    if (absl::Status s = GetOption(literal, ConvertOptions{}).status(); !s.ok()) {
      return absl::InvalidArgumentError(s.message());
    }
    return absl::OkStatus();
  }
  if ((name != "name_matches" && name != "op_matches") || index != 1) return absl::OkStatus();
  RE2 re(literal, RE2::Quiet);
  if (re.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("bad regex \"", literal, "\": ", re.error()));
}

const Helper* FindHelper(std::string_view name) {
  const auto& all = AllHelpers();
  auto it = std::lower_bound(all.begin(), all.end(), name,
                             [](const Helper& h, std::string_view n) { return h.name < n; });
  return it != all.end() && it->name == name ? &*it : nullptr;
}

std::string DescribeHelperValue(const HelperValue& v) {
  struct Visitor {
    std::string operator()(std::monostate) const { return "(absent)"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return absl::StrCat(i); }
    std::string operator()(double d) const { return absl::StrCat(d); }
    std::string operator()(const std::string& s) const { return absl::StrCat("\"", s, "\""); }
    std::string operator()(const std::vector<int64_t>& l) const {
      return absl::StrCat("[", absl::StrJoin(l, ", "), "]");
    }
    std::string operator()(const std::vector<double>& l) const {
      return absl::StrCat("[", absl::StrJoin(l, ", "), "]");
    }
    std::string operator()(Value* v) const { return absl::StrCat("'", v->name(), "'"); }
    std::string operator()(const ValueList& l) const {
      std::vector<std::string> names;
      for (Value* v : l) names.push_back(absl::StrCat("'", v->name(), "'"));
      return absl::StrCat("[", absl::StrJoin(names, ", "), "]");
    }
    std::string operator()(const Tensor& t) const { return DescribeTensor(t); }
    std::string operator()(const ConstantInPlace& c) const {
      return absl::StrCat("'", c.source->name(), "' as ", DescribeTensor(c.tensor));
    }
  };
  return std::visit(Visitor{}, v);
}

HelperValue FromAttribute(const onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT:
      return a.i();
    case A::FLOAT:
      return static_cast<double>(a.f());
    case A::STRING:
      return a.s();
    case A::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case A::FLOATS:
      return std::vector<double>(a.floats().begin(), a.floats().end());
    case A::TENSOR: {
      auto t = TensorFromProto(a.t());
      if (t.ok()) return *t;
      return std::monostate{};
    }
    default:
      return std::monostate{};
  }
}

absl::StatusOr<onnx::AttributeProto> ToAttribute(const std::string& name, const HelperValue& v) {
  using A = onnx::AttributeProto;
  A a;
  a.set_name(name);
  if (auto* i = std::get_if<int64_t>(&v)) {
    a.set_type(A::INT);
    a.set_i(*i);
  } else if (auto* b = std::get_if<bool>(&v)) {
    a.set_type(A::INT);
    a.set_i(*b ? 1 : 0);
  } else if (auto* d = std::get_if<double>(&v)) {
    a.set_type(A::FLOAT);
    a.set_f(static_cast<float>(*d));
  } else if (auto* s = std::get_if<std::string>(&v)) {
    a.set_type(A::STRING);
    a.set_s(*s);
  } else if (auto* ints = std::get_if<std::vector<int64_t>>(&v)) {
    a.set_type(A::INTS);
    for (int64_t x : *ints) a.add_ints(x);
  } else if (auto* floats = std::get_if<std::vector<double>>(&v)) {
    a.set_type(A::FLOATS);
    for (double x : *floats) a.add_floats(static_cast<float>(x));
  } else if (auto* t = std::get_if<Tensor>(&v)) {
    a.set_type(A::TENSOR);
    *a.mutable_t() = TensorToProto(*t);
  } else if (auto* c = std::get_if<ConstantInPlace>(&v)) {
    a.set_type(A::TENSOR);
    *a.mutable_t() = TensorToProto(c->tensor);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", name, "' cannot hold ", DescribeHelperValue(v)));
  }
  return a;
}

absl::StatusOr<DataType> DataTypeArg(std::string_view helper, Args args, size_t i) {
  if (auto* code = std::get_if<int64_t>(&args[i])) {
    if (!IsKnownDataType(static_cast<int32_t>(*code))) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(helper), ": unknown type code ", *code));
    }
    return static_cast<DataType>(*code);
  }
  OVFIX_ASSIGN_OR_RETURN(auto name, helper_internal::Arg<std::string>::Get(helper, args, i));
  for (int32_t code = 1; code <= 16; ++code) {
    if (DataTypeName(static_cast<DataType>(code)) == name) return static_cast<DataType>(code);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(helper), ": unknown type '", name, "'"));
}

absl::Status NotApplicable(std::string message) {
  return absl::FailedPreconditionError(std::move(message));
}

absl::StatusOr<Tensor> ConstantOf(const Value* v) {
  if (!IsConstant(v)) return NotApplicable(absl::StrCat(Quote(v), " is not a constant"));
  auto t = ConstantValue(v);
  if (!t.ok()) return NotApplicable(std::string(t.status().message()));
  if (t->type() == DataType::kString) {
    return NotApplicable(absl::StrCat(Quote(v), " holds strings"));
  }
  return t;
}

absl::StatusOr<int64_t> KnownRank(const Value* v) {
  if (v->rank() < 0) return NotApplicable(absl::StrCat("rank of ", Quote(v), " is unknown"));
  return v->rank();
}

absl::StatusOr<std::vector<int64_t>> KnownShape(const Value* v) {
  auto shape = v->static_shape();
  if (!shape) return NotApplicable(absl::StrCat("shape of ", Quote(v), " is not static"));
  return *shape;
}

absl::StatusOr<Node*> ProducerOf(const Value* v) {
  if (v->producer() == nullptr) {
    return NotApplicable(absl::StrCat(Quote(v), " is not produced by a node"));
  }
  return v->producer();
}

}  // namespace ovfix::rules
