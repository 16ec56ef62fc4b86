// Widened float16 (SessionOptions::widen_float16): a session that holds float16 values as
// float while running must give the same bits as one that runs them as float16 tensors, on
// outputs and on every captured value, including the corners where float16 constants meet
// widened values and where the graph's types are unknown (no widening then).
#include <cstring>
#include <random>

#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/text_form.h"

namespace ovfix::exec {
namespace {

// Float16 x and float f meet float16 constants (initializers added below: a Pad value, a
// Concat operand, a Gather table) and every kind of step: arithmetic whose results need
// rounding, value-moving ops, Casts both ways, CastLike, views.
constexpr char kMixed[] = R"(
  agraph (float16[2,3] x, float[2,3] f, int64[2] idx)
      => (float16[2,3] y, float[2,3] z, float16[2,7] p, float16[4,3] c, float16[2,3] g,
          float[2,3] back, float16[3,2] r, float16[2,3] like)
      <float16[2,3] s, float16[2,3] m, float16[2,3] e, float16[2,3] fh, float[2,3] xf,
       int64[4] pads, float16[2,3] relu, float16[2,3] big,
       float pad_value = {1.0001}, float[2,3] table = {0.1, -0.2, 0.3, 7.0001, 5.5, -1.25},
       int64[2] shape = {3, 2}> {
    s = Add(x, x)
    m = Mul(s, x)
    e = Exp(m)
    y = Div(e, s)
    fh = Cast<to = 10>(f)
    xf = Cast<to = 1>(x)
    z = Mul(xf, f)
    back = Cast<to = 1>(y)
    pads = Constant<value = int64[4] {0, 1, 0, 3}>()
    p = Pad(x, pads, pad_value)
    relu = Relu(m)
    c = Concat<axis = 0>(relu, table)
    g = Gather<axis = 0>(table, idx)
    big = Mul(fh, fh)
    r = Reshape(big, shape)
    like = CastLike(f, x)
  })";

Tensor RandomTensor(DataType type, std::vector<int64_t> dims, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  Tensor t(type, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = dist(rng) * 1.0001f;  // most values are not float16 values
    if (type == DataType::kFloat16) {
      t.data<uint16_t>()[i] = FloatToHalfBits(v);
    } else {
      t.data<float>()[i] = v;
    }
  }
  return t;
}

std::unique_ptr<Model> MixedModel() {
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(kMixed);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  // The text has float initializers; the graph wants them float16.
  for (const char* name : {"pad_value", "table"}) {
    Value* v = (*model)->graph().FindValue(name);
    EXPECT_NE(v, nullptr) << name;
    if (v != nullptr) v->set_tensor(ConvertTensor(v->tensor(), DataType::kFloat16));
  }
  return std::move(*model);
}

struct Result {
  std::vector<Tensor> outputs;
  TensorMap captured;
};

Result RunWith(const Model& model, bool widen, bool capture, const TensorMap& inputs) {
  SessionOptions options;
  options.widen_float16 = widen;
  options.capture = capture;
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<Session>> session = CreateSession(model, options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  return {*std::move(out), (*session)->captured()};
}

void ExpectSameBits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.type(), b.type()) << what;
  ASSERT_EQ(a.dims(), b.dims()) << what;
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << what;
}

TensorMap MixedInputs(std::mt19937& rng) {
  return {{"x", RandomTensor(DataType::kFloat16, {2, 3}, rng)},
          {"f", RandomTensor(DataType::kFloat, {2, 3}, rng)},
          {"idx", Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {1, 0})}};
}

TEST(WidenFloat16, SameBitsAsFloat16TensorsOnOutputsAndCapturedValues) {
  auto model = MixedModel();
  ASSERT_NE(model, nullptr);
  std::mt19937 rng(11);
  for (int trial = 0; trial < 5; ++trial) {
    const TensorMap inputs = MixedInputs(rng);
    for (bool capture : {false, true}) {
      const Result plain = RunWith(*model, false, capture, inputs);
      const Result widened = RunWith(*model, true, capture, inputs);
      ASSERT_EQ(plain.outputs.size(), 8u);
      ASSERT_EQ(widened.outputs.size(), plain.outputs.size());
      for (size_t i = 0; i < plain.outputs.size(); ++i) {
        ExpectSameBits(widened.outputs[i], plain.outputs[i], model->graph().outputs()[i]->name());
      }
      ASSERT_EQ(widened.captured.size(), plain.captured.size());
      for (const auto& [name, tensor] : plain.captured) {
        auto it = widened.captured.find(name);
        ASSERT_NE(it, widened.captured.end()) << name;
        ExpectSameBits(it->second, tensor, "captured " + name);
      }
    }
  }
}

TEST(WidenFloat16, OutputsKeepTheirDeclaredTypes) {
  auto model = MixedModel();
  ASSERT_NE(model, nullptr);
  std::mt19937 rng(3);
  const Result r = RunWith(*model, true, false, MixedInputs(rng));
  ASSERT_EQ(r.outputs.size(), model->graph().outputs().size());
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    EXPECT_EQ(r.outputs[i].type(), model->graph().outputs()[i]->elem_type())
        << model->graph().outputs()[i]->name();
  }
  // Captured float16 values come back as float16 too.
  const Result captured = RunWith(*model, true, true, MixedInputs(rng));
  EXPECT_EQ(captured.captured.at("m").type(), DataType::kFloat16);
}

TEST(WidenFloat16, GraphsWithUnknownTypesRunAsBefore) {
  // No value_info: the intermediate types are unknown, so the plan is not widened; the
  // result is the same either way.
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(R"(
    agraph (float16[4] x) => (float16[4] y) {
      t = Mul(x, x)
      y = Sqrt(t)
    })");
  ASSERT_TRUE(model.ok()) << model.status();
  std::mt19937 rng(5);
  const TensorMap inputs = {{"x", RandomTensor(DataType::kFloat16, {4}, rng)}};
  const Result plain = RunWith(**model, false, true, inputs);
  const Result widened = RunWith(**model, true, true, inputs);
  ASSERT_EQ(plain.outputs.size(), 1u);
  ASSERT_EQ(widened.outputs.size(), 1u);
  ExpectSameBits(widened.outputs[0], plain.outputs[0], "y");
  ExpectSameBits(widened.captured.at("t"), plain.captured.at("t"), "t");
}

}  // namespace
}  // namespace ovfix::exec
