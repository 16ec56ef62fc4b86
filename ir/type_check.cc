#include "ir/type_check.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "ir/data_type.h"
#include "ir/status_macros.h"

namespace ovfix {
namespace {

absl::Status Bad(const std::string& what, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", std::string(problem)));
}

absl::Status CheckElementType(int32_t elem_type, const std::string& what) {
  if (elem_type == 0) return Bad(what, "a tensor type without an element type");
  if (!IsKnownDataType(elem_type)) {
    return Bad(what, absl::StrCat("unknown element type ", elem_type));
  }
  return absl::OkStatus();
}

absl::Status CheckShape(const onnx::TensorShapeProto& shape, const std::string& what) {
  for (const auto& dim : shape.dim()) {
    if (dim.has_dim_value() && dim.dim_value() < 0) {
      return Bad(what, absl::StrCat("negative dim ", dim.dim_value()));
    }
  }
  return absl::OkStatus();
}

// An element type that may key a map: the integer types and string.
bool IsMapKeyType(int32_t t) {
  const DataType type = static_cast<DataType>(t);
  return IsKnownDataType(t) && (IsInteger(type) || type == DataType::kString);
}

absl::Status CheckNestedType(const onnx::TypeProto& type, const std::string& what, bool has,
                             std::string_view holder) {
  if (!has) return Bad(what, absl::StrCat(std::string(holder), " type without an element type"));
  return CheckTypeProto(type, what);
}

absl::Status CheckGraphTypes(const onnx::GraphProto& graph, bool main);

absl::Status CheckAttributeTypes(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    const std::string what =
        absl::StrCat("node '", node.name(), "' (", node.op_type(), ") attribute '", a.name(), "'");
    if (a.has_tp()) OVFIX_RETURN_IF_ERROR(CheckTypeProto(a.tp(), what));
    for (const onnx::TypeProto& tp : a.type_protos()) {
      OVFIX_RETURN_IF_ERROR(CheckTypeProto(tp, what));
    }
    if (a.has_g()) OVFIX_RETURN_IF_ERROR(CheckGraphTypes(a.g(), /*main=*/false));
    for (const onnx::GraphProto& g : a.graphs()) {
      OVFIX_RETURN_IF_ERROR(CheckGraphTypes(g, /*main=*/false));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckTypeProto(const onnx::TypeProto& type, const std::string& what) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      OVFIX_RETURN_IF_ERROR(CheckElementType(type.tensor_type().elem_type(), what));
      return CheckShape(type.tensor_type().shape(), what);
    case onnx::TypeProto::kSparseTensorType:
      OVFIX_RETURN_IF_ERROR(CheckElementType(type.sparse_tensor_type().elem_type(), what));
      return CheckShape(type.sparse_tensor_type().shape(), what);
    case onnx::TypeProto::kSequenceType:
      return CheckNestedType(type.sequence_type().elem_type(), what,
                             type.sequence_type().has_elem_type(), "a sequence");
    case onnx::TypeProto::kOptionalType:
      return CheckNestedType(type.optional_type().elem_type(), what,
                             type.optional_type().has_elem_type(), "an optional");
    case onnx::TypeProto::kMapType:
      if (!IsMapKeyType(type.map_type().key_type())) {
        return Bad(what, absl::StrCat("a map key type ", type.map_type().key_type(),
                                      " that is neither an integer type nor string"));
      }
      return CheckNestedType(type.map_type().value_type(), what, type.map_type().has_value_type(),
                             "a map");
    default:
      return Bad(what, "an empty type (neither tensor, sequence, map nor optional)");
  }
}

namespace {

absl::Status CheckGraphTypes(const onnx::GraphProto& graph, bool main) {
  const std::string in = graph.name().empty() ? "" : absl::StrCat(" of graph '", graph.name(), "'");
  // `type {}` (no kind) says no more than a missing type, as exporters write the outputs of
  // If branches; only the main graph's inputs must say what they take: shape inference reads
  // their types as given.
  // Likewise a tensor type without an element type (a shape known, the type not: how ovfix
  // itself writes such a value).
  auto check = [&](const onnx::ValueInfoProto& vi, const char* kind, bool required) {
    if (!vi.has_type()) return absl::OkStatus();
    const onnx::TypeProto& type = vi.type();
    const bool unknown = type.value_case() == onnx::TypeProto::VALUE_NOT_SET ||
                         (type.has_tensor_type() && type.tensor_type().elem_type() == 0);
    if (!required && unknown) {
      return type.has_tensor_type() ? CheckShape(type.tensor_type().shape(),
                                                 absl::StrCat(kind, " '", vi.name(), "'", in))
                                    : absl::OkStatus();
    }
    return CheckTypeProto(type, absl::StrCat(kind, " '", vi.name(), "'", in));
  };
  for (const auto& vi : graph.input()) OVFIX_RETURN_IF_ERROR(check(vi, "input", main));
  for (const auto& vi : graph.output()) OVFIX_RETURN_IF_ERROR(check(vi, "output", false));
  for (const auto& vi : graph.value_info()) {
    OVFIX_RETURN_IF_ERROR(check(vi, "value_info", false));
  }
  for (const auto& node : graph.node()) OVFIX_RETURN_IF_ERROR(CheckAttributeTypes(node));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckDeclaredTypes(const onnx::GraphProto& graph) {
  return CheckGraphTypes(graph, /*main=*/true);
}

absl::Status RequireInputTypes(const onnx::GraphProto& graph) {
  const std::string in = graph.name().empty() ? "" : absl::StrCat(" of graph '", graph.name(), "'");
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (!input.has_type()) {
      return Bad(absl::StrCat("input '", input.name(), "'", in), "no type");
    }
  }
  return absl::OkStatus();
}

}  // namespace ovfix
