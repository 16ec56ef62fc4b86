// Concat without copies (exec/concat_in_place.h): a session that writes Concat inputs straight
// into the Concat's output computes exactly the bytes of one that copies them
// (SessionOptions::concat_in_place off), run after run (the layout is learned from the run
// before), on DenseNet-, torchvision-DenseNet- and UNet-like graphs and on the shapes where it
// must stand aside (batch 2 along channels, an input read twice or also a graph output, inputs
// that change size between runs). Where cheap, the outputs are also checked against values
// computed here by hand.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "exec/cpu_session.h"
#include "exec/executor.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "tests/support/model_text.h"

namespace ovfix::exec {
namespace {

using test_support::Parse;

std::unique_ptr<CpuSession> MakeSession(const Model& model, bool in_place) {
  SessionOptions options;
  options.threads = 2;
  options.concat_in_place = in_place;
  absl::StatusOr<std::unique_ptr<CpuSession>> session = CpuSession::Create(model, options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

TensorMap Inputs(const Model& model, uint64_t seed,
                 std::map<std::string, std::vector<int64_t>> shapes = {}) {
  RandomInputOptions options;
  options.seed = seed;
  options.shapes = std::move(shapes);
  absl::StatusOr<TensorMap> inputs = RandomInputs(model.graph(), options);
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  return inputs.ok() ? *inputs : TensorMap();
}

void ExpectSameBytes(const std::vector<Tensor>& plain, const std::vector<Tensor>& in_place,
                     const std::string& where) {
  ASSERT_EQ(plain.size(), in_place.size()) << where;
  for (size_t i = 0; i < plain.size(); ++i) {
    ASSERT_EQ(plain[i].type(), in_place[i].type()) << where << ", output " << i;
    ASSERT_EQ(plain[i].dims(), in_place[i].dims()) << where << ", output " << i;
    EXPECT_EQ(std::memcmp(plain[i].raw(), in_place[i].raw(), plain[i].nbytes()), 0)
        << where << ", output " << i << " differs";
  }
}

struct InPlaceRun {
  std::vector<Tensor> outputs;  // of the in-place session's last run
  int views = -1;               // Concats of that run that copied nothing
};

// Runs both sessions on fresh random inputs per run (by `shapes_per_run` when given) and
// compares every output bit for bit.
InPlaceRun RunBoth(
    const Model& model, int runs,
    const std::vector<std::map<std::string, std::vector<int64_t>>>& shapes_per_run = {}) {
  std::unique_ptr<CpuSession> plain = MakeSession(model, false);
  std::unique_ptr<CpuSession> in_place = MakeSession(model, true);
  if (plain == nullptr || in_place == nullptr) return {};
  InPlaceRun last;
  for (int run = 0; run < runs; ++run) {
    const TensorMap inputs =
        Inputs(model, 1000 + run,
               shapes_per_run.empty() ? std::map<std::string, std::vector<int64_t>>()
                                      : shapes_per_run[run]);
    absl::StatusOr<std::vector<Tensor>> expected = plain->Run(inputs);
    absl::StatusOr<std::vector<Tensor>> got = in_place->Run(inputs);
    EXPECT_TRUE(expected.ok()) << expected.status();
    EXPECT_TRUE(got.ok()) << got.status();
    if (!expected.ok() || !got.ok()) return {};
    ExpectSameBytes(*expected, *got, "run " + std::to_string(run));
    EXPECT_EQ(plain->concat_views(), 0);
    last = {*std::move(got), in_place->concat_views()};
  }
  return last;
}

// x = Concat(x, Conv(Relu(x * s + b))) four times, as the bench's DenseNet (and
// memory-efficient DenseNet exports) write a dense block; then a transition. Every Concat
// output is read by the next layer's scale and by the next Concat.
std::string DenseChain(int batch) {
  return R"(
    <ir_version: 8, opset_import: ["" : 17]>
    dense ()" +
         std::string("float[") + std::to_string(batch) + R"(,3,12,12] image,
           float[8,3,3,3] w0, float[1,8,1,1] s0, float[1,8,1,1] b0, float[4,8,3,3] w1,
           float[1,12,1,1] s1, float[1,12,1,1] b1, float[4,12,1,1] w2, float[1,16,1,1] s2,
           float[1,16,1,1] b2, float[4,16,3,3] w3, float[1,20,1,1] s3, float[1,20,1,1] b3,
           float[4,20,3,3] w4, float[6,24,1,1] wt) => (float y) {
      c0 = Conv <pads = [1, 1, 1, 1]> (image, w0)
      x0 = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (c0)
      m1 = Mul(x0, s0)
      a1 = Add(m1, b0)
      n1 = Relu(a1)
      h1 = Conv <pads = [1, 1, 1, 1]> (n1, w1)
      x1 = Concat <axis = 1> (x0, h1)
      m2 = Mul(x1, s1)
      a2 = Add(m2, b1)
      n2 = Relu(a2)
      h2 = Conv(n2, w2)
      x2 = Concat <axis = 1> (x1, h2)
      m3 = Mul(x2, s2)
      a3 = Add(m3, b2)
      n3 = Relu(a3)
      h3 = Conv <pads = [1, 1, 1, 1]> (n3, w3)
      x3 = Concat <axis = 1> (x2, h3)
      m4 = Mul(x3, s3)
      a4 = Add(m4, b3)
      n4 = Relu(a4)
      h4 = Conv <pads = [1, 1, 1, 1]> (n4, w4)
      x4 = Concat <axis = 1> (x3, h4)
      t = Conv(x4, wt)
      y = AveragePool <kernel_shape = [2, 2], strides = [2, 2]> (t)
    })";
}

TEST(ConcatInPlace, DenseNetChainMatchesCopies) {
  std::unique_ptr<Model> model = Parse(DenseChain(1));
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(RunBoth(*model, 4).views, 4);
}

// Batch 2 along channels: the inputs are not back to back in the output; it copies.
TEST(ConcatInPlace, DenseNetChainBatchTwoMatchesCopies) {
  std::unique_ptr<Model> model = Parse(DenseChain(2));
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(RunBoth(*model, 3).views, 0);
}

// torchvision's dense block: each layer concatenates every feature so far, and the block
// ends in the Concat of all of them. Each feature is written into the last Concat; from the
// second run on the per-layer Concats are views of its prefixes, seen here from the outputs:
// c2 and c3 share c4's buffer.
TEST(ConcatInPlace, TorchvisionDenseBlockPrefixesAreViews) {
  std::unique_ptr<Model> model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    block (float[1,4,10,10] x, float[3,4,3,3] w1, float[3,7,3,3] w2, float[3,10,3,3] w3)
        => (float[a,b,c,d] c2, float[e,f,g,h] c3, float[i,j,k,l] c4) {
      x0 = Relu(x)
      g1 = Conv <pads = [1, 1, 1, 1]> (x0, w1)
      f1 = Relu(g1)
      c2 = Concat <axis = 1> (x0, f1)
      r2 = Relu(c2)
      f2 = Conv <pads = [1, 1, 1, 1]> (r2, w2)
      c3 = Concat <axis = 1> (x0, f1, f2)
      r3 = Relu(c3)
      f3 = Conv <pads = [1, 1, 1, 1]> (r3, w3)
      c4 = Concat <axis = 1> (x0, f1, f2, f3)
    })");
  ASSERT_NE(model, nullptr);
  const InPlaceRun run = RunBoth(*model, 3);
  EXPECT_EQ(run.views, 3);
  const std::vector<Tensor>& out = run.outputs;
  ASSERT_EQ(out.size(), 3u);
  ASSERT_NE(out[0].buffer(), nullptr);
  ASSERT_NE(out[1].buffer(), nullptr);
  EXPECT_EQ(out[0].buffer()->whole(), out[2].buffer());
  EXPECT_EQ(out[1].buffer()->whole(), out[2].buffer());
  EXPECT_EQ(out[0].raw(), out[2].raw());
}

// A graph input among the Concat's inputs: copied, the others made in place around it.
TEST(ConcatInPlace, GraphInputAmongTheInputsMatchesCopies) {
  std::unique_ptr<Model> model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    block (float[1,4,10,10] x0, float[3,4,3,3] w1, float[3,7,3,3] w2, float[3,10,1,1] w3)
        => (float[a,b,c,d] y) {
      g1 = Conv <pads = [1, 1, 1, 1]> (x0, w1)
      f1 = Relu(g1)
      c2 = Concat <axis = 1> (x0, f1)
      r2 = Relu(c2)
      f2 = Conv <pads = [1, 1, 1, 1]> (r2, w2)
      c3 = Concat <axis = 1> (x0, f1, f2)
      y = Conv(c3, w3)
    })");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(RunBoth(*model, 3).views, 0);
}

// UNet: the skip made at the top, long before the decoder's Concat, and the upsampled value
// (here also twice in one Concat).
TEST(ConcatInPlace, UnetSkipsMatchCopies) {
  std::unique_ptr<Model> model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    unet (float[1,3,16,16] image, float[4,3,3,3] w0, float[8,4,3,3] w1, float[8,8,3,3] w2,
          float[4,16,3,3] w3, float[4,12,3,3] w4, float[2,4,1,1] w5) => (float[a,b,c,d] y) {
      t0 = Conv <pads = [1, 1, 1, 1]> (image, w0)
      s0 = Relu(t0)
      d0 = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (s0)
      t1 = Conv <pads = [1, 1, 1, 1]> (d0, w1)
      s1 = Relu(t1)
      d1 = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (s1)
      t2 = Conv <pads = [1, 1, 1, 1]> (d1, w2)
      m = Relu(t2)
      k = Constant <value = float[4] {1, 1, 2, 2}> ()
      roi = Constant <value = float[8] {0, 0, 0, 0, 1, 1, 1, 1}> ()
      u1 = Resize <mode = "linear", coordinate_transformation_mode = "half_pixel"> (m, roi, k)
      c1 = Concat <axis = 1> (u1, s1)
      t3 = Conv <pads = [1, 1, 1, 1]> (c1, w3)
      e1 = Relu(t3)
      u0 = Resize <mode = "nearest"> (e1, roi, k)
      c0 = Concat <axis = 1> (u0, s0, u0)
      t4 = Conv <pads = [1, 1, 1, 1]> (c0, w4)
      e0 = Relu(t4)
      y = Conv(e0, w5)
    })");
  ASSERT_NE(model, nullptr);
  // c1; not c0, which reads u0 twice.
  EXPECT_EQ(RunBoth(*model, 3).views, 1);
}

// One value read by two Concats (written into the later one, copied into the earlier), a
// value that is also a graph output (never placed), one twice in one Concat, a value that a
// view-making op (Identity) passes on, and Concats along axes 0, 2 and -1; checked against
// values computed here too.
TEST(ConcatInPlace, SharedAndVisibleInputsMatchCopiesAndHand) {
  std::unique_ptr<Model> model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    shared (float[1,3,5,6] x, float[2,3,5,6] z)
        => (float[a,b,c,d] p, float[e,f,g,h] q, float[1,3,5,6] h, float[i,j,k,l] r,
            float[m,n,o,s] v, float[t,u,w,aa] t, float[ab,ac,ad,ae] e) {
      a = Relu(x)
      b = Neg(x)
      p = Concat <axis = 1> (a, b)
      ab = Abs(x)
      q = Concat <axis = 1> (b, a, ab)
      h = Sigmoid(x)
      g = Exp(x)
      r = Concat <axis = 1> (g, h, g)
      th = Tanh(x)
      i = Identity(th)
      ni = Neg(i)
      v = Concat <axis = 2> (i, ni)
      rz = Relu(z)
      nz = Neg(z)
      t = Concat <axis = 0> (rz, nz)
      shape = Constant <value = int64[4] {1, 1, 1, 90}> ()
      xr = Reshape(x, shape)
      flat = Relu(xr)
      nf = Neg(flat)
      e = Concat <axis = -1> (flat, nf)
    })");
  ASSERT_NE(model, nullptr);
  const InPlaceRun run = RunBoth(*model, 3);
  // q, t and e; p finds a and b in q's order (b first), r reads g twice, v has 3 channels
  // before its axis.
  EXPECT_EQ(run.views, 3);
  const std::vector<Tensor>& out = run.outputs;
  ASSERT_EQ(out.size(), 7u);
  // The last run's inputs again, for the values by hand.
  const TensorMap inputs = Inputs(*model, 1002);
  const float* x = inputs.at("x").data<float>();
  const float* z = inputs.at("z").data<float>();
  const float* q = out[1].data<float>();
  const float* r = out[3].data<float>();
  const float* t = out[5].data<float>();
  const float* e = out[6].data<float>();
  ASSERT_EQ(out[1].dims(), (std::vector<int64_t>{1, 9, 5, 6}));
  for (int i = 0; i < 90; ++i) {
    EXPECT_EQ(q[i], -x[i]);
    EXPECT_EQ(q[90 + i], std::max(x[i], 0.0f));
    EXPECT_EQ(q[180 + i], std::fabs(x[i]));
    EXPECT_EQ(r[i], r[180 + i]);
    EXPECT_EQ(e[i], std::max(x[i], 0.0f));
    EXPECT_EQ(e[90 + i], -std::max(x[i], 0.0f));
  }
  for (int i = 0; i < 180; ++i) {
    EXPECT_EQ(t[i], std::max(z[i], 0.0f));
    EXPECT_EQ(t[180 + i], -z[i]);
  }
}

// Inputs that change size between runs: the layout learned from the run before no longer
// fits, and the session copies (or places anew) without mixing up the runs.
TEST(ConcatInPlace, ChangingShapesMatchCopies) {
  std::unique_ptr<Model> model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    dyn (float[1,2,H,W] x, float[3,2,3,3] w1, float[3,5,3,3] w2) => (float[a,b,c,d] y) {
      x0 = Relu(x)
      h1 = Conv <pads = [1, 1, 1, 1]> (x0, w1)
      x1 = Concat <axis = 1> (x0, h1)
      r1 = Relu(x1)
      h2 = Conv <pads = [1, 1, 1, 1]> (r1, w2)
      x2 = Concat <axis = 1> (x1, h2)
      y = Relu(x2)
    })");
  ASSERT_NE(model, nullptr);
  auto sized = [](int64_t h, int64_t w) {
    return std::map<std::string, std::vector<int64_t>>{{"x", {1, 2, h, w}}};
  };
  // Views from the second run of each size in bytes on (6x6 after 4x9 is one: the same
  // bytes, other dims).
  EXPECT_EQ(RunBoth(*model, 7,
                    {sized(6, 6), sized(6, 6), sized(6, 6), sized(5, 4), sized(5, 4), sized(4, 9),
                     sized(6, 6)})
                .views,
            2);
}

// The real models of ../shared/models (their Concats of shape arithmetic, a recurrent net's
// state, ...) on their own inputs, three runs each way.
TEST(ConcatInPlace, SharedModelsMatchCopies) {
  namespace fs = std::filesystem;
  const fs::path models = fs::path(OVFIX_SHARED_DIR) / "models";
  if (!fs::exists(models)) GTEST_SKIP();
  for (const char* name :
       {"conv3d_991", "ddff_squeeze", "deep_residual", "gfpgan_modconv", "hand_softmax",
        "mobilenet_v3_small", "resnet18", "silero_vad", "trt_broadcast"}) {
    SCOPED_TRACE(name);
    const fs::path dir = models / name;
    if (!fs::exists(dir / "model.onnx")) continue;
    absl::StatusOr<std::unique_ptr<Model>> model = LoadModel((dir / "model.onnx").string());
    ASSERT_TRUE(model.ok()) << model.status();
    TensorMap feeds;
    int k = 0;
    for (const Value* v : (*model)->graph().inputs()) {
      if (v->is_initializer()) continue;
      absl::StatusOr<Tensor> t = ReadTensorFile(
          (dir / "test_data_set_0" / ("input_" + std::to_string(k++) + ".pb")).string());
      ASSERT_TRUE(t.ok()) << t.status();
      feeds[v->name()] = *std::move(t);
    }
    std::unique_ptr<CpuSession> plain = MakeSession(**model, false);
    std::unique_ptr<CpuSession> in_place = MakeSession(**model, true);
    ASSERT_NE(plain, nullptr);
    ASSERT_NE(in_place, nullptr);
    for (int run = 0; run < 3; ++run) {
      absl::StatusOr<std::vector<Tensor>> expected = plain->Run(feeds);
      absl::StatusOr<std::vector<Tensor>> got = in_place->Run(feeds);
      ASSERT_TRUE(expected.ok()) << expected.status();
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectSameBytes(*expected, *got, "run " + std::to_string(run));
    }
  }
}

}  // namespace
}  // namespace ovfix::exec
