#include "ir/op_schemas.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "onnx/defs/shape_inference.h"

namespace ovfix {
namespace {

std::string NormalDomain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string() : std::string(domain);
}

// LayerNormalization's inference (onnx 1.12) writes the dims of Mean and InvStdDev from `axis`
// on without checking it against the rank.
void CheckAxisOfFirstInput(onnx::InferenceContext& ctx, int64_t default_axis) {
  if (!onnx::hasInputShape(ctx, 0)) return;
  const int64_t rank = ctx.getInputType(0)->tensor_type().shape().dim_size();
  const onnx::AttributeProto* attribute = ctx.getAttribute("axis");
  const int64_t axis = attribute != nullptr ? attribute->i() : default_axis;
  if (axis < -rank || axis >= rank) {
    fail_shape_inference("axis ", axis, " is out of range for rank ", rank);
  }
}

// ovfix's schemas by (domain, op type), ascending by version.
class OwnSchemas {
 public:
  OwnSchemas() {
    AddChangedOpSchemas(all_);
    AddNewOpSchemas(all_);
    for (const auto& s : all_) by_op_[{s->domain(), s->Name()}].push_back(s.get());
    for (auto& [key, list] : by_op_) {
      std::sort(list.begin(), list.end(), [](const onnx::OpSchema* a, const onnx::OpSchema* b) {
        return a->since_version() < b->since_version();
      });
    }
  }
  const onnx::OpSchema* Find(const std::string& op_type, int opset,
                             const std::string& domain) const {
    auto it = by_op_.find(std::make_pair(domain, op_type));
    if (it == by_op_.end()) return nullptr;
    const onnx::OpSchema* found = nullptr;
    for (const onnx::OpSchema* s : it->second) {
      if (s->since_version() <= opset) found = s;
    }
    return found;
  }
  const std::vector<const onnx::OpSchema*>* Versions(const std::string& op_type,
                                                     const std::string& domain) const {
    auto it = by_op_.find(std::make_pair(domain, op_type));
    return it == by_op_.end() ? nullptr : &it->second;
  }
  const SchemaList& all() const { return all_; }

 private:
  SchemaList all_;
  absl::flat_hash_map<std::pair<std::string, std::string>, std::vector<const onnx::OpSchema*>>
      by_op_;
};

const OwnSchemas& Own() {
  static const OwnSchemas* const own = new OwnSchemas();
  return *own;
}

class Registry : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_inclusive_version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema = FindSchema(key, max_inclusive_version, domain);
    const bool layer_norm = NormalDomain(domain).empty() && key == "LayerNormalization";
    if (schema == nullptr || (!layer_norm && !schema->has_data_propagation_function())) {
      return schema;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<onnx::OpSchema>& guarded = guarded_[schema];
    if (guarded == nullptr) {
      guarded = std::make_unique<onnx::OpSchema>(*schema);
      if (layer_norm) {
        guarded->TypeAndShapeInferenceFunction(
            [infer = schema->GetTypeAndShapeInferenceFunction()](onnx::InferenceContext& ctx) {
              CheckAxisOfFirstInput(ctx, -1);
              infer(ctx);
            });
      }
      if (schema->has_data_propagation_function()) {
        // onnx 1.12's propagation through Shape reads its input's type without looking: an
        // input whose type inference could not make (a Reshape to a bad shape before it) would
        // crash it. Such a node propagates nothing.
        guarded->PartialDataPropagationFunction(
            [propagate = schema->GetDataPropagationFunction()](onnx::DataPropagationContext& ctx) {
              if (ctx.getNumInputs() > 0 && ctx.getInputType(0) == nullptr) return;
              propagate(ctx);
            });
      }
    }
    return guarded.get();
  }

 private:
  mutable std::mutex mutex_;
  mutable absl::flat_hash_map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
};

}  // namespace

int LatestOpset(std::string_view domain) {
  const std::string d = NormalDomain(domain);
  if (d.empty()) return kLatestOnnxOpset;
  if (d == "ai.onnx.ml") return kLatestMlOpset;
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(d);
  return it == map.end() ? -1 : it->second.second;
}

const onnx::OpSchema* FindSchema(std::string_view op_type, int opset, std::string_view domain) {
  const std::string d = NormalDomain(domain);
  const std::string op(op_type);
  const onnx::OpSchema* onnx_schema = onnx::OpSchemaRegistry::Schema(op, opset, d);
  const onnx::OpSchema* own = Own().Find(op, opset, d);
  if (own != nullptr &&
      (onnx_schema == nullptr || own->since_version() > onnx_schema->since_version())) {
    return own;
  }
  return onnx_schema;
}

std::vector<int> SchemaVersions(std::string_view op_type, std::string_view domain) {
  const std::string d = NormalDomain(domain);
  const std::string op(op_type);
  std::vector<int> versions;
  for (int v = 1; v <= kOnnxLibraryOpset + 10; ++v) {
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op, v, d);
    if (s != nullptr && (versions.empty() || versions.back() != s->since_version())) {
      versions.push_back(s->since_version());
    }
  }
  if (const auto* own = Own().Versions(op, d)) {
    for (const onnx::OpSchema* s : *own) versions.push_back(s->since_version());
  }
  std::sort(versions.begin(), versions.end());
  versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
  return versions;
}

std::vector<const onnx::OpSchema*> LatestSchemas() {
  std::map<std::pair<std::string, std::string>, const onnx::OpSchema*> latest;
  auto consider = [&](const onnx::OpSchema* s) {
    const onnx::OpSchema*& slot = latest[{s->domain(), s->Name()}];
    if (slot == nullptr || slot->since_version() < s->since_version()) slot = s;
  };
  static const std::vector<onnx::OpSchema> onnx_schemas = onnx::OpSchemaRegistry::get_all_schemas();
  for (const onnx::OpSchema& s : onnx_schemas) consider(&s);
  for (const auto& s : Own().all()) consider(s.get());
  std::vector<const onnx::OpSchema*> out;
  for (const auto& [key, s] : latest) out.push_back(s);
  return out;
}

const onnx::ISchemaRegistry* SchemaRegistry() {
  static const Registry* const registry = new Registry();
  return registry;
}

void InferSameRank(onnx::InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!onnx::hasInputShape(ctx, 0)) return;
  const int rank = ctx.getInputType(0)->tensor_type().shape().dim_size();
  auto* out = onnx::getOutputShape(ctx, 0);
  for (int i = 0; i < rank; ++i) out->add_dim();
}

void InferBroadcastOfTwo(onnx::InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!onnx::hasNInputShapes(ctx, 2)) return;
  onnx::bidirectionalBroadcastShapeInference(ctx.getInputType(0)->tensor_type().shape(),
                                             ctx.getInputType(1)->tensor_type().shape(),
                                             *onnx::getOutputShape(ctx, 0));
}

// ---- DerivedSchema ----

DerivedSchema::DerivedSchema(const onnx::OpSchema& base, std::string name, int version)
    : name_(std::move(name)),
      domain_(base.domain()),
      version_(version),
      inputs_(base.inputs()),
      outputs_(base.outputs()),
      attributes_(base.attributes()),
      types_(base.typeConstraintParams()),
      inference_(base.GetTypeAndShapeInferenceFunction()),
      data_propagation_(base.GetDataPropagationFunction()) {}

DerivedSchema& DerivedSchema::RemoveAttribute(const std::string& name) {
  attributes_.erase(name);
  return *this;
}

DerivedSchema& DerivedSchema::AddAttribute(onnx::OpSchema::Attribute attribute) {
  attributes_.erase(attribute.name);
  attributes_.emplace(attribute.name, std::move(attribute));
  return *this;
}

DerivedSchema& DerivedSchema::AddAttribute(const std::string& name,
                                           onnx::AttributeProto::AttributeType type,
                                           bool required) {
  return AddAttribute(onnx::OpSchema::Attribute(name, "", type, required));
}

DerivedSchema& DerivedSchema::AddIntAttribute(const std::string& name, int64_t default_value) {
  onnx::AttributeProto value;
  value.set_name(name);
  value.set_type(onnx::AttributeProto::INT);
  value.set_i(default_value);
  return AddAttribute(onnx::OpSchema::Attribute(name, "", std::move(value)));
}

DerivedSchema& DerivedSchema::AddStringAttribute(const std::string& name,
                                                 const std::string& default_value) {
  onnx::AttributeProto value;
  value.set_name(name);
  value.set_type(onnx::AttributeProto::STRING);
  value.set_s(default_value);
  return AddAttribute(onnx::OpSchema::Attribute(name, "", std::move(value)));
}

DerivedSchema& DerivedSchema::SetInput(int index, const std::string& name,
                                       const std::string& type_str,
                                       onnx::OpSchema::FormalParameterOption option) {
  onnx::OpSchema::FormalParameter p(name, "", type_str, option);
  if (index < static_cast<int>(inputs_.size())) {
    inputs_[static_cast<size_t>(index)] = std::move(p);
  } else {
    inputs_.push_back(std::move(p));
  }
  return *this;
}

DerivedSchema& DerivedSchema::SetOutput(int index, const std::string& name,
                                        const std::string& type_str,
                                        onnx::OpSchema::FormalParameterOption option) {
  onnx::OpSchema::FormalParameter p(name, "", type_str, option);
  if (index < static_cast<int>(outputs_.size())) {
    outputs_[static_cast<size_t>(index)] = std::move(p);
  } else {
    outputs_.push_back(std::move(p));
  }
  return *this;
}

DerivedSchema& DerivedSchema::SetTypes(const std::string& param, std::vector<std::string> types) {
  for (auto& t : types_) {
    if (t.type_param_str == param) {
      t.allowed_type_strs = std::move(types);
      return *this;
    }
  }
  types_.emplace_back(param, std::move(types), "");
  return *this;
}

DerivedSchema& DerivedSchema::AddBfloat16() {
  for (auto& t : types_) {
    auto& list = t.allowed_type_strs;
    const bool has_half = std::find(list.begin(), list.end(), "tensor(float16)") != list.end();
    const bool has_bf16 = std::find(list.begin(), list.end(), "tensor(bfloat16)") != list.end();
    if (has_half && !has_bf16) list.push_back("tensor(bfloat16)");
  }
  return *this;
}

DerivedSchema& DerivedSchema::Inference(onnx::InferenceFunction inference) {
  inference_ = std::move(inference);
  return *this;
}

DerivedSchema& DerivedSchema::InferenceBefore(std::function<void(onnx::InferenceContext&)> before) {
  inference_ = [before = std::move(before), base = inference_](onnx::InferenceContext& ctx) {
    before(ctx);
    if (base) base(ctx);
  };
  return *this;
}

std::unique_ptr<onnx::OpSchema> DerivedSchema::Build() const {
  auto schema = std::make_unique<onnx::OpSchema>();
  schema->SetName(name_).SetDomain(domain_).SinceVersion(version_);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const auto& p = inputs_[i];
    schema->Input(static_cast<int>(i), p.GetName(), "", p.GetTypeStr(), p.GetOption(),
                  p.GetIsHomogeneous(), p.GetMinArity(), p.GetDifferentiationCategory());
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const auto& p = outputs_[i];
    schema->Output(static_cast<int>(i), p.GetName(), "", p.GetTypeStr(), p.GetOption(),
                   p.GetIsHomogeneous(), p.GetMinArity(), p.GetDifferentiationCategory());
  }
  for (const auto& [name, a] : attributes_) schema->Attr(a);
  for (const auto& t : types_) {
    schema->TypeConstraint(t.type_param_str, t.allowed_type_strs, t.description);
  }
  if (inference_) schema->TypeAndShapeInferenceFunction(inference_);
  if (data_propagation_) schema->PartialDataPropagationFunction(data_propagation_);
  schema->Finalize();
  return schema;
}

}  // namespace ovfix
