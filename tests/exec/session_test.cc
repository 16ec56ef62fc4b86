// The cpu session: errors that name the node or input, capture, fp16-storage rounding, and
// the real models of ../shared/models reproducing their reference outputs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/compare.h"
#include "exec/cpu_session.h"
#include "exec/executor.h"
#include "exec/kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/support/model_text.h"
#include "tests/support/softmax_island.h"

namespace ovfix::exec {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using test_support::Floats;
using test_support::Parse;

std::unique_ptr<Session> MakeSession(const Model& model, SessionOptions options = {}) {
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<Session>> session = CreateSession(model, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

constexpr char kAddMul[] = R"(
  agraph (float[N,2] x, float[2] b) => (float[N,2] y) {
    c = Constant <value = float[1] {2.0}> ()
    t = Mul(x, c)
    y = Add(t, b)
  })";

// on_node_time (`ovfix run --profile`): every node that ran, once per run, in order, with
// its wall time; a node inside a Loop body once per iteration. Constant nodes do not run:
// the session makes their values when it compiles the graph.
TEST(Session, TimesEveryNodeThatRan) {
  auto model = Parse(R"(
    agraph (float[N,2] x, float[2] b) => (float[N,2] y, float[N,2] z) {
      c = Constant <value = float[1] {2.0}> ()
      t = Mul(x, c)
      y = Add(t, b)
      n = Constant <value = int64 {3}> ()
      cond = Constant <value = bool {1}> ()
      z = Loop(n, cond, y) <body = step (int64 i, bool keep, float[N,2] acc) => (bool keep_out, float[N,2] acc_out) {
        keep_out = Identity(keep)
        acc_out = Relu(acc)
      }>
    })");
  ASSERT_NE(model, nullptr);
  std::vector<std::string> timed;
  double total = 0;
  SessionOptions options;
  options.on_node_time = [&](const Node& node, double ms) {
    timed.push_back(node.op_type());
    EXPECT_GE(ms, 0.0) << node.Describe();
    total += ms;
  };
  auto session = MakeSession(*model, options);
  ASSERT_NE(session, nullptr);
  for (int run = 0; run < 2; ++run) {
    auto out = session->Run({{"x", Floats({2, 2}, {1, -2, 3, 4})}, {"b", Floats({2}, {1, 2})}});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  std::vector<std::string> once = {"Mul", "Add"};
  for (int i = 0; i < 3; ++i) {
    once.push_back("Identity");
    once.push_back("Relu");
  }
  once.push_back("Loop");
  std::vector<std::string> expected = once;
  expected.insert(expected.end(), once.begin(), once.end());
  EXPECT_EQ(timed, expected);
  EXPECT_GT(total, 0.0);
}

// Constant nodes made once when the session compiles: their values are right on every run,
// also where one is a graph output the caller lets go of (its buffer must not be recycled
// into another value) and inside a Loop body; none of them is a step of a run.
TEST(Session, ConstantNodesAreMadeOnceAndStayIntact) {
  auto model = Parse(R"(
    agraph (float[2] x) => (float[2] c_out, float[2] y, float[2] z) {
      c_out = Constant <value = float[2] {3.0, -1.0}> ()
      y = Mul(x, c_out)
      n = Constant <value = int64 {2}> ()
      cond = Constant <value = bool {1}> ()
      z = Loop(n, cond, y) <body = step (int64 i, bool keep, float[2] acc) => (bool keep_out, float[2] acc_out) {
        keep_out = Identity(keep)
        one = Constant <value = float[2] {1.0, 10.0}> ()
        acc_out = Add(acc, one)
      }>
    })");
  ASSERT_NE(model, nullptr);
  std::vector<std::string> timed;
  SessionOptions options;
  options.on_node_time = [&](const Node& node, double) { timed.push_back(node.op_type()); };
  auto session = MakeSession(*model, options);
  ASSERT_NE(session, nullptr);
  const std::vector<std::vector<float>> xs = {{1, 2}, {-4, 0.5f}, {7, 8}};
  for (const std::vector<float>& x : xs) {
    {
      auto out = session->Run({{"x", Floats({2}, x)}});
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->size(), 3u);
      const float* c = (*out)[0].data<float>();
      const float* y = (*out)[1].data<float>();
      const float* z = (*out)[2].data<float>();
      EXPECT_EQ(c[0], 3.0f);
      EXPECT_EQ(c[1], -1.0f);
      EXPECT_EQ(y[0], 3.0f * x[0]);
      EXPECT_EQ(y[1], -x[1]);
      EXPECT_EQ(z[0], 3.0f * x[0] + 2.0f);
      EXPECT_EQ(z[1], -x[1] + 20.0f);
    }  // the outputs are let go of here: their buffers may serve the next run
  }
  for (const std::string& op : timed) EXPECT_NE(op, "Constant");
  EXPECT_EQ(std::count(timed.begin(), timed.end(), "Loop"), 3);
}

TEST(Session, RunsAGraph) {
  auto model = Parse(kAddMul);
  ASSERT_NE(model, nullptr);
  auto session = MakeSession(*model);
  ASSERT_NE(session, nullptr);
  auto out = session->Run({{"x", Floats({2, 2}, {1, 2, 3, 4})}, {"b", Floats({2}, {10, 20})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 2}));
  const float* y = (*out)[0].data<float>();
  EXPECT_EQ(y[0], 12);
  EXPECT_EQ(y[3], 28);
}

// The session reuses the buffers of outputs the caller has released (ORT's arena does the
// same): an output the caller still holds must keep its values through later runs, however it
// assigns them, and every run's outputs must be right.
TEST(Session, OutputsTheCallerHoldsStayIntactAcrossRuns) {
  auto model = Parse(kAddMul);
  ASSERT_NE(model, nullptr);
  auto session = MakeSession(*model);
  ASSERT_NE(session, nullptr);
  auto run = [&](float first) {
    std::vector<float> x(64);
    for (size_t i = 0; i < x.size(); ++i) x[i] = first + static_cast<float>(i);
    auto out = session->Run({{"x", Floats({32, 2}, x)}, {"b", Floats({2}, {10, 20})}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0] : Tensor();
  };
  auto expect_run = [](const Tensor& y, float first) {
    ASSERT_EQ(y.numel(), 64);
    for (int64_t i = 0; i < 64; ++i) {
      EXPECT_EQ(y.data<float>()[i], 2 * (first + i) + (i % 2 == 0 ? 10 : 20)) << i;
    }
  };
  Tensor held = run(1);
  Tensor last;
  for (int i = 0; i < 6; ++i) {
    last = run(100 * i);  // the previous `last` is released only after this run
    expect_run(last, 100 * i);
    expect_run(held, 1);
  }
  held = Tensor();
  for (int i = 0; i < 4; ++i) {
    Tensor y = run(-7 * i);
    expect_run(y, -7 * i);
    expect_run(last, 500);
  }
}

TEST(Session, UnknownBackendIsRefused) {
  auto model = Parse(kAddMul);
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.backend = "vulkan";
  auto session = CreateSession(*model, options);
  ASSERT_FALSE(session.ok());
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("vulkan"));
}

TEST(Session, UnsupportedOpNamesTheNode) {
  auto model = Parse(R"(
    agraph (float[2] x) => (float[2] y) {
      t = Relu(x)
      y = NoSuchOp(t)
    })");
  ASSERT_NE(model, nullptr);
  auto session = CreateSession(*model, {});
  ASSERT_FALSE(session.ok());
  const std::string message(session.status().message());
  EXPECT_EQ(session.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(message, HasSubstr("NoSuchOp"));
  EXPECT_THAT(message, HasSubstr("opset 17"));
}

TEST(Session, UnsupportedOpInsideASubgraphIsFound) {
  auto model = Parse(R"(
    agraph (bool c, float[2] x) => (float[2] y) {
      y = If(c) <then_branch = g1 () => (float[2] a) { a = NoSuchOp(x) },
                 else_branch = g2 () => (float[2] b) { b = Identity(x) }>
    })");
  ASSERT_NE(model, nullptr);
  auto session = CreateSession(*model, {});
  ASSERT_FALSE(session.ok());
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("NoSuchOp"));
}

TEST(Session, InputErrorsNameTheInput) {
  auto model = Parse(kAddMul);
  ASSERT_NE(model, nullptr);
  auto session = MakeSession(*model);
  ASSERT_NE(session, nullptr);
  const Tensor b = Floats({2}, {1, 2});
  // Missing.
  auto out = session->Run({{"b", b}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'x'"));
  // Wrong element type.
  out = session->Run({{"x", Tensor(DataType::kInt64, {1, 2})}, {"b", b}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'x'"));
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("int64"));
  // Wrong shape (N is symbolic and matches anything; 2 does not match 3).
  out = session->Run({{"x", Floats({5, 3}, std::vector<float>(15))}, {"b", b}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'x'"));
  out = session->Run({{"x", Floats({1, 2, 1}, {1, 2})}, {"b", b}});
  ASSERT_FALSE(out.ok());
  // Unknown extra input.
  out = session->Run({{"x", Floats({5, 2}, std::vector<float>(10))}, {"b", b}, {"bogus", b}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'bogus'"));
  // And the right inputs still work afterwards.
  out = session->Run({{"x", Floats({5, 2}, std::vector<float>(10))}, {"b", b}});
  EXPECT_TRUE(out.ok()) << out.status();
}

TEST(Session, CaptureKeepsEveryValue) {
  auto model = Parse(kAddMul);
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.capture = true;
  auto session = MakeSession(*model, options);
  ASSERT_NE(session, nullptr);
  auto out = session->Run({{"x", Floats({1, 2}, {1, 2})}, {"b", Floats({2}, {0, 0})}});
  ASSERT_TRUE(out.ok()) << out.status();
  const TensorMap& values = session->captured();
  for (const char* name : {"x", "b", "c", "t", "y"}) {
    ASSERT_TRUE(values.contains(name)) << name;
  }
  EXPECT_EQ(values.at("t").data<float>()[1], 4);
  EXPECT_EQ(values.at("c").data<float>()[0], 2);
}

// The model's outputs from a session that fuses activations into their Conv (the default)
// and from one that runs every node on its own (a capturing run: it sees every value).
struct FusedAndSeparate {
  absl::StatusOr<std::vector<Tensor>> fused = absl::InternalError("no session");
  absl::StatusOr<std::vector<Tensor>> separate = absl::InternalError("no session");
  TensorMap captured;  // by the separate run
};
FusedAndSeparate RunFusedAndSeparate(const Model& model, const TensorMap& inputs) {
  FusedAndSeparate r;
  SessionOptions separate_options;
  separate_options.capture = true;
  auto fused = MakeSession(model);
  auto separate = MakeSession(model, separate_options);
  if (fused == nullptr || separate == nullptr) return r;
  r.fused = fused->Run(inputs);
  r.separate = separate->Run(inputs);
  r.captured = separate->captured();
  return r;
}

// Both runs succeeded and their first `count` outputs (float) agree bit for bit.
void ExpectSameFloatOutputs(const FusedAndSeparate& run, size_t count) {
  ASSERT_TRUE(run.fused.ok() && run.separate.ok())
      << run.fused.status() << " " << run.separate.status();
  ASSERT_GE(run.fused->size(), count);
  ASSERT_EQ(run.fused->size(), run.separate->size());
  for (size_t o = 0; o < count; ++o) {
    const Tensor& g = (*run.fused)[o];
    const Tensor& e = (*run.separate)[o];
    ASSERT_EQ(g.dims(), e.dims()) << o;
    for (int64_t i = 0; i < g.numel(); ++i) {
      ASSERT_EQ(g.data<float>()[i], e.data<float>()[i]) << "output " << o << " element " << i;
    }
  }
}

// Add(MatMul(x, W), b) with W and b initializers: the bias goes into the MatMul's step
// (either operand order; the packed product and the vector-matrix one), and the result is
// the separate Add's bit for bit. A product that something else reads too keeps its Add.
TEST(Session, FusedMatMulBiasMatchesSeparateSteps) {
  constexpr int kM = 30, kK = 6, kN = 40;
  std::vector<std::string> w_text, b_text;
  std::vector<float> w(kK * kN), b(kN), x(kM * kK), x1(kK);
  for (int i = 0; i < kK * kN; ++i) {
    w[i] = std::cos(0.41f * static_cast<float>(i)) * 0.5f;
    w_text.push_back(absl::StrCat(w[i]));
  }
  for (int i = 0; i < kN; ++i) {
    b[i] = 0.05f * static_cast<float>(i) - 1.0f;
    b_text.push_back(absl::StrCat(b[i]));
  }
  for (int i = 0; i < kM * kK; ++i) x[i] = std::sin(0.29f * static_cast<float>(i));
  for (int i = 0; i < kK; ++i) x1[i] = std::sin(1.7f * static_cast<float>(i));
  auto model = Parse(absl::StrCat(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    agraph (float[30,6] x, float[1,6] x1)
        => (float[30,40] y, float[30,40] z, float[1,40] u, float[30,40] v, float[30,40] m4)
        <float[6,40] w = {)",
                                  absl::StrJoin(w_text, ","), R"(}, float[40] b = {)",
                                  absl::StrJoin(b_text, ","), R"(}> {
      m1 = MatMul(x, w)
      a1 = Add(m1, b)
      y = Relu(a1)
      m2 = MatMul(x, w)
      z = Add(b, m2)
      m3 = MatMul(x1, w)
      u = Add(m3, b)
      m4 = MatMul(x, w)
      v = Add(m4, b)
    })"));
  ASSERT_NE(model, nullptr);
  const TensorMap inputs = {{"x", Floats({kM, kK}, x)}, {"x1", Floats({1, kK}, x1)}};
  const FusedAndSeparate run = RunFusedAndSeparate(*model, inputs);
  ASSERT_NO_FATAL_FAILURE(ExpectSameFloatOutputs(run, 5));
  // Against the sums in double.
  for (int i = 0; i < kM; ++i) {
    for (int j = 0; j < kN; ++j) {
      double sum = b[j];
      for (int p = 0; p < kK; ++p) sum += double(x[i * kK + p]) * w[p * kN + j];
      EXPECT_NEAR((*run.fused)[1].data<float>()[i * kN + j], sum, 1e-5) << i << "," << j;
      EXPECT_NEAR((*run.fused)[0].data<float>()[i * kN + j], std::max(sum, 0.0), 1e-5);
    }
  }
  for (int j = 0; j < kN; ++j) {
    double sum = b[j];
    for (int p = 0; p < kK; ++p) sum += double(x1[p]) * w[p * kN + j];
    EXPECT_NEAR((*run.fused)[2].data<float>()[j], sum, 1e-5) << j;
  }
  // The fusion took place: only the Add of the product that is also an output ran.
  int adds = 0;
  SessionOptions options;
  options.on_node_time = [&](const Node& node, double) { adds += node.op_type() == "Add"; };
  auto counted = MakeSession(*model, options);
  ASSERT_NE(counted, nullptr);
  ASSERT_TRUE(counted->Run(inputs).ok());
  EXPECT_EQ(adds, 1);
}

TEST(Session, FusedConvClampMatchesSeparateSteps) {
  auto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    agraph (float[2,3,7,6] x, float[5,3,3,3] w, float[5] bias)
        => (float[2,5,7,6] r, float[2,5,4,3] c, float[2,5,7,6] s, float[2,5,7,6] t)
        <float lo = {-0.2}, float hi = {0.3}> {
      a = Conv <pads = [1, 1, 1, 1]> (x, w, bias)
      r = Relu(a)
      b = Conv <pads = [1, 1, 1, 1], strides = [2, 2]> (x, w)
      c = Clip(b, lo, hi)
      d = Conv <pads = [1, 1, 1, 1]> (x, w, bias)
      s = Relu(d)
      t = Neg(d)
    })");
  ASSERT_NE(model, nullptr);
  std::vector<float> x(2 * 3 * 7 * 6), w(5 * 3 * 3 * 3), bias(5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.53f * static_cast<float>(i)) * 0.3f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i) - 0.2f;
  const TensorMap inputs = {
      {"x", Floats({2, 3, 7, 6}, x)}, {"w", Floats({5, 3, 3, 3}, w)}, {"bias", Floats({5}, bias)}};
  const FusedAndSeparate run = RunFusedAndSeparate(*model, inputs);
  ASSERT_NO_FATAL_FAILURE(ExpectSameFloatOutputs(run, 4));
  const absl::StatusOr<std::vector<Tensor>>& got = run.fused;
  int positive = 0;
  for (int64_t i = 0; i < (*got)[0].numel(); ++i) {
    EXPECT_GE((*got)[0].data<float>()[i], 0.0f);
    positive += (*got)[0].data<float>()[i] > 0.0f;
  }
  EXPECT_GT(positive, 0);
  for (int64_t i = 0; i < (*got)[1].numel(); ++i) {
    EXPECT_GE((*got)[1].data<float>()[i], -0.2f);
    EXPECT_LE((*got)[1].data<float>()[i], 0.3f);
  }
  // The unfused pair: s = Relu(d), t = -d.
  for (int64_t i = 0; i < (*got)[2].numel(); ++i) {
    EXPECT_EQ((*got)[2].data<float>()[i], std::max(0.0f, -(*got)[3].data<float>()[i]));
  }
}

// A hard swish after a Conv, as HardSwish or as HardSigmoid and a Mul by the Conv's output
// (either order), is fused; not when the gate is read elsewhere too.
TEST(Session, FusedConvHardSwishMatchesSeparateSteps) {
  auto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    agraph (float[1,4,9,8] x, float[6,4,3,3] w, float[6] bias)
        => (float[1,6,9,8] h, float[1,6,9,8] k, float[1,6,9,8] m, float[1,6,9,8] n) {
      a = Conv <pads = [1, 1, 1, 1]> (x, w, bias)
      g = HardSigmoid <alpha = 0.6, beta = 0.4> (a)
      h = Mul(g, a)
      e = Conv <pads = [1, 1, 1, 1]> (x, w)
      k = HardSwish(e)
      f = Conv <pads = [1, 1, 1, 1]> (x, w, bias)
      g2 = HardSigmoid(f)
      m = Mul(f, g2)
      n = Neg(g2)
    })");
  ASSERT_NE(model, nullptr);
  std::vector<float> x(4 * 9 * 8), w(6 * 4 * 3 * 3), bias(6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 2.0f * std::sin(0.41f * static_cast<float>(i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.29f * static_cast<float>(i)) * 0.5f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.3f * static_cast<float>(i) - 0.8f;
  const TensorMap inputs = {
      {"x", Floats({1, 4, 9, 8}, x)}, {"w", Floats({6, 4, 3, 3}, w)}, {"bias", Floats({6}, bias)}};
  const FusedAndSeparate run = RunFusedAndSeparate(*model, inputs);
  // Bit for bit: a fused hard swish rounds as HardSigmoid then Mul do (what a model
  // converts against is measured unfused, with capture).
  ASSERT_NO_FATAL_FAILURE(ExpectSameFloatOutputs(run, 4));
  const absl::StatusOr<std::vector<Tensor>>& got = run.fused;
  int gated = 0, zeros = 0;
  // Both ends of the gate are reached in h: zeros (gate 0) and partial gates.
  const Tensor& conv = run.captured.at("a");
  for (int64_t i = 0; i < conv.numel(); ++i) {
    const float gate = (*got)[0].data<float>()[i] / conv.data<float>()[i];
    zeros += (*got)[0].data<float>()[i] == 0.0f;
    gated += gate > 0.01f && gate < 0.99f;
  }
  EXPECT_GT(zeros, 0);
  EXPECT_GT(gated, 0);
}

// Models without value types (no value_info) and double convolutions fuse too.
TEST(Session, FusedConvReluOnDoubles) {
  auto model = Parse(R"(
    agraph (double[1,2,5,5] x, double[3,2,3,3] w) => (double[1,3,3,3] r) {
      a = Conv(x, w)
      r = Relu(a)
    })");
  ASSERT_NE(model, nullptr);
  std::vector<double> x(50), w(54);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * static_cast<double>(i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.3 * static_cast<double>(i));
  const TensorMap inputs = {{"x", Tensor::FromVector(DataType::kDouble, {1, 2, 5, 5}, x)},
                            {"w", Tensor::FromVector(DataType::kDouble, {3, 2, 3, 3}, w)}};
  const FusedAndSeparate run = RunFusedAndSeparate(*model, inputs);
  const absl::StatusOr<std::vector<Tensor>>& got = run.fused;
  const absl::StatusOr<std::vector<Tensor>>& want = run.separate;
  ASSERT_TRUE(got.ok() && want.ok()) << got.status() << " " << want.status();
  int zeros = 0;
  for (int64_t i = 0; i < 27; ++i) {
    EXPECT_EQ((*got)[0].data<double>()[i], (*want)[0].data<double>()[i]) << i;
    zeros += (*got)[0].data<double>()[i] == 0.0;
  }
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, 27);
}

TEST(Session, Fp16StorageRoundsEveryFloatTensor) {
  auto model = Parse(kAddMul);
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.precision = Precision::kFp16Storage;
  options.capture = true;
  auto session = MakeSession(*model, options);
  ASSERT_NE(session, nullptr);
  // 40000 fits fp16, 2 * 40000 does not: the Mul output overflows to inf. 1.0001 -> 1.
  auto out = session->Run({{"x", Floats({1, 2}, {40000, 0.50005f})}, {"b", Floats({2}, {0, 0})}});
  ASSERT_TRUE(out.ok()) << out.status();
  const float* y = (*out)[0].data<float>();
  EXPECT_TRUE(std::isinf(y[0]) && y[0] > 0);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(session->captured().at("x").data<float>()[0], 40000.0f);
  // Inputs themselves are rounded when given: 70000 is already inf, 1.0001 is 1.
  out = session->Run({{"x", Floats({1, 2}, {70000, 0})}, {"b", Floats({2}, {0, 1.0001f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(std::isinf(session->captured().at("x").data<float>()[0]));
  EXPECT_EQ((*out)[0].data<float>()[1], 1.0f);
  // In fp32 nothing is rounded.
  auto exact = MakeSession(*model);
  out = exact->Run({{"x", Floats({1, 2}, {40000, 0.50005f})}, {"b", Floats({2}, {0, 0})}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].data<float>()[0], 80000.0f);
}

TEST(Session, LoopCarriesValuesReadsOuterScopeAndStacksScanOutputs) {
  auto model = Parse(R"(
    agraph (int64 n, float[1] x0) => (float[1] y, float[M,1] steps) {
      scale = Constant <value = float[1] {2.0}> ()
      cond = Constant <value = bool {1}> ()
      y, steps = Loop(n, cond, x0) <body = body (int64 i, bool c, float[1] x)
          => (bool c_out, float[1] x_out, float[1] step) {
        one = Constant <value = float[1] {1.0}> ()
        step = Mul(one, scale)
        x_out = Add(x, step)
        c_out = Identity(c)
      }>
    })");
  ASSERT_NE(model, nullptr);
  auto session = MakeSession(*model);
  ASSERT_NE(session, nullptr);
  const int64_t trips = 20000;
  const auto start = std::chrono::steady_clock::now();
  auto out = session->Run({{"n", Tensor::FromVector<int64_t>(DataType::kInt64, {}, {trips})},
                           {"x0", Floats({1}, {0.5f})}});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[0], 0.5f + 2.0f * trips);
  EXPECT_EQ((*out)[1].dims(), (std::vector<int64_t>{trips, 1}));
  std::printf("Loop: %lld iterations of 4 nodes in %.1f ms\n", static_cast<long long>(trips),
              seconds * 1e3);
  // Zero trips: the carried value passes through, the scan output is empty.
  out = session->Run(
      {{"n", Tensor::FromVector<int64_t>(DataType::kInt64, {}, {0})}, {"x0", Floats({1}, {0.5f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[0], 0.5f);
  EXPECT_EQ((*out)[1].dims()[0], 0);
}

// A branch returning an outer value as is, and a Loop inside a branch reading a value two
// scopes out: captures pass through the middle scope, and the outer value is not released
// before the If that reads it only through its subgraphs.
TEST(Session, NestedSubgraphsReadOuterValues) {
  auto model = Parse(R"(
    agraph (bool c, float[2] x) => (float[2] y, float[2] z) {
      outer = Neg(x)
      y = If(c) <then_branch = g1 () => (float[2] a) {
                   n = Constant <value = int64 {3}> ()
                   t = Constant <value = bool {1}> ()
                   a = Loop(n, t, x) <body = b (int64 i, bool ci, float[2] v)
                       => (bool co, float[2] w) {
                     w = Add(v, outer)
                     co = Identity(ci)
                   }>
                 },
                 else_branch = g2 () => (float[2] b) { b = Identity(outer) }>
      z = If(c) <then_branch = g3 () => (float[2] d) { d = Identity(x) },
                 else_branch = g4 () => (float[2] e) { e = Identity(x) }>
    })");
  ASSERT_NE(model, nullptr);
  auto session = MakeSession(*model);
  ASSERT_NE(session, nullptr);
  auto cond = [](bool v) {
    return Tensor::FromVector<uint8_t>(DataType::kBool, {}, {static_cast<uint8_t>(v)});
  };
  auto out = session->Run({{"c", cond(true)}, {"x", Floats({2}, {1, 2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[0], 1 - 3 * 1);  // x + 3 * (-x)
  EXPECT_EQ((*out)[0].data<float>()[1], 2 - 3 * 2);
  EXPECT_EQ((*out)[1].data<float>()[1], 2);
  out = session->Run({{"c", cond(false)}, {"x", Floats({2}, {1, 2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[1], -2);
}

// Weights written as Constant nodes inside an If body (as exporters inline them) count as
// constant: a Conv and a MatMul keep them packed across runs, and every run still gives the
// hand-worked result for its own input, whichever branch ran last.
TEST(Session, ConstantNodeWeightsInABodyArePackedOnceAndStayRight) {
  auto model = Parse(R"(
    agraph (bool c, float[1,1,1,3] x, float[2,2] m) => (float[1,2,1,2] y, float[2,2] z) {
      y = If(c) <then_branch = g1 () => (float[1,2,1,2] a) {
                   w = Constant <value = float[2,1,1,2] {1, 2, -1, 1}> ()
                   a = Conv(x, w)
                 },
                 else_branch = g2 () => (float[1,2,1,2] b) {
                   v = Constant <value = float[2,1,1,2] {3, 0, 0, 3}> ()
                   b = Conv(x, v)
                 }>
      k = Constant <value = float[2,2] {1, 2, 3, 4}> ()
      z = MatMul(m, k)
    })");
  ASSERT_NE(model, nullptr);
  // The predicate itself: a Constant node's output is constant, a graph input is not.
  for (const Node* node : model->graph().nodes()) {
    if (node->op_type() != "MatMul") continue;
    const KernelContext ctx = KernelContext::For(*node, 13);
    EXPECT_TRUE(ctx.input_is_constant(1));
    EXPECT_FALSE(ctx.input_is_constant(0));
  }
  auto session = MakeSession(*model);
  ASSERT_NE(session, nullptr);
  auto cond = [](bool v) {
    return Tensor::FromVector<uint8_t>(DataType::kBool, {}, {static_cast<uint8_t>(v)});
  };
  struct Case {
    bool then_branch;
    float a, b, c;
  };
  for (const Case& k :
       {Case{true, 1, 2, 3}, Case{true, -2, 5, 0.5f}, Case{false, 1, 2, 3}, Case{true, 4, 0, -1}}) {
    auto out = session->Run({{"c", cond(k.then_branch)},
                             {"x", Floats({1, 1, 1, 3}, {k.a, k.b, k.c})},
                             {"m", Floats({2, 2}, {k.a, k.b, k.c, 1})}});
    ASSERT_TRUE(out.ok()) << out.status();
    const float* y = (*out)[0].data<float>();
    if (k.then_branch) {
      EXPECT_EQ(y[0], k.a + 2 * k.b);
      EXPECT_EQ(y[1], k.b + 2 * k.c);
      EXPECT_EQ(y[2], -k.a + k.b);
      EXPECT_EQ(y[3], -k.b + k.c);
    } else {
      EXPECT_EQ(y[0], 3 * k.a);
      EXPECT_EQ(y[1], 3 * k.b);
      EXPECT_EQ(y[2], 3 * k.b);
      EXPECT_EQ(y[3], 3 * k.c);
    }
    const float* z = (*out)[1].data<float>();
    EXPECT_EQ(z[0], k.a * 1 + k.b * 3);
    EXPECT_EQ(z[1], k.a * 2 + k.b * 4);
    EXPECT_EQ(z[2], k.c * 1 + 1 * 3);
    EXPECT_EQ(z[3], k.c * 2 + 1 * 4);
  }
}

TEST(Session, Float16TensorsStayFloat16) {
  auto model = Parse(R"(
    agraph (float16[2] a, float16[2] b) => (float16[2] y) {
      y = Add(a, b)
    })");
  ASSERT_NE(model, nullptr);
  auto session = MakeSession(*model);
  ASSERT_NE(session, nullptr);
  auto half = [](float x, float y) {
    return Tensor::FromVector<uint16_t>(DataType::kFloat16, {2},
                                        {FloatToHalfBits(x), FloatToHalfBits(y)});
  };
  auto out = session->Run({{"a", half(1.5f, 60000)}, {"b", half(2.25f, 10000)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].type(), DataType::kFloat16);
  EXPECT_EQ(HalfBitsToFloat((*out)[0].data<uint16_t>()[0]), 3.75f);
  EXPECT_TRUE(std::isinf(HalfBitsToFloat((*out)[0].data<uint16_t>()[1])));
}

// In the fp16 precisions a model that declares float16 data keeps its float32 values float32
// (tests/support/softmax_island.h: the island stays finite and the softmax right), and says
// so in a note; the same graph in float32 overflows as a GPU forcing fp16 would.
TEST(Session, Fp16PrecisionsKeepAConvertedModelsFloat32Values) {
  using testing::kSoftmaxExpected;
  using testing::kSoftmaxInput;
  for (Precision precision : {Precision::kFp16Storage, Precision::kFp16}) {
    SCOPED_TRACE(std::string(PrecisionName(precision)));
    SessionOptions options;
    options.precision = precision;
    auto island = Parse(testing::kSoftmaxIsland);
    ASSERT_NE(island, nullptr);
    auto session = MakeSession(*island, options);
    ASSERT_NE(session, nullptr);
    Tensor x16(DataType::kFloat16, {3});
    for (int i = 0; i < 3; ++i) x16.data<uint16_t>()[i] = FloatToHalfBits(kSoftmaxInput[i]);
    auto out = session->Run({{"x", x16}});
    ASSERT_TRUE(out.ok()) << out.status();
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(HalfBitsToFloat((*out)[0].data<uint16_t>()[i]), kSoftmaxExpected[i], 1e-3) << i;
    }
    ASSERT_EQ(session->notes().size(), 1u);
    EXPECT_THAT(session->notes()[0], ::testing::HasSubstr("float32 values stay float32"));

    auto plain = Parse(testing::kSoftmaxFloat);
    ASSERT_NE(plain, nullptr);
    auto forced = MakeSession(*plain, options);
    ASSERT_NE(forced, nullptr);
    out = forced->Run({{"x", Floats({3}, {kSoftmaxInput, kSoftmaxInput + 3})}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_FALSE(std::isfinite((*out)[0].data<float>()[2]));
    EXPECT_TRUE(forced->notes().empty());
  }
}

TEST(Session, ParsePrecision) {
  EXPECT_EQ(*ParsePrecision("fp16-storage"), Precision::kFp16Storage);
  EXPECT_EQ(PrecisionName(Precision::kFp16), "fp16");
  EXPECT_FALSE(ParsePrecision("int8").ok());
}

// ---- the real models ----

struct ModelRun {
  std::vector<std::string> names;
  std::vector<Tensor> actual, expected;
};

// Runs ../shared/models/NAME on test_data_set_0 at `precision`.
ModelRun RunSharedModel(const std::string& name, Precision precision) {
  ModelRun r;
  const fs::path dir = fs::path(OVFIX_SHARED_DIR) / "models" / name;
  auto model = LoadModel((dir / "model.onnx").string());
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return r;
  SessionOptions options;
  options.precision = precision;
  auto session = CreateSession(**model, options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return r;
  const Graph& graph = (*model)->graph();
  TensorMap feeds;
  int k = 0;
  for (const Value* v : graph.inputs()) {
    if (v->is_initializer()) continue;
    auto t =
        ReadTensorFile((dir / "test_data_set_0" / absl::StrCat("input_", k++, ".pb")).string());
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return r;
    feeds[v->name()] = std::move(*t);
  }
  auto out = (*session)->Run(feeds);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return r;
  r.actual = std::move(*out);
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    r.names.push_back(graph.outputs()[i]->name());
    auto t = ReadTensorFile((dir / "test_data_set_0" / absl::StrCat("output_", i, ".pb")).string());
    EXPECT_TRUE(t.ok()) << t.status();
    r.expected.push_back(t.ok() ? std::move(*t) : Tensor());
  }
  return r;
}

bool HasNonFinite(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(t.GetAsDouble(i))) return true;
  }
  return false;
}

class SharedModel : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedModel, ReproducesReferenceInFp32) {
  if (!fs::exists(fs::path(OVFIX_SHARED_DIR) / "models" / GetParam())) GTEST_SKIP();
  ModelRun r = RunSharedModel(GetParam(), Precision::kFp32);
  ASSERT_EQ(r.actual.size(), r.expected.size());
  ASSERT_FALSE(r.actual.empty());
  for (size_t i = 0; i < r.actual.size(); ++i) {
    SCOPED_TRACE(r.names[i]);
    Comparison c = CompareTensors(r.actual[i], r.expected[i]);
    ASSERT_EQ(r.actual[i].dims(), r.expected[i].dims()) << c.message;
    EXPECT_FALSE(HasNonFinite(r.actual[i]));
    // A one-element output has no range: its own magnitude stands in.
    const double range = std::max({c.expected_max - c.expected_min, std::fabs(c.expected_max),
                                   std::fabs(c.expected_min), 1e-30});
    EXPECT_LE(c.max_abs_error / range, 1e-4) << DescribeComparison(c);
    std::printf("%s output '%s': %s, range %.4g, error/range %.3g\n", GetParam().c_str(),
                r.names[i].c_str(), DescribeComparison(c).c_str(), range, c.max_abs_error / range);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SharedModel,
                         ::testing::Values("conv3d_991", "ddff_squeeze", "gfpgan_modconv",
                                           "hand_softmax", "mobilenet_v3_small", "resnet18",
                                           "trt_broadcast"));

TEST(SharedModelFp16, OverflowsShowAsInfOrNan) {
  const fs::path models = fs::path(OVFIX_SHARED_DIR) / "models";
  if (!fs::exists(models / "gfpgan_modconv") || !fs::exists(models / "hand_softmax")) {
    GTEST_SKIP();
  }
  ModelRun gfpgan = RunSharedModel("gfpgan_modconv", Precision::kFp16Storage);
  bool energy_found = false;
  for (size_t i = 0; i < gfpgan.names.size() && i < gfpgan.actual.size(); ++i) {
    if (gfpgan.names[i] != "energy") continue;
    energy_found = true;
    EXPECT_TRUE(HasNonFinite(gfpgan.actual[i]));
    EXPECT_FALSE(HasNonFinite(gfpgan.expected[i]));
  }
  EXPECT_TRUE(energy_found);
  ModelRun hand = RunSharedModel("hand_softmax", Precision::kFp16Storage);
  ASSERT_FALSE(hand.actual.empty());
  EXPECT_TRUE(HasNonFinite(hand.actual[0]));
  EXPECT_FALSE(HasNonFinite(hand.expected[0]));
}

}  // namespace
}  // namespace ovfix::exec

namespace ovfix::exec {
namespace {

TEST(Session, RandomSeedMakesUnseededRandomOpsRepeatable) {
  auto model = Parse(R"(
    agraph (float[64] x) => (float[64] a, float[64] b) {
      a = RandomNormalLike(x)
      b = RandomUniformLike <seed = 3.0> (x)
    })");
  ASSERT_NE(model, nullptr);
  auto run = [&](uint64_t seed) {
    SessionOptions options;
    options.random_seed = seed;
    auto session = MakeSession(*model, options);
    auto out = session->Run({{"x", Floats({64}, std::vector<float>(64, 0.0f))}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *std::move(out) : std::vector<Tensor>{};
  };
  auto same = [](const Tensor& p, const Tensor& q) {
    return std::memcmp(p.raw(), q.raw(), p.nbytes()) == 0;
  };
  const std::vector<Tensor> first = run(42), second = run(42), other = run(43);
  const std::vector<Tensor> fresh1 = run(0), fresh2 = run(0);
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(other.size(), 2u);
  ASSERT_EQ(fresh2.size(), 2u);
  EXPECT_TRUE(same(first[0], second[0]));    // same session seed: same draws
  EXPECT_FALSE(same(first[0], other[0]));    // another seed: other draws
  EXPECT_FALSE(same(fresh1[0], fresh2[0]));  // no seed: fresh entropy each time
  // A seed attribute wins over the session's.
  EXPECT_TRUE(same(first[1], other[1]));
  EXPECT_TRUE(same(first[1], fresh1[1]));
}

// A Relu, Clip or HardSwish after an inference BatchNormalization (pre-activation nets such as
// DenseNet) goes into the BatchNormalization's step, bit for bit what the separate steps give.
TEST(Session, FusedBatchNormalizationActivationMatchesSeparateSteps) {
  auto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    agraph (float[2,3,5,4] x) => (float[2,3,5,4] r, float[2,3,5,4] c, float[2,3,5,4] h)
        <float[3] scale = {1.5, -0.5, 2}, float[3] shift = {0.1, 0.2, -0.3},
         float[3] mean = {0.05, -0.1, 0.2}, float[3] var = {1, 0.5, 2},
         float lo = {-0.2}, float hi = {0.3}> {
      a = BatchNormalization(x, scale, shift, mean, var)
      r = Relu(a)
      b = BatchNormalization(x, scale, shift, mean, var)
      c = Clip(b, lo, hi)
      d = BatchNormalization(x, scale, shift, mean, var)
      h = HardSwish(d)
    })");
  ASSERT_NE(model, nullptr);
  std::vector<float> x(2 * 3 * 5 * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 3.0f * std::sin(0.37f * static_cast<float>(i));
  const FusedAndSeparate run = RunFusedAndSeparate(*model, {{"x", Floats({2, 3, 5, 4}, x)}});
  ASSERT_TRUE(run.fused.ok() && run.separate.ok())
      << run.fused.status() << " " << run.separate.status();
  ASSERT_EQ(run.fused->size(), 3u);
  for (size_t o = 0; o < 3; ++o) {
    const Tensor& g = (*run.fused)[o];
    const Tensor& e = (*run.separate)[o];
    for (int64_t i = 0; i < g.numel(); ++i) {
      ASSERT_EQ(g.data<float>()[i], e.data<float>()[i]) << "output " << o << " element " << i;
    }
  }
  // The Relu and the Clip did apply: every value within their bounds, some at them.
  int zeros = 0;
  for (int64_t i = 0; i < (*run.fused)[0].numel(); ++i) {
    EXPECT_GE((*run.fused)[0].data<float>()[i], 0.0f);
    zeros += (*run.fused)[0].data<float>()[i] == 0.0f;
  }
  EXPECT_GT(zeros, 0);
  for (int64_t i = 0; i < (*run.fused)[1].numel(); ++i) {
    EXPECT_GE((*run.fused)[1].data<float>()[i], -0.2f);
    EXPECT_LE((*run.fused)[1].data<float>()[i], 0.3f);
  }
  // Fused: three steps run (a fused activation is timed with its BatchNormalization).
  int steps = 0;
  SessionOptions timed;
  timed.on_node_time = [&steps](const Node&, double) { ++steps; };
  auto session = MakeSession(*model, timed);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Run({{"x", Floats({2, 3, 5, 4}, x)}}).ok());
  EXPECT_EQ(steps, 3);
}

// Weights a QDQ model keeps quantized (DequantizeLinear of int8 initializers) are constant to
// the kernels as float weights are (IsRunConstant): a Conv that reads them takes the path it
// takes with the same weights in float (here Winograd's, a 3x3 over 16 channels at 16x16) and
// gives the same floats bit for bit, on every run, with every value observed (the validation
// run's form) and in a session that runs once and lets go of each step's packed weights.
TEST(Session, DequantizedWeightsArePackedLikeFloatWeights) {
  constexpr char kText[] = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    agraph (float[1,16,16,16] x, int8[16,16,3,3] free_q) => (float[1,16,16,16] y, float[16,16,3,3] f)
        <int8[1] w_q = {0}, float[1] w_scale = {0}, int8[1] w_zero = {0}, float[1] b = {0}> {
      w = DequantizeLinear <axis = 0> (w_q, w_scale, w_zero)
      c = Cast <to = 1> (w)
      y = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, c, b)
      f = DequantizeLinear <axis = 0> (free_q, w_scale, w_zero)
    })";
  auto quantized = Parse(kText);  // the initializers' data is set below
  ASSERT_NE(quantized, nullptr);
  std::vector<int8_t> q(16 * 16 * 9);
  std::vector<float> scale(16), bias(16), x(16 * 16 * 16), dequantized(q.size());
  std::vector<int8_t> zero(16);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>((i * 37 + 11) % 255 - 127);
  for (int k = 0; k < 16; ++k) {
    scale[k] = 0.002f + 0.0003f * static_cast<float>(k);
    zero[k] = static_cast<int8_t>(k % 5 - 2);
    bias[k] = 0.1f * std::cos(static_cast<float>(k));
  }
  for (size_t i = 0; i < q.size(); ++i) {
    const size_t k = i / (16 * 9);
    dequantized[i] = static_cast<float>(int{q[i]} - int{zero[k]}) * scale[k];
  }
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.113f * static_cast<float>(i));
  Graph& g = quantized->graph();
  g.FindValue("w_q")->set_tensor(Tensor::FromVector(DataType::kInt8, {16, 16, 3, 3}, q));
  g.FindValue("w_scale")->set_tensor(Floats({16}, scale));
  g.FindValue("w_zero")->set_tensor(Tensor::FromVector(DataType::kInt8, {16}, zero));
  g.FindValue("b")->set_tensor(Floats({16}, bias));
  // The predicate: a Cast of a DequantizeLinear of initializers is constant; the same
  // DequantizeLinear of a graph input is not.
  for (const Node* node : g.nodes()) {
    const KernelContext ctx = KernelContext::For(*node, 13);
    if (node->op_type() == "Conv") {
      EXPECT_TRUE(ctx.input_is_constant(1));
      EXPECT_FALSE(ctx.input_is_constant(0));
    }
    if (node->output(0)->name() == "f") EXPECT_FALSE(IsRunConstant(node->output(0)));
  }
  auto plain = Parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    agraph (float[1,16,16,16] x) => (float[1,16,16,16] y) <float[1] w = {0}, float[1] b = {0}> {
      y = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, w, b)
    })");
  ASSERT_NE(plain, nullptr);
  plain->graph().FindValue("w")->set_tensor(Floats({16, 16, 3, 3}, dequantized));
  plain->graph().FindValue("b")->set_tensor(Floats({16}, bias));

  const Tensor image = Floats({1, 16, 16, 16}, x);
  const Tensor free_q = Tensor::FromVector(DataType::kInt8, {16, 16, 3, 3}, q);
  auto reference = MakeSession(*plain);
  ASSERT_NE(reference, nullptr);
  auto want = reference->Run({{"x", image}});
  ASSERT_TRUE(want.ok()) << want.status();
  // Both against a sum in double.
  double worst = 0;
  for (int64_t i = 0; i < (*want)[0].numel(); ++i) {
    const int64_t o = i / 256, h = i / 16 % 16, w = i % 16;
    double sum = bias[o];
    for (int64_t c = 0; c < 16; ++c) {
      for (int64_t dy = -1; dy <= 1; ++dy) {
        for (int64_t dx = -1; dx <= 1; ++dx) {
          if (h + dy < 0 || h + dy >= 16 || w + dx < 0 || w + dx >= 16) continue;
          sum += double{dequantized[((o * 16 + c) * 3 + dy + 1) * 3 + dx + 1]} *
                 x[(c * 16 + h + dy) * 16 + w + dx];
        }
      }
    }
    worst = std::max(worst, std::abs(sum - (*want)[0].data<float>()[i]));
  }
  EXPECT_LT(worst, 1e-5);

  auto same = [&](const std::vector<Tensor>& got, const std::string& what) {
    ASSERT_EQ(got.size(), 2u) << what;
    ASSERT_EQ(got[0].numel(), (*want)[0].numel()) << what;
    EXPECT_EQ(std::memcmp(got[0].data<float>(), (*want)[0].data<float>(), got[0].nbytes()), 0)
        << what;
  };
  auto session = MakeSession(*quantized);
  ASSERT_NE(session, nullptr);
  for (int run = 0; run < 2; ++run) {
    auto got = session->Run({{"x", image}, {"free_q", free_q}});
    ASSERT_TRUE(got.ok()) << got.status();
    same(*got, absl::StrCat("run ", run));
  }
  SessionOptions observed;
  observed.runs_once = true;
  int values = 0;
  observed.on_value = [&values](const Value&, const Tensor&) { ++values; };
  auto once = MakeSession(*quantized, observed);
  ASSERT_NE(once, nullptr);
  for (int run = 0; run < 2; ++run) {  // runs once by contract, right either way
    auto got = once->Run({{"x", image}, {"free_q", free_q}});
    ASSERT_TRUE(got.ok()) << got.status();
    same(*got, absl::StrCat("observed run ", run));
  }
  EXPECT_EQ(values, 2 * 4);
}

}  // namespace
}  // namespace ovfix::exec
