// Ops that opsets 18-26 added, with their inference: output types and, where they follow
// from the inputs' shapes alone, output shapes.
#include <string>
#include <vector>

#include "ir/op_schemas.h"
#include "onnx/defs/shape_inference.h"

namespace ovfix {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;

const std::vector<std::string> kFloats = {"tensor(float)", "tensor(float16)", "tensor(double)",
                                          "tensor(bfloat16)"};
const std::vector<std::string> kInts = {"tensor(uint8)",  "tensor(uint16)", "tensor(uint32)",
                                        "tensor(uint64)", "tensor(int8)",   "tensor(int16)",
                                        "tensor(int32)",  "tensor(int64)"};

std::vector<std::string> Numbers() {
  std::vector<std::string> all = kFloats;
  all.insert(all.end(), kInts.begin(), kInts.end());
  return all;
}

// Output `to` has input `from`'s type and shape.
void SameAsInput(InferenceContext& ctx, size_t from = 0, size_t to = 0) {
  onnx::propagateElemTypeFromInputToOutput(ctx, from, to);
  if (onnx::hasInputShape(ctx, from)) onnx::propagateShapeFromInputToOutput(ctx, from, to);
}

void SameAsFirst(InferenceContext& ctx) { SameAsInput(ctx); }

std::unique_ptr<OpSchema> Unary(const char* name, int version, std::vector<std::string> types) {
  auto s = std::make_unique<OpSchema>();
  s->SetName(name).SetDomain("").SinceVersion(version);
  s->Input(0, "X", "", "T").Output(0, "Y", "", "T").TypeConstraint("T", std::move(types), "");
  s->TypeAndShapeInferenceFunction(SameAsFirst);
  return s;
}

std::unique_ptr<OpSchema> Begin(const char* name, int version) {
  auto s = std::make_unique<OpSchema>();
  s->SetName(name).SetDomain("").SinceVersion(version);
  return s;
}

void Finish(SchemaList& out, std::unique_ptr<OpSchema> s) {
  s->Finalize();
  out.push_back(std::move(s));
}

// Attention (23, 24): Y is [B, q_seq, q_heads * v_head] for 3-D Q, [B, q_heads, q_seq, v_head]
// for 4-D Q; the present key/value grow past ones by the new sequence.
void AttentionInference(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  for (size_t i = 1; i < ctx.getNumOutputs(); ++i) {
    onnx::propagateElemTypeFromInputToOutput(ctx, i == 2 ? 2 : 0, i);
  }
  if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, 2)) return;
  const auto& q = ctx.getInputType(0)->tensor_type().shape();
  const auto& v = ctx.getInputType(2)->tensor_type().shape();
  auto* y = onnx::getOutputShape(ctx, 0);
  if (q.dim_size() == 4 && v.dim_size() == 4) {
    *y->add_dim() = q.dim(0);
    *y->add_dim() = q.dim(1);
    *y->add_dim() = q.dim(2);
    *y->add_dim() = v.dim(3);
  } else if (q.dim_size() == 3) {
    *y->add_dim() = q.dim(0);
    *y->add_dim() = q.dim(1);
    auto* hidden = y->add_dim();
    const AttributeProto* q_heads = ctx.getAttribute("q_num_heads");
    const AttributeProto* kv_heads = ctx.getAttribute("kv_num_heads");
    if (v.dim_size() == 3 && q_heads != nullptr && kv_heads != nullptr && kv_heads->i() > 0 &&
        v.dim(2).has_dim_value()) {
      hidden->set_dim_value(v.dim(2).dim_value() / kv_heads->i() * q_heads->i());
    }
  } else {
    fail_shape_inference("Attention: Q must have rank 3 or 4");
  }
}

void AddAttention(SchemaList& out, int version) {
  auto s = Begin("Attention", version);
  s->Attr("is_causal", "", AttributeProto::INT, static_cast<int64_t>(0))
      .Attr("kv_num_heads", "", AttributeProto::INT, false)
      .Attr("q_num_heads", "", AttributeProto::INT, false)
      .Attr("qk_matmul_output_mode", "", AttributeProto::INT, static_cast<int64_t>(0))
      .Attr("scale", "", AttributeProto::FLOAT, false)
      .Attr("softcap", "", AttributeProto::FLOAT, 0.0f)
      .Attr("softmax_precision", "", AttributeProto::INT, false);
  s->Input(0, "Q", "", "T1").Input(1, "K", "", "T1").Input(2, "V", "", "T2");
  s->Input(3, "attn_mask", "", "U", OpSchema::Optional)
      .Input(4, "past_key", "", "T1", OpSchema::Optional)
      .Input(5, "past_value", "", "T2", OpSchema::Optional);
  if (version >= 24) s->Input(6, "nonpad_kv_seqlen", "", "tensor(int64)", OpSchema::Optional);
  if (version >= 25) {
    s->Attr("left_window_size", "", AttributeProto::INT, static_cast<int64_t>(-1))
        .Attr("right_window_size", "", AttributeProto::INT, static_cast<int64_t>(-1));
  }
  s->Output(0, "Y", "", "T1")
      .Output(1, "present_key", "", "T1", OpSchema::Optional)
      .Output(2, "present_value", "", "T2", OpSchema::Optional)
      .Output(3, "qk_matmul_output", "", "T1", OpSchema::Optional);
  std::vector<std::string> mask = Numbers();
  mask.push_back("tensor(bool)");
  s->TypeConstraint("T1", kFloats, "")
      .TypeConstraint("T2", kFloats, "")
      .TypeConstraint("U", mask, "");
  s->TypeAndShapeInferenceFunction(AttentionInference);
  Finish(out, std::move(s));
}

void AddNormalizations(SchemaList& out) {
  for (int version : {18, 21}) {
    auto s = Begin("GroupNormalization", version);
    s->Attr("epsilon", "", AttributeProto::FLOAT, 1e-5f)
        .Attr("num_groups", "", AttributeProto::INT, true);
    if (version >= 21) s->Attr("stash_type", "", AttributeProto::INT, static_cast<int64_t>(1));
    s->Input(0, "X", "", "T").Input(1, "scale", "", "T").Input(2, "bias", "", "T");
    s->Output(0, "Y", "", "T").TypeConstraint("T", kFloats, "");
    s->TypeAndShapeInferenceFunction(SameAsFirst);
    Finish(out, std::move(s));
  }
  {
    auto s = Begin("RMSNormalization", 23);
    s->Attr("axis", "", AttributeProto::INT, static_cast<int64_t>(-1))
        .Attr("epsilon", "", AttributeProto::FLOAT, 1e-5f)
        .Attr("stash_type", "", AttributeProto::INT, static_cast<int64_t>(1));
    s->Input(0, "X", "", "T").Input(1, "scale", "", "V").Output(0, "Y", "", "V");
    s->TypeConstraint("T", kFloats, "").TypeConstraint("V", kFloats, "");
    s->TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 1, 0);
      if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
    });
    Finish(out, std::move(s));
  }
  {
    auto s = Begin("RotaryEmbedding", 23);
    s->Attr("interleaved", "", AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("num_heads", "", AttributeProto::INT, false)
        .Attr("rotary_embedding_dim", "", AttributeProto::INT, static_cast<int64_t>(0));
    s->Input(0, "X", "", "T").Input(1, "cos_cache", "", "T").Input(2, "sin_cache", "", "T");
    s->Input(3, "position_ids", "", "M", OpSchema::Optional).Output(0, "Y", "", "T");
    s->TypeConstraint("T", kFloats, "").TypeConstraint("M", {"tensor(int64)"}, "");
    s->TypeAndShapeInferenceFunction(SameAsFirst);
    Finish(out, std::move(s));
  }
}

void AddActivations(SchemaList& out) {
  Finish(out, Unary("Mish", 18, {"tensor(float)", "tensor(float16)", "tensor(double)"}));
  Finish(out, Unary("Mish", 22, kFloats));
  {
    auto s = Unary("Gelu", 20, kFloats);
    s->Attr("approximate", "", AttributeProto::STRING, std::string("none"));
    Finish(out, std::move(s));
  }
  {
    auto s = Unary("Swish", 24, kFloats);
    s->Attr("alpha", "", AttributeProto::FLOAT, 1.0f);
    Finish(out, std::move(s));
  }
}

void AddBitwise(SchemaList& out) {
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    auto s = Begin(op, 18);
    s->Input(0, "A", "", "T").Input(1, "B", "", "T").Output(0, "C", "", "T");
    s->TypeConstraint("T", kInts, "");
    s->TypeAndShapeInferenceFunction(InferBroadcastOfTwo);
    Finish(out, std::move(s));
  }
  Finish(out, Unary("BitwiseNot", 18, kInts));
}

void AddSpatial(SchemaList& out) {
  {
    auto s = Begin("CenterCropPad", 18);
    s->Attr("axes", "", AttributeProto::INTS, false);
    s->Input(0, "input_data", "", "T")
        .Input(1, "shape", "", "Tind")
        .Output(0, "output_data", "", "T");
    std::vector<std::string> all = Numbers();
    all.push_back("tensor(bool)");
    all.push_back("tensor(string)");
    s->TypeConstraint("T", all, "").TypeConstraint("Tind", {"tensor(int32)", "tensor(int64)"}, "");
    s->TypeAndShapeInferenceFunction(InferSameRank);
    Finish(out, std::move(s));
  }
  {
    auto s = Begin("Col2Im", 18);
    s->Attr("dilations", "", AttributeProto::INTS, false)
        .Attr("pads", "", AttributeProto::INTS, false)
        .Attr("strides", "", AttributeProto::INTS, false);
    s->Input(0, "input", "", "T").Input(1, "image_shape", "", "tensor(int64)");
    s->Input(2, "block_shape", "", "tensor(int64)").Output(0, "output", "", "T");
    std::vector<std::string> all = Numbers();
    s->TypeConstraint("T", all, "");
    s->TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
      if (!onnx::hasInputShape(ctx, 1)) return;
      const auto& image = ctx.getInputType(1)->tensor_type().shape();
      if (image.dim_size() != 1 || !image.dim(0).has_dim_value()) return;
      auto* y = onnx::getOutputShape(ctx, 0);
      y->add_dim();
      y->add_dim();
      for (int64_t i = 0; i < image.dim(0).dim_value(); ++i) y->add_dim();
      if (onnx::hasInputShape(ctx, 0))
        *y->mutable_dim(0) = ctx.getInputType(0)->tensor_type().shape().dim(0);
    });
    Finish(out, std::move(s));
  }
  for (int version : {19, 22}) {
    auto s = Begin("DeformConv", version);
    s->Attr("dilations", "", AttributeProto::INTS, false)
        .Attr("group", "", AttributeProto::INT, static_cast<int64_t>(1))
        .Attr("kernel_shape", "", AttributeProto::INTS, false)
        .Attr("offset_group", "", AttributeProto::INT, static_cast<int64_t>(1))
        .Attr("pads", "", AttributeProto::INTS, false)
        .Attr("strides", "", AttributeProto::INTS, false);
    s->Input(0, "X", "", "T").Input(1, "W", "", "T").Input(2, "offset", "", "T");
    s->Input(3, "B", "", "T", OpSchema::Optional).Input(4, "mask", "", "T", OpSchema::Optional);
    s->Output(0, "Y", "", "T");
    s->TypeConstraint("T",
                      version >= 22 ? kFloats
                                    : std::vector<std::string>{"tensor(float)", "tensor(float16)",
                                                               "tensor(double)"},
                      "");
    s->TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      // Y's spatial dims are the offset's (it has one offset per output position).
      onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
      if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, 1) ||
          !onnx::hasInputShape(ctx, 2))
        return;
      const auto& x = ctx.getInputType(0)->tensor_type().shape();
      const auto& w = ctx.getInputType(1)->tensor_type().shape();
      const auto& offset = ctx.getInputType(2)->tensor_type().shape();
      auto* y = onnx::getOutputShape(ctx, 0);
      *y->add_dim() = x.dim(0);
      *y->add_dim() = w.dim(0);
      for (int i = 2; i < offset.dim_size(); ++i) *y->add_dim() = offset.dim(i);
    });
    Finish(out, std::move(s));
  }
  {
    auto s = Begin("AffineGrid", 20);
    s->Attr("align_corners", "", AttributeProto::INT, static_cast<int64_t>(0));
    s->Input(0, "theta", "", "T1").Input(1, "size", "", "T2").Output(0, "grid", "", "T1");
    s->TypeConstraint("T1", kFloats, "").TypeConstraint("T2", {"tensor(int64)"}, "");
    s->TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
      const onnx::TensorProto* size = ctx.getInputData(1);
      if (size == nullptr || size->int64_data_size() == 0) {
        if (!onnx::hasInputShape(ctx, 1)) return;
        const auto& s1 = ctx.getInputType(1)->tensor_type().shape();
        if (s1.dim_size() != 1 || !s1.dim(0).has_dim_value()) return;
        auto* grid = onnx::getOutputShape(ctx, 0);
        for (int64_t i = 0; i < s1.dim(0).dim_value(); ++i) grid->add_dim();
        return;
      }
      auto* grid = onnx::getOutputShape(ctx, 0);
      grid->add_dim()->set_dim_value(size->int64_data(0));
      for (int i = 2; i < size->int64_data_size(); ++i)
        grid->add_dim()->set_dim_value(size->int64_data(i));
      grid->add_dim()->set_dim_value(size->int64_data_size() - 2);
    });
    Finish(out, std::move(s));
  }
}

void AddDataOps(SchemaList& out) {
  {
    auto s = Begin("TensorScatter", 24);
    s->Attr("axis", "", AttributeProto::INT, static_cast<int64_t>(-2))
        .Attr("mode", "", AttributeProto::STRING, std::string("linear"));
    s->Input(0, "past_cache", "", "T").Input(1, "update", "", "T");
    s->Input(2, "write_indices", "", "tensor(int64)", OpSchema::Optional);
    s->Output(0, "present_cache", "", "T");
    std::vector<std::string> all = Numbers();
    all.push_back("tensor(bool)");
    s->TypeConstraint("T", all, "");
    s->TypeAndShapeInferenceFunction(SameAsFirst);
    Finish(out, std::move(s));
  }
  {
    auto s = Begin("CumProd", 26);
    s->Attr("exclusive", "", AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("reverse", "", AttributeProto::INT, static_cast<int64_t>(0));
    s->Input(0, "x", "", "T").Input(1, "axis", "", "T2").Output(0, "y", "", "T");
    s->TypeConstraint("T", Numbers(), "")
        .TypeConstraint("T2", {"tensor(int32)", "tensor(int64)"}, "");
    s->TypeAndShapeInferenceFunction(SameAsFirst);
    Finish(out, std::move(s));
  }
  {
    auto s = Begin("BitCast", 26);
    s->Attr("to", "", AttributeProto::INT, true);
    s->Input(0, "input", "", "T1").Output(0, "output", "", "T2");
    std::vector<std::string> all = Numbers();
    all.push_back("tensor(bool)");
    s->TypeConstraint("T1", all, "").TypeConstraint("T2", all, "");
    s->TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      const AttributeProto* to = ctx.getAttribute("to");
      if (to == nullptr || to->i() < 1 || to->i() > 26) fail_type_inference("BitCast: bad 'to'");
      onnx::updateOutputElemType(ctx, 0, static_cast<int32_t>(to->i()));
      if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
    });
    Finish(out, std::move(s));
  }
}

void AddStringOps(SchemaList& out) {
  {
    auto s = Begin("StringConcat", 20);
    s->Input(0, "X", "", "T").Input(1, "Y", "", "T").Output(0, "Z", "", "T");
    s->TypeConstraint("T", {"tensor(string)"}, "");
    s->TypeAndShapeInferenceFunction(InferBroadcastOfTwo);
    Finish(out, std::move(s));
  }
  {
    auto s = Begin("RegexFullMatch", 20);
    s->Attr("pattern", "", AttributeProto::STRING, false);
    s->Input(0, "X", "", "T1").Output(0, "Y", "", "T2");
    s->TypeConstraint("T1", {"tensor(string)"}, "").TypeConstraint("T2", {"tensor(bool)"}, "");
    s->TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::updateOutputElemType(ctx, 0, onnx::TensorProto::BOOL);
      if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
    });
    Finish(out, std::move(s));
  }
  {
    auto s = Begin("StringSplit", 20);
    s->Attr("delimiter", "", AttributeProto::STRING, false)
        .Attr("maxsplit", "", AttributeProto::INT, false);
    s->Input(0, "X", "", "T1").Output(0, "Y", "", "T2").Output(1, "Z", "", "T3");
    s->TypeConstraint("T1", {"tensor(string)"}, "")
        .TypeConstraint("T2", {"tensor(string)"}, "")
        .TypeConstraint("T3", {"tensor(int64)"}, "");
    s->TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::updateOutputElemType(ctx, 0, onnx::TensorProto::STRING);
      onnx::updateOutputElemType(ctx, 1, onnx::TensorProto::INT64);
      if (!onnx::hasInputShape(ctx, 0)) return;
      const auto& x = ctx.getInputType(0)->tensor_type().shape();
      auto* y = onnx::getOutputShape(ctx, 0);
      *y = x;
      y->add_dim();
      *onnx::getOutputShape(ctx, 1) = x;
    });
    Finish(out, std::move(s));
  }
  {
    auto s = Begin("ImageDecoder", 20);
    s->Attr("pixel_format", "", AttributeProto::STRING, std::string("RGB"));
    s->Input(0, "encoded_stream", "", "T1").Output(0, "image", "", "T2");
    s->TypeConstraint("T1", {"tensor(uint8)"}, "").TypeConstraint("T2", {"tensor(uint8)"}, "");
    s->TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::updateOutputElemType(ctx, 0, onnx::TensorProto::UINT8);
      auto* y = onnx::getOutputShape(ctx, 0);
      for (int i = 0; i < 3; ++i) y->add_dim();
    });
    Finish(out, std::move(s));
  }
}

}  // namespace

void AddNewOpSchemas(SchemaList& out) {
  AddNormalizations(out);
  AddActivations(out);
  AddBitwise(out);
  AddSpatial(out);
  AddDataOps(out);
  AddStringOps(out);
  AddAttention(out, 23);
  AddAttention(out, 24);
  AddAttention(out, 25);
}

}  // namespace ovfix
