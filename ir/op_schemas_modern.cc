// New versions, in opsets 18-26, of ops that onnx 1.12 knows: each derived from the version
// before it, with the changes the ONNX changelog lists. Types onnx 1.12 cannot name (float8,
// int4, float4, int2) are left out of the type constraints: ovfix's own checks cover them.
#include <string>
#include <vector>

#include "ir/op_schemas.h"
#include "onnx/defs/shape_inference.h"

namespace ovfix {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;

const onnx::OpSchema& OnnxSchema(const char* op, int version) {
  const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op, version, "");
  if (s == nullptr) throw std::logic_error(std::string("onnx 1.12 has no schema of ") + op);
  return *s;
}

void PropagateShape(InferenceContext& ctx, size_t from, size_t to) {
  if (onnx::hasInputShape(ctx, from)) onnx::propagateShapeFromInputToOutput(ctx, from, to);
}

// An element type given by an int attribute (Cast's `to`, QuantizeLinear's `output_dtype`):
// any TensorProto type up to int2, which onnx 1.12's own check would refuse past bfloat16.
bool ElementTypeFromAttribute(InferenceContext& ctx, const char* name, size_t output) {
  const AttributeProto* a = ctx.getAttribute(name);
  if (a == nullptr || a->i() == 0) return false;
  if (a->i() < 1 || a->i() > 26) {
    fail_type_inference("attribute ", name, " is not a valid element type: ", a->i());
  }
  onnx::updateOutputElemType(ctx, output, static_cast<int32_t>(a->i()));
  return true;
}

void CastInference(InferenceContext& ctx) {
  if (!ElementTypeFromAttribute(ctx, "to", 0)) fail_type_inference("Cast needs attribute 'to'");
  PropagateShape(ctx, 0, 0);
}

void QuantizeInference(InferenceContext& ctx) {
  if (!ElementTypeFromAttribute(ctx, "output_dtype", 0)) {
    if (ctx.getNumInputs() > 2 && ctx.getInputType(2) != nullptr) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 2, 0);
    } else {
      onnx::updateOutputElemType(ctx, 0, onnx::TensorProto::UINT8);
    }
  }
  PropagateShape(ctx, 0, 0);
}

void DequantizeInference(InferenceContext& ctx) {
  if (!ElementTypeFromAttribute(ctx, "output_dtype", 0)) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 1, 0);
  }
  PropagateShape(ctx, 0, 0);
}

// Resize with `axes` or `keep_aspect_ratio_policy` (opset 18): output dims onnx 1.12's
// inference would get wrong are left unknown; only the rank is known.
void ResizeInference(InferenceContext& ctx, const onnx::InferenceFunction& base) {
  const AttributeProto* axes = ctx.getAttribute("axes");
  const AttributeProto* policy = ctx.getAttribute("keep_aspect_ratio_policy");
  const bool simple = axes == nullptr && (policy == nullptr || policy->s() == "stretch");
  if (simple) {
    base(ctx);
    return;
  }
  InferSameRank(ctx);
}

// Split with `num_outputs` (opset 18): chunks of ceil(dim / n), the last one smaller.
void SplitInference(InferenceContext& ctx, const onnx::InferenceFunction& base) {
  const AttributeProto* n = ctx.getAttribute("num_outputs");
  if (n == nullptr) {
    base(ctx);
    return;
  }
  if (n->i() < 1 || static_cast<size_t>(n->i()) != ctx.getNumOutputs()) {
    fail_shape_inference("num_outputs ", n->i(), " differs from the node's ", ctx.getNumOutputs(),
                         " outputs");
  }
  for (size_t i = 0; i < ctx.getNumOutputs(); ++i) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, i);
  }
  if (!onnx::hasInputShape(ctx, 0)) return;
  const auto& shape = ctx.getInputType(0)->tensor_type().shape();
  const int rank = shape.dim_size();
  int64_t axis = onnx::getAttribute(ctx, "axis", 0);
  if (axis < -rank || axis >= rank) fail_shape_inference("axis ", axis, " out of range");
  if (axis < 0) axis += rank;
  const auto& split_dim = shape.dim(static_cast<int>(axis));
  for (size_t i = 0; i < ctx.getNumOutputs(); ++i) {
    auto* out = onnx::getOutputShape(ctx, i);
    *out = shape;
    out->mutable_dim(static_cast<int>(axis))->clear_dim_value();
    out->mutable_dim(static_cast<int>(axis))->clear_dim_param();
    if (split_dim.has_dim_value()) {
      const int64_t total = split_dim.dim_value();
      const int64_t chunk = (total + n->i() - 1) / n->i();
      const int64_t start = chunk * static_cast<int64_t>(i);
      out->mutable_dim(static_cast<int>(axis))
          ->set_dim_value(std::max<int64_t>(0, std::min(chunk, total - start)));
    }
  }
}

// Pad with `axes` (opset 18): without it, onnx 1.12's Pad-13 inference; with it, the rank.
void PadInference(InferenceContext& ctx, const onnx::InferenceFunction& base) {
  if (ctx.getNumInputs() <= 3 || ctx.getInputType(3) == nullptr) {
    base(ctx);
    return;
  }
  InferSameRank(ctx);
}

// GridSample-20: N-D; output [N, C, grid dims 1..n-2].
void GridSampleInference(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, 1)) return;
  const auto& x = ctx.getInputType(0)->tensor_type().shape();
  const auto& grid = ctx.getInputType(1)->tensor_type().shape();
  if (x.dim_size() < 3 || grid.dim_size() != x.dim_size()) {
    fail_shape_inference("GridSample: X and grid must have the same rank >= 3");
  }
  auto* out = onnx::getOutputShape(ctx, 0);
  *out->add_dim() = x.dim(0);
  *out->add_dim() = x.dim(1);
  for (int i = 1; i + 1 < grid.dim_size(); ++i) *out->add_dim() = grid.dim(i);
}

// DFT-20: axis and dft_length are inputs; output [..., n, 2] along `axis`.
void DftInference(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!onnx::hasInputShape(ctx, 0)) return;
  const auto& x = ctx.getInputType(0)->tensor_type().shape();
  auto* out = onnx::getOutputShape(ctx, 0);
  for (int i = 0; i + 1 < x.dim_size(); ++i) out->add_dim();
  out->add_dim()->set_dim_value(2);
}

struct Changed {
  const char* op;
  std::vector<int> versions;  // versions that change only types (each from the one before)
};

// Versions of opsets 18-26 that only widen types; opset 22 adds bfloat16.
const std::vector<Changed>& TypesOnlyVersions() {
  static const std::vector<Changed> kTable = {
      {"Constant", {19, 21, 23, 24, 25}},
      {"ConstantOfShape", {20, 21, 23, 24, 25}},
      {"Equal", {19}},
      {"Identity", {19, 21, 23, 24, 25}},
      {"If", {19, 21, 23, 24, 25}},
      {"Loop", {19, 21, 23, 24, 25}},
      {"Scan", {19, 21, 23, 24, 25}},
      {"Reshape", {19, 21, 23, 24, 25}},
      {"Shape", {19, 21, 23, 24, 25}},
      {"Size", {19, 21, 23, 24, 25}},
      {"Flatten", {21, 23, 24, 25}},
      {"Squeeze", {21, 23, 24, 25}},
      {"Unsqueeze", {21, 23, 24, 25}},
      {"Transpose", {21, 23, 24, 25}},
      {"Pad", {21, 23, 24, 25}},
      {"QLinearMatMul", {21}},
      {"IsInf", {20}},
      {"IsNaN", {20}},
      {"TopK", {24}},
      {"SplitToSequence", {24}},
      {"ScatterElements", {18}},
      {"ScatterND", {18}},
      {"OptionalGetElement", {18}},
      {"OptionalHasElement", {18}},
      {"Acos", {22}},
      {"Acosh", {22}},
      {"Asin", {22}},
      {"Asinh", {22}},
      {"Atan", {22}},
      {"Atanh", {22}},
      {"AveragePool", {22}},
      {"Bernoulli", {22}},
      {"Conv", {22}},
      {"ConvTranspose", {22}},
      {"Cos", {22}},
      {"Cosh", {22}},
      {"Det", {22}},
      {"Dropout", {22}},
      {"Elu", {22}},
      {"EyeLike", {22}},
      {"GRU", {22}},
      {"GlobalAveragePool", {22}},
      {"GlobalLpPool", {22}},
      {"GlobalMaxPool", {22}},
      {"HardSigmoid", {22}},
      {"HardSwish", {22}},
      {"InstanceNormalization", {22}},
      {"LSTM", {22}},
      {"LpNormalization", {22}},
      {"LpPool", {22}},
      {"MaxPool", {22}},
      {"MaxRoiPool", {22}},
      {"MaxUnpool", {22}},
      {"Multinomial", {22}},
      {"NegativeLogLikelihoodLoss", {22}},
      {"RNN", {22}},
      {"RandomNormal", {22}},
      {"RandomNormalLike", {22}},
      {"RandomUniform", {22}},
      {"RandomUniformLike", {22}},
      {"RoiAlign", {22}},
      {"Round", {22}},
      {"Selu", {22}},
      {"Sin", {22}},
      {"Sinh", {22}},
      {"Softplus", {22}},
      {"Softsign", {22}},
      {"Tan", {22}},
      {"ThresholdedRelu", {22}},
      {"GridSample", {22}},
  };
  return kTable;
}

// The schema of `op` at `version` - 1 or before: from `out` when ovfix made it, else onnx's.
const onnx::OpSchema& Previous(const SchemaList& out, const std::string& op, int version) {
  const onnx::OpSchema* best = onnx::OpSchemaRegistry::Schema(op, version - 1, "");
  for (const auto& s : out) {
    if (s->Name() == op && s->domain().empty() && s->since_version() < version &&
        (best == nullptr || s->since_version() > best->since_version())) {
      best = s.get();
    }
  }
  if (best == nullptr) throw std::logic_error("no schema before " + op);
  return *best;
}

void Add(SchemaList& out, const DerivedSchema& d) { out.push_back(d.Build()); }

}  // namespace

void AddChangedOpSchemas(SchemaList& out) {
  using onnx::OpSchema;
  // ---- opset 18 ----
  // Reduce*: `axes` moves from an attribute to an optional input, with noop_with_empty_axes:
  // ReduceSum-13's signature.
  const OpSchema& reduce_sum = OnnxSchema("ReduceSum", 13);
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                         "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare"}) {
    DerivedSchema d(reduce_sum, op, 18);
    const OpSchema& old = OnnxSchema(op, 17);
    for (const auto& t : old.typeConstraintParams())
      d.SetTypes(t.type_param_str, t.allowed_type_strs);
    Add(out, d);
  }
  {
    DerivedSchema d(OnnxSchema("Split", 13), "Split", 18);
    d.AddAttribute("num_outputs", AttributeProto::INT);
    d.Inference([base = OnnxSchema("Split", 13).GetTypeAndShapeInferenceFunction()](
                    InferenceContext& ctx) { SplitInference(ctx, base); });
    Add(out, d);
  }
  {
    DerivedSchema d(OnnxSchema("Pad", 13), "Pad", 18);
    d.SetInput(3, "axes", "Tind").SetTypes("Tind", {"tensor(int32)", "tensor(int64)"});
    d.Inference([base = OnnxSchema("Pad", 13).GetTypeAndShapeInferenceFunction()](
                    InferenceContext& ctx) { PadInference(ctx, base); });
    Add(out, d);
  }
  {
    DerivedSchema d(OnnxSchema("Resize", 13), "Resize", 18);
    d.AddIntAttribute("antialias", 0)
        .AddAttribute("axes", AttributeProto::INTS)
        .AddStringAttribute("keep_aspect_ratio_policy", "stretch");
    d.Inference([base = OnnxSchema("Resize", 13).GetTypeAndShapeInferenceFunction()](
                    InferenceContext& ctx) { ResizeInference(ctx, base); });
    Add(out, d);
  }
  Add(out, DerivedSchema(OnnxSchema("LpPool", 11), "LpPool", 18)
               .AddIntAttribute("ceil_mode", 0)
               .AddAttribute("dilations", AttributeProto::INTS));
  // ---- opset 19 ----
  Add(out, DerivedSchema(OnnxSchema("AveragePool", 11), "AveragePool", 19)
               .AddAttribute("dilations", AttributeProto::INTS));
  Add(out, DerivedSchema(Previous(out, "Pad", 19), "Pad", 19));        // mode "wrap"
  Add(out, DerivedSchema(Previous(out, "Resize", 19), "Resize", 19));  // half_pixel_symmetric
  for (int v : {19, 21, 23, 24, 25}) {
    DerivedSchema cast(Previous(out, "Cast", v), "Cast", v);
    DerivedSchema cast_like(Previous(out, "CastLike", v), "CastLike", v);
    cast.AddIntAttribute("saturate", 1).Inference(CastInference);
    cast_like.AddIntAttribute("saturate", 1);
    if (v >= 24) {
      cast.AddStringAttribute("round_mode", "up");
      cast_like.AddStringAttribute("round_mode", "up");
    }
    Add(out, cast);
    Add(out, cast_like);
  }
  for (int v : {19, 21, 23, 24, 25}) {
    DerivedSchema q(Previous(out, "QuantizeLinear", v), "QuantizeLinear", v);
    q.AddIntAttribute("saturate", 1).Inference(QuantizeInference);
    q.SetTypes("T1", {"tensor(float)", "tensor(float16)", "tensor(bfloat16)", "tensor(int32)"});
    DerivedSchema dq(Previous(out, "DequantizeLinear", v), "DequantizeLinear", v);
    dq.Inference(DequantizeInference);
    dq.SetOutput(0, "y", "T2")
        .SetTypes("T2", {"tensor(float)", "tensor(float16)", "tensor(bfloat16)"});
    dq.SetInput(1, "x_scale", "T2", OpSchema::Single);
    if (v >= 21) {
      q.AddIntAttribute("block_size", 0).AddIntAttribute("output_dtype", 0);
      dq.AddIntAttribute("block_size", 0);
    }
    if (v >= 23) {
      q.AddIntAttribute("precision", 0);
      q.SetInput(1, "y_scale", "T2", OpSchema::Single)
          .SetTypes("T2",
                    {"tensor(float)", "tensor(float16)", "tensor(bfloat16)", "tensor(int32)"});
      dq.AddIntAttribute("output_dtype", 0);
      dq.SetOutput(0, "y", "T3")
          .SetTypes("T3", {"tensor(float)", "tensor(float16)", "tensor(bfloat16)"});
    }
    Add(out, q);
    Add(out, dq);
  }
  // ---- opset 20 ----
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    DerivedSchema d(Previous(out, op, 20), op, 20);
    d.SetTypes("T", {"tensor(uint32)", "tensor(uint64)", "tensor(int32)", "tensor(int64)",
                     "tensor(float16)", "tensor(float)", "tensor(double)", "tensor(bfloat16)",
                     "tensor(uint8)", "tensor(int8)", "tensor(bool)"});
    Add(out, d);
  }
  {
    DerivedSchema d(OnnxSchema("GridSample", 16), "GridSample", 20);
    d.AddStringAttribute("mode", "linear").Inference(GridSampleInference);
    Add(out, d);
  }
  {
    DerivedSchema d(OnnxSchema("DFT", 17), "DFT", 20);
    d.RemoveAttribute("axis").SetInput(2, "axis", "tensor(int64)").Inference(DftInference);
    Add(out, d);
  }
  // ---- types only ----
  for (const Changed& c : TypesOnlyVersions()) {
    for (int v : c.versions) {
      DerivedSchema d(Previous(out, c.op, v), c.op, v);
      if (v >= 22) d.AddBfloat16();
      Add(out, d);
    }
  }
}

}  // namespace ovfix
