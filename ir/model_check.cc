#include "ir/model_check.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "ir/data_type.h"
#include "ir/op_schemas.h"
#include "onnx/checker.h"

namespace ovfix {
namespace {

bool LacksType(int32_t elem_type) { return elem_type > static_cast<int32_t>(DataType::kBfloat16); }

bool TypeLacks(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      return LacksType(type.tensor_type().elem_type());
    case onnx::TypeProto::kSparseTensorType:
      return LacksType(type.sparse_tensor_type().elem_type());
    case onnx::TypeProto::kSequenceType:
      return TypeLacks(type.sequence_type().elem_type());
    case onnx::TypeProto::kOptionalType:
      return TypeLacks(type.optional_type().elem_type());
    case onnx::TypeProto::kMapType:
      return TypeLacks(type.map_type().value_type());
    default:
      return false;
  }
}

bool GraphLacks(const onnx::GraphProto& g);

bool NodeLacks(const onnx::NodeProto& n) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.has_t() && LacksType(a.t().data_type())) return true;
    if (a.has_g() && GraphLacks(a.g())) return true;
    for (const auto& sub : a.graphs()) {
      if (GraphLacks(sub)) return true;
    }
    // Cast's `to`, QuantizeLinear's `output_dtype`, BitCast's `to`.
    if ((a.name() == "to" || a.name() == "output_dtype") && a.type() == onnx::AttributeProto::INT &&
        a.i() > static_cast<int64_t>(DataType::kBfloat16)) {
      return true;
    }
  }
  return false;
}

bool GraphLacks(const onnx::GraphProto& g) {
  for (const auto& t : g.initializer()) {
    if (LacksType(t.data_type())) return true;
  }
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()}) {
    for (const auto& vi : *list) {
      if (vi.has_type() && TypeLacks(vi.type())) return true;
    }
  }
  for (const auto& n : g.node()) {
    if (NodeLacks(n)) return true;
  }
  return false;
}

}  // namespace

std::string UnsupportedVersions(
    int64_t ir_version,
    const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& opset_import) {
  if (ir_version > kLatestIrVersion) {
    return absl::StrCat("IR version ", ir_version, " is newer than ovfix reads (up to ",
                        kLatestIrVersion, ")");
  }
  for (const onnx::OperatorSetIdProto& o : opset_import) {
    const std::string& domain = o.domain();
    const bool onnx_domain = domain.empty() || domain == "ai.onnx";
    if (!onnx_domain && domain != "ai.onnx.ml") continue;
    const int latest = LatestOpset(domain);
    if (o.version() > latest) {
      return absl::StrCat("opset ", o.version(), " of ", onnx_domain ? "ai.onnx" : domain,
                          " is newer than ovfix knows (up to ", latest, ")");
    }
  }
  return "";
}

bool UsesTypesOnnxLibraryLacks(const onnx::ModelProto& model) {
  if (GraphLacks(model.graph())) return true;
  for (const auto& f : model.functions()) {
    for (const auto& n : f.node()) {
      if (NodeLacks(n)) return true;
    }
  }
  return false;
}

void CheckModelProto(const onnx::ModelProto& model) {
  if (model.ir_version() <= 0) fail_check("The model does not have an ir_version set properly.");
  if (std::string why = UnsupportedVersions(model.ir_version(), model.opset_import());
      !why.empty()) {
    fail_check(why);
  }
  std::unordered_set<std::string> keys;
  for (const onnx::StringStringEntryProto& entry : model.metadata_props()) {
    if (!keys.insert(entry.key()).second) {
      fail_check("Your model has duplicate keys in metadata_props.");
    }
  }
  std::unordered_map<std::string, int> opset_imports;
  for (const auto& o : model.opset_import()) {
    opset_imports[o.domain()] = static_cast<int>(o.version());
  }
  if (model.ir_version() >= 3 && opset_imports.empty()) {
    fail_check("model with IR version >= 3 must specify opset_import for ONNX");
  }
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(model.ir_version()));
  ctx.set_opset_imports(opset_imports);
  ctx.set_schema_registry(SchemaRegistry());
  onnx::checker::LexicalScopeContext lex;
  onnx::checker::check_graph(model.graph(), ctx, lex);
  if (model.ir_version() >= 8) onnx::checker::check_model_local_functions(model, ctx, lex);
}

}  // namespace ovfix
