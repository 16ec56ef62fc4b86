#include "rules/passes/fix_input_shapes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/status_macros.h"
#include "ir/type_proto_dims.h"
#include "rules/light_proto.h"

namespace ovfix::rules {
namespace {

// The dims an input gets, or nullopt when it keeps its type. Symbolic dims that no option
// sets keep their names.
absl::StatusOr<std::optional<std::vector<Dim>>> NewDims(const Value& v, const ConvertOptions& o) {
  std::optional<std::vector<Dim>> declared = v.shape();
  auto it = o.input_shapes.find(v.name());
  if (it == o.input_shapes.end()) {
    if (o.batch <= 0 || !declared || declared->empty() || (*declared)[0].known()) {
      return std::nullopt;
    }
    std::vector<Dim> dims = *declared;
    dims[0] = Dim{o.batch, ""};
    return dims;
  }
  const std::vector<int64_t>& given = it->second;
  const std::string option =
      absl::StrCat("--input-shape ", v.name(), "=", absl::StrJoin(given, "x"));
  if (declared && declared->size() != given.size()) {
    return absl::InvalidArgumentError(absl::StrCat(option, ": the input has rank ",
                                                   declared->size(), " (", DescribeType(v), ")"));
  }
  std::vector<Dim> dims;
  bool changes = !declared.has_value();
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i] < 0) return absl::InvalidArgumentError(absl::StrCat(option, ": negative dim"));
    if (declared && (*declared)[i].known() && (*declared)[i].value != given[i]) {
      return absl::InvalidArgumentError(absl::StrCat(option, ": dim ", i, " is ",
                                                     (*declared)[i].value, " in the model (",
                                                     DescribeType(v), ")"));
    }
    changes = changes || !(*declared)[i].known();
    dims.push_back(Dim{given[i], ""});
  }
  if (!changes) return std::nullopt;
  return dims;
}

onnx::TypeProto WithDims(const onnx::TypeProto& type, const std::vector<Dim>& dims) {
  onnx::TypeProto out = type;
  SetTypeProtoDims(dims, out);
  return out;
}

}  // namespace

absl::StatusOr<int> FixInputShapes(PassContext& ctx) {
  const ConvertOptions& o = ctx.options;
  if (o.batch <= 0 && o.input_shapes.empty()) return 0;
  Graph& g = ctx.model.graph();
  for (const auto& [name, dims] : o.input_shapes) {
    const Value* v = g.FindValue(name);
    if (v == nullptr || !v->is_graph_input() || v->is_initializer()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input-shape ", name, ": the model has no input '", name, "'"));
    }
  }
  int changed = 0;
  for (Value* v : g.inputs()) {
    if (v->is_initializer() || !v->is_tensor()) continue;
    OVFIX_ASSIGN_OR_RETURN(std::optional<std::vector<Dim>> dims, NewDims(*v, o));
    if (!dims.has_value()) continue;
    ctx.rewriter.Begin(kFixInputShapes);
    const onnx::TypeProto type = WithDims(v->type(), *dims);
    ctx.rewriter.SetType(v, type);
    if (FinishRewrite(ctx)) ++changed;
    ctx.rewriter.records().back().note =
        absl::StrCat("input '", v->name(), "' is now ", DescribeType(*v));
  }
  if (changed == 0) return 0;
  OVFIX_RETURN_IF_ERROR(InferTypes(ctx));
  ctx.log(absl::StrCat(kFixInputShapes, ": fixed the shape of ", changed, " input(s)"));
  return changed;
}

}  // namespace ovfix::rules
