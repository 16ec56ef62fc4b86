// The structural promises of the tensorrt and openvino-gpu targets, checked in every graph of
// the written model (If/Loop/Scan bodies included) on small models of the kinds real exports
// are: transformer blocks whose Reshape shapes are computed by Shape -> Gather -> Concat with
// an attention mask and dynamic batch and sequence, opset-9 style models with every dim
// dynamic, rank-0 constants (Pow(x, 2.0), Mul(x, 0.5)), and rules inside If and Loop bodies;
// plus silero_vad (the whole network inside an If) with every target. Each conversion must
// also keep the outputs (the pipeline's end-to-end comparison on its reference run, and a
// run of the written file on fresh inputs).
#include <filesystem>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "converter/target.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

const std::set<std::string>& Elementwise() {
  static const std::set<std::string> kOps = {
      "Add",   "Sub",   "Mul",     "Div",         "Pow",     "Mod",
      "Where", "Equal", "Less",    "LessOrEqual", "Greater", "GreaterOrEqual",
      "And",   "Or",    "Xor",     "Max",         "Min",     "Sum",
      "Mean",  "PRelu", "BitShift"};
  return kOps;
}

fs::path TempPath(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ovfix_promises_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// Converts, saves and loads back: the promises are about the file ovfix wrote.
std::unique_ptr<Model> ConvertAndReload(Model& model, PipelineOptions options,
                                        const std::string& name) {
  auto report = ConvertModel(model, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return nullptr;
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  const std::string path = TempPath(name + ".onnx").string();
  EXPECT_TRUE(SaveModel(model, path).ok());
  auto written = LoadModel(path);
  EXPECT_TRUE(written.ok()) << written.status();
  return written.ok() ? *std::move(written) : nullptr;
}

// tensorrt: every element-wise node of every graph reads inputs of its output's rank, and
// that rank is known from the file.
void ExpectEqualRanks(Model& m) {
  int checked = 0;
  for (Graph* g : GraphsRecursive(m.graph())) {
    for (const Node* n : g->nodes()) {
      if (!Elementwise().contains(n->op_type())) continue;
      ++checked;
      const int rank = n->output(0)->rank();
      EXPECT_GE(rank, 0) << n->Describe() << ": output rank unknown in the written file";
      for (const Value* in : n->inputs()) {
        if (in == nullptr) continue;
        EXPECT_EQ(in->rank(), rank) << n->Describe() << " input '" << in->name() << "'";
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// openvino-gpu with fixed input shapes: no shape computation left, every Reshape a constant
// shape without 0 or -1, every Squeeze/Unsqueeze explicit axes, in every graph.
// `shape_ops_in_bodies`: Shape/Size may stay inside bodies (silero_vad's LSTM bodies read
// shapes that neither inference nor the reference run, which captures the main graph only,
// knows).
void ExpectNothingDynamic(Model& m, bool shape_ops_in_bodies = false) {
  static const std::set<std::string> kShapeOps = {"Shape", "Size"};
  for (Graph* g : GraphsRecursive(m.graph())) {
    for (const Node* n : g->nodes()) {
      if (g == &m.graph() || !shape_ops_in_bodies) {
        EXPECT_FALSE(kShapeOps.contains(n->op_type())) << n->Describe() << " is left";
      }
      if (n->op_type() == "Squeeze" || n->op_type() == "Unsqueeze") {
        EXPECT_TRUE(n->input(1) != nullptr || n->HasAttribute("axes")) << n->Describe();
      }
      if (n->op_type() != "Reshape") continue;
      const Value* shape = n->input(1);
      ASSERT_TRUE(shape != nullptr && shape->is_initializer()) << n->Describe();
      for (int64_t i = 0; i < shape->tensor().numel(); ++i) {
        EXPECT_GT(shape->tensor().GetAsInt64(i), 0) << n->Describe();
      }
    }
  }
}

// Inputs of the given shapes (symbolic dims must be given), floats in [-2, 2], ints in [1, 3].
exec::TensorMap Inputs(const Graph& g, const std::map<std::string, std::vector<int64_t>>& dims) {
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> real(-2, 2);
  exec::TensorMap out;
  for (const Value* v : g.inputs()) {
    if (v->is_initializer()) continue;
    std::vector<int64_t> d = dims.count(v->name()) ? dims.at(v->name()) : *v->static_shape();
    Tensor t(v->elem_type(), d);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.type() == DataType::kFloat) t.data<float>()[i] = real(rng);
      if (t.type() == DataType::kBool) t.data<uint8_t>()[i] = static_cast<uint8_t>(i % 2);
      if (t.type() == DataType::kInt64) t.data<int64_t>()[i] = 1 + static_cast<int64_t>(i % 3);
    }
    out[v->name()] = std::move(t);
  }
  return out;
}

// The written model computes what the original computes (rel. 1e-5 of each output's range).
void ExpectSameOutputs(const Model& original, const Model& written, const exec::TensorMap& in) {
  auto a = exec::CreateSession(original, {});
  auto b = exec::CreateSession(written, {});
  ASSERT_TRUE(a.ok() && b.ok());
  auto expected = (*a)->Run(in);
  auto actual = (*b)->Run(in);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_TRUE(actual.ok()) << actual.status();
  ASSERT_EQ(expected->size(), actual->size());
  for (size_t i = 0; i < actual->size(); ++i) {
    EXPECT_LE(exec::RelativeError((*actual)[i], (*expected)[i]), 1e-5) << "output " << i;
  }
}

struct TextCase {
  std::string name;
  std::string text;
  std::map<std::string, std::vector<int64_t>> shapes;  // for symbolic inputs
};

// A pre-LN transformer block: LayerNorm written out (Pow(d, 2.0), + eps), a projection,
// Mul(h, 0.5), heads split by a Reshape whose shape is Shape -> Gather -> Concat, an
// additive attention mask (1 - mask) * -10000 unsqueezed to the scores' rank.
const TextCase kTransformer = {"transformer",
                               R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,S,8] x, float[N,S] mask) => (float[N,S,8] y)
  <float[8] gamma = {1, 2, 3, 4, 5, 6, 7, 8}, float[8] beta = {0, 1, 0, 1, 0, 1, 0, 1},
   int64[1] i0 = {0}, int64[1] i1 = {1}, int64[1] heads = {2}, int64[1] hd = {4},
   int64[1] hidden = {8}, int64[2] last = {2, 3}> {
  mu = ReduceMean<axes = [-1]>(x)
  d = Sub(x, mu)
  two = Constant<value = float {2.0}>()
  sq = Pow(d, two)
  var = ReduceMean<axes = [-1]>(sq)
  eps = Constant<value = float {0.00001}>()
  ve = Add(var, eps)
  sd = Sqrt(ve)
  nrm = Div(d, sd)
  scaled = Mul(nrm, gamma)
  h = Add(scaled, beta)
  half = Constant<value = float {0.5}>()
  hh = Mul(h, half)
  s = Shape(hh)
  b = Gather<axis = 0>(s, i0)
  t = Gather<axis = 0>(s, i1)
  split = Concat<axis = 0>(b, t, heads, hd)
  r = Reshape(hh, split)
  one = Constant<value = float {1.0}>()
  inv = Sub(one, mask)
  big = Constant<value = float {-10000.0}>()
  neg = Mul(inv, big)
  m3 = Unsqueeze(neg, last)
  scores = Add(r, m3)
  p = Softmax<axis = -1>(scores)
  back = Concat<axis = 0>(b, t, hidden)
  y = Reshape(p, back)
}
)",
                               {{"x", {2, 5, 8}}, {"mask", {2, 5}}}};

// A paddle2onnx-style opset-9 model: every dim dynamic, a scalar and a rank-1 constant,
// Shape -> Gather -> Unsqueeze -> Concat feeding a Reshape with -1, attribute axes.
const TextCase kPaddle = {"paddle_opset9",
                          R"(
<ir_version: 4, opset_import: ["" : 9]>
g (float[p,q,r,s] x) => (float[p,q,r,s] y) <float[1] c = {0.5}, float b = {1.0}> {
  m = Mul(x, c)
  a = Add(m, b)
  s0 = Shape(a)
  i = Constant<value = int64 {0}>()
  d0 = Gather<axis = 0>(s0, i)
  u0 = Unsqueeze<axes = [0]>(d0)
  minus = Constant<value = int64[1] {-1}>()
  flat_shape = Concat<axis = 0>(u0, minus)
  f = Reshape(a, flat_shape)
  th = Tanh(f)
  back = Reshape(th, s0)
  two = Constant<value = float {2.0}>()
  pw = Pow(back, two)
  y = Sub(pw, b)
}
)",
                          {{"x", {2, 3, 4, 5}}}};

// Rules inside an If (a scalar Mul, a Squeeze without axes, a computed Reshape) and inside a
// Loop body (a rank-1 value added to the carried tensor, Pow with a scalar).
const TextCase kNested = {"nested",
                          R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N,1,6] x, bool c, float[6] v) => (float[N,6] y, float[N,6] z) <int64[1] one_axis = {1}> {
  y = If(c) <then_branch = then_g () => (float[N,6] a) <int64[1] k0 = {0}, int64[1] k6 = {6}> {
      half = Constant<value = float {0.5}>()
      xs = Mul(x, half)
      sq = Squeeze(xs)
      sh = Shape(x)
      n0 = Gather<axis = 0>(sh, k0)
      target = Concat<axis = 0>(n0, k6)
      a = Reshape(sq, target)
    },
    else_branch = else_g () => (float[N,6] e) <int64[1] k1 = {1}> { e = Squeeze(x, k1) }>
  trip = Constant<value = int64 {2}>()
  go = Constant<value = bool {1}>()
  init = Squeeze(x, one_axis)
  z = Loop(trip, go, init) <body = body_g (int64 i, bool c_in, float[N,6] acc) => (bool c_out, float[N,6] next) {
    c_out = Identity(c_in)
    two = Constant<value = float {2.0}>()
    p = Pow(acc, two)
    quarter = Constant<value = float {0.25}>()
    q = Mul(p, quarter)
    next = Add(q, v)
  }>
}
)",
                          {{"x", {2, 1, 6}}}};

std::unique_ptr<Model> Parse(const TextCase& c) {
  auto m = ParseModelText(c.text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

PipelineOptions Options(const std::string& target) {
  PipelineOptions o;
  o.convert.target = target;
  return o;
}

class TextModelPromises : public ::testing::TestWithParam<TextCase> {};

TEST_P(TextModelPromises, TensorrtEqualRanksEverywhere) {
  const TextCase& c = GetParam();
  auto original = Parse(c);
  auto model = Parse(c);
  ASSERT_TRUE(original && model);
  auto written = ConvertAndReload(*model, Options("tensorrt"), c.name + "_trt");
  ASSERT_NE(written, nullptr);
  ExpectEqualRanks(*written);
  ExpectSameOutputs(*original, *written, Inputs(original->graph(), c.shapes));
}

TEST_P(TextModelPromises, OpenvinoFixedShapesLeaveNothingDynamic) {
  const TextCase& c = GetParam();
  auto original = Parse(c);
  auto model = Parse(c);
  ASSERT_TRUE(original && model);
  PipelineOptions o = Options("openvino-gpu");
  o.convert.input_shapes = c.shapes;
  o.set_by_user.insert("input_shape");
  // The promises are structural; fp16 is not their matter (with random inputs the
  // transformer's -10000 mask leaves fp16 nothing of its scores): validated as typed, fp32.
  o.convert.islands_honoured = true;
  o.set_by_user.insert("islands_honoured");
  auto written = ConvertAndReload(*model, o, c.name + "_ov");
  ASSERT_NE(written, nullptr);
  ExpectNothingDynamic(*written);
  ExpectSameOutputs(*original, *written, Inputs(original->graph(), c.shapes));
}

INSTANTIATE_TEST_SUITE_P(Models, TextModelPromises,
                         ::testing::Values(kTransformer, kPaddle, kNested),
                         [](const ::testing::TestParamInfo<TextCase>& info) {
                           return info.param.name;
                         });

// ---- shapes that depend on data ----

// NonZero's output and a Loop with a trip count read from the input: nothing can fix their
// shapes. The conversion succeeds, keeps the outputs and names what stayed dynamic.
TEST(DataDependentShapes, ConversionNamesWhatStayedDynamic) {
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x, int64 n) => (int64[2,K] idx, float[M,3] rows) {
  idx = NonZero(x)
  go = Constant<value = bool {1}>()
  last, rows = Loop(n, go, x) <body = b (int64 i, bool c, float[2,3] acc) => (bool c2, float[2,3] acc2, float[3] row) {
    c2 = Identity(c)
    acc2 = Identity(acc)
    k0 = Constant<value = int64 {0}>()
    row = Gather<axis = 0>(acc, k0)
  }>
}
)";
  for (const char* target : {"tensorrt", "openvino-gpu"}) {
    SCOPED_TRACE(target);
    auto model = ParseModelText(text);
    ASSERT_TRUE(model.ok()) << model.status();
    PipelineOptions o = Options(target);
    o.convert.input_shapes = {{"x", {2, 3}}};
    o.set_by_user.insert("input_shape");
    auto report = ConvertModel(**model, o);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
    std::string dynamic;
    for (const std::string& v : report->dynamic_values) dynamic += v + "; ";
    EXPECT_NE(dynamic.find("idx (NonZero)"), std::string::npos) << dynamic;
    EXPECT_NE(dynamic.find("rows (Loop)"), std::string::npos) << dynamic;
    EXPECT_NE(SummaryTable(*report).find("stayed dynamic"), std::string::npos);
  }
}

// ---- silero_vad: the whole network inside an If ----

std::string SileroPath() { return std::string(OVFIX_SHARED_DIR) + "/models/silero_vad/model.onnx"; }

// Without validation: each rewrite inside a body is validated by a run of the whole model,
// which for silero's hundreds of body rewrites is minutes. The outputs are checked here
// instead, on the model's test inputs (sr = 16000 picks the branch it is used with).
PipelineOptions SileroOptions(const std::string& target) {
  PipelineOptions o = Options(target);
  o.convert.validate = false;
  return o;
}

void ExpectSileroOutputsKept(const Model& written) {
  auto original = LoadModel(SileroPath());
  ASSERT_TRUE(original.ok());
  const std::string data = std::string(OVFIX_SHARED_DIR) + "/models/silero_vad/test_data_set_0/";
  exec::TensorMap inputs;
  const char* names[] = {"input", "state", "sr"};
  for (int k = 0; k < 3; ++k) {
    auto t = ReadTensorFile(absl::StrCat(data, "input_", k, ".pb"));
    ASSERT_TRUE(t.ok()) << t.status();
    inputs[names[k]] = *std::move(t);
  }
  ExpectSameOutputs(**original, written, inputs);
}

TEST(SileroVad, TensorrtEqualRanksInEveryBody) {
  if (!fs::exists(SileroPath())) GTEST_SKIP() << "no silero_vad in ../shared";
  auto model = LoadModel(SileroPath());
  ASSERT_TRUE(model.ok());
  auto written = ConvertAndReload(**model, SileroOptions("tensorrt"), "silero_trt");
  ASSERT_NE(written, nullptr);
  ExpectEqualRanks(*written);
  ExpectSileroOutputsKept(*written);
}

TEST(SileroVad, OpenvinoFixedShapesGiveStaticReshapesAndSqueezesInEveryBody) {
  if (!fs::exists(SileroPath())) GTEST_SKIP() << "no silero_vad in ../shared";
  auto model = LoadModel(SileroPath());
  ASSERT_TRUE(model.ok());
  PipelineOptions o = SileroOptions("openvino-gpu");
  o.convert.input_shapes = {{"input", {1, 512}}, {"state", {2, 1, 128}}};
  o.set_by_user.insert("input_shape");
  auto written = ConvertAndReload(**model, o, "silero_ov");
  ASSERT_NE(written, nullptr);
  ExpectNothingDynamic(*written, /*shape_ops_in_bodies=*/true);
  ExpectSileroOutputsKept(*written);
}

TEST(SileroVad, ConvertsWithEveryTarget) {
  if (!fs::exists(SileroPath())) GTEST_SKIP() << "no silero_vad in ../shared";
  for (const Target& target : BuiltinTargets()) {
    SCOPED_TRACE(target.name);
    auto model = LoadModel(SileroPath());
    ASSERT_TRUE(model.ok());
    auto written =
        ConvertAndReload(**model, SileroOptions(target.name), absl::StrCat("silero_", target.name));
    ASSERT_NE(written, nullptr);
    // Reduced-precision targets compute in fp16 or bf16: their outputs are not fp32's.
    rules::ConvertOptions options;
    ASSERT_TRUE(ApplyTargetOptions(target, {}, options).ok());
    if (options.precision == rules::ConvertOptions::Precision::kFp32) {
      ExpectSileroOutputsKept(*written);
    }
  }
}

}  // namespace
}  // namespace ovfix::converter
