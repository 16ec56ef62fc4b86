// The op schemas ovfix checks and infers with: onnx 1.12's own (opsets up to 17, IR 8) and,
// for what ONNX added after it (op versions of opsets 18-26, ops new in them), ovfix's own,
// written from the ONNX specification (ir/op_schemas_modern.cc, ir/op_schemas_new_ops.cc).
// Every lookup of a schema in ovfix goes through FindSchema, so that a model at opset 18-26
// sees the version of each op that its opset selects.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "onnx/defs/schema.h"

namespace ovfix {

// The newest IR version and opsets ovfix reads and writes (what onnxruntime 1.30 accepts).
inline constexpr int64_t kLatestIrVersion = 13;
inline constexpr int kLatestOnnxOpset = 26;
inline constexpr int kLatestMlOpset = 5;
// What onnx 1.12, the installed library, knows.
inline constexpr int64_t kOnnxLibraryIrVersion = 8;
inline constexpr int kOnnxLibraryOpset = 17;

// The newest opset of `domain` ovfix knows ("" and "ai.onnx" the default domain); -1 for a
// domain it has no schemas of (a custom domain: any version).
int LatestOpset(std::string_view domain);

// The schema of `op_type` that opset `opset` of `domain` selects (the op's newest version not
// above it); nullptr when neither onnx 1.12 nor ovfix knows the op at that opset.
const onnx::OpSchema* FindSchema(std::string_view op_type, int opset, std::string_view domain);

// The versions ovfix knows of an op, ascending (onnx 1.12's and its own).
std::vector<int> SchemaVersions(std::string_view op_type, std::string_view domain);

// The newest schema of every op ovfix knows (for listings and name suggestions).
std::vector<const onnx::OpSchema*> LatestSchemas();

// The registry handed to onnx's checker and shape inference: FindSchema's answers, with a
// guard in front of the inference functions of onnx 1.12 that trust an attribute they index
// with (and crash on a bad one), so that such a node fails inference instead.
const onnx::ISchemaRegistry* SchemaRegistry();

// Builds a schema from an earlier one (a previous version of the op, or another op with the
// same signature): the same inputs, outputs, attributes, type constraints and inference unless
// an edit says otherwise. Type strings must be ones onnx 1.12 parses; the types it does not
// know (float8, int4, ...) are left out of constraints, and checks that involve them are
// ovfix's (ir/node_check.h).
class DerivedSchema {
 public:
  DerivedSchema(const onnx::OpSchema& base, std::string name, int version);
  DerivedSchema& RemoveAttribute(const std::string& name);
  DerivedSchema& AddAttribute(onnx::OpSchema::Attribute attribute);
  DerivedSchema& AddAttribute(const std::string& name, onnx::AttributeProto::AttributeType type,
                              bool required = false);
  DerivedSchema& AddIntAttribute(const std::string& name, int64_t default_value);
  DerivedSchema& AddStringAttribute(const std::string& name, const std::string& default_value);
  // Appends an optional input (or replaces input `index` when it exists).
  DerivedSchema& SetInput(int index, const std::string& name, const std::string& type_str,
                          onnx::OpSchema::FormalParameterOption option = onnx::OpSchema::Optional);
  DerivedSchema& SetOutput(int index, const std::string& name, const std::string& type_str,
                           onnx::OpSchema::FormalParameterOption option = onnx::OpSchema::Single);
  // Sets (or adds) type constraint `param`.
  DerivedSchema& SetTypes(const std::string& param, std::vector<std::string> types);
  // Adds tensor(bfloat16) to every constraint that has tensor(float16) (opset 22's change).
  DerivedSchema& AddBfloat16();
  DerivedSchema& Inference(onnx::InferenceFunction inference);
  // Runs `before` and then the base's inference.
  DerivedSchema& InferenceBefore(std::function<void(onnx::InferenceContext&)> before);
  std::unique_ptr<onnx::OpSchema> Build() const;

 private:
  std::string name_;
  std::string domain_;
  int version_;
  std::vector<onnx::OpSchema::FormalParameter> inputs_;
  std::vector<onnx::OpSchema::FormalParameter> outputs_;
  std::map<std::string, onnx::OpSchema::Attribute> attributes_;
  std::vector<onnx::OpSchema::TypeConstraintParam> types_;
  onnx::InferenceFunction inference_;
  onnx::DataPropagationFunction data_propagation_;
};

// Inference shared by ovfix's schemas: output 0 has input 0's type and rank, its dims unknown
// (an op whose output dims shapes alone do not tell); output 0 has input 0's type and the
// numpy broadcast of inputs 0 and 1's shapes.
void InferSameRank(onnx::InferenceContext& ctx);
void InferBroadcastOfTwo(onnx::InferenceContext& ctx);

// The schemas ovfix adds, by group; each appends to `out` (op_schemas_*.cc).
using SchemaList = std::vector<std::unique_ptr<onnx::OpSchema>>;
void AddChangedOpSchemas(SchemaList& out);  // new versions of ops onnx 1.12 knows
void AddNewOpSchemas(SchemaList& out);      // ops that opsets 18-26 added

}  // namespace ovfix
