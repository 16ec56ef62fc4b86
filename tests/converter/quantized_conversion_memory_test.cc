// Converting quantized segmentation nets at resolutions where their activations, not their
// weights, are what is large (bench/quantized_models.h: a UNet quantized as onnxruntime's
// quantize_dynamic writes it, DynamicQuantizeLinear and ConvInteger on every conv, and as its
// QDQ form writes it). The conversion keeps what it holds of the activations within a budget
// (converter/activation_store.h) and compares the repair's runs as they go, where it used to
// hold every activation of the reference run, of the fp16 step's run, of the repair's fp32 run
// and of each repair evaluation at once (the ISNet: 14.4 GB for a model whose `ovfix
// run` peaks at 0.84 GB). So its anonymous memory stays within docs/memory.md's bound, and
// what it holds beyond a run of the model does not grow with the activations.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/quantized_models.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "ir/tensor_proto.h"
#include "tests/support/child_memory.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMB = 1 << 20;

// A smooth, image-like input in [-1, 1]: a few slow waves per channel, as a photograph's
// colours vary (the quantizers' ranges come from the data).
Tensor SmoothImage(int64_t size) {
  Tensor t = Tensor::Uninitialized(DataType::kFloat, {1, 3, size, size});
  float* p = t.data<float>();
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t y = 0; y < size; ++y) {
      for (int64_t x = 0; x < size; ++x) {
        const double u = static_cast<double>(x) / size, v = static_cast<double>(y) / size;
        *p++ = static_cast<float>(0.6 * std::sin(6.0 * u + 2.0 * c) * std::cos(4.0 * v - c) +
                                  0.3 * std::sin(11.0 * (u + v) + c));
      }
    }
  }
  return t;
}

// Every value's bytes, by the shapes inference gives: (largest, sum over values).
std::pair<int64_t, int64_t> TensorBytes(const std::string& path) {
  auto model = LoadModel(path);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {0, 0};
  EXPECT_TRUE(InferShapes(**model).ok());
  int64_t largest = 0, total = 0;
  for (const Node* n : (*model)->graph().nodes()) {
    for (const Value* v : n->outputs()) {
      const std::optional<std::vector<int64_t>> dims = v->static_shape();
      if (!dims) continue;
      int64_t bytes = static_cast<int64_t>(ElementSize(v->elem_type()));
      for (int64_t d : *dims) bytes *= d;
      largest = std::max(largest, bytes);
      total += bytes;
    }
  }
  return {largest, total};
}

class QuantizedConversionMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ovfix_quantized_memory_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `proto` and a smooth image of `size` x `size` for it; returns the model's path.
  std::string Write(const onnx::ModelProto& proto, int64_t size) {
    const std::string model = (dir_ / "model.onnx").string();
    std::ofstream(model, std::ios::binary) << proto.SerializeAsString();
    EXPECT_TRUE(WriteTensorFile(Input(), SmoothImage(size), proto.graph().input(0).name()).ok());
    return model;
  }
  std::string Input() const { return (dir_ / "input_0.pb").string(); }

  testing::ChildRun Convert(const std::string& model, std::vector<std::string> extra) {
    std::vector<std::string> argv = {OVFIX_BINARY,
                                     "convert",
                                     model,
                                     (dir_ / "out.onnx").string(),
                                     "--target",
                                     "gpu-fp16",
                                     "--calibration-data",
                                     dir_.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return testing::RunWatchingMemory(argv);
  }

  fs::path dir_;
};

void Print(const char* what, const testing::ChildRun& run, int64_t bound) {
  std::printf("%s: peak RssAnon %lld MB (bound %lld MB), %.1f s\n", what,
              static_cast<long long>(run.peak_anonymous_bytes / kMB),
              static_cast<long long>(bound / kMB), run.seconds);
}

// A conversion without a repair (the tolerance is the worst element's, which fp16 meets):
// the reference run, the fp16 step and the file's run keep within 768 MB plus the largest
// tensor (818 MB) with 819 MB of activations in one run, where they held 1.48 GB.
TEST_F(QuantizedConversionMemory, DynamicQuantizedUnetStaysWithinTheBound) {
  const std::string model = Write(bench::DynamicQuantizedUnetModel(512), 512);
  const auto [largest, total] = TensorBytes(model);
  const int64_t bound = 768 * kMB + largest;
  ASSERT_GT(total, bound) << "the activations of one run must pass the bound for the test to "
                             "tell holding them from keeping them within it";
  testing::ChildRun run = Convert(model, {"--tolerance", "0.1"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_GT(run.peak_anonymous_bytes, 0) << "no RssAnon sample";
  EXPECT_LE(run.peak_anonymous_bytes, bound) << run.output;
  Print("convert", run, bound);
}

// With the repair's twenty runs (a QDQ model's fp16 conversion under the magnitude-only island
// policy, which leaves the float math feeding its quantizers in fp16, misses the criteria): what
// the conversion holds beyond a run of the model is fixed, the store's budget, the buffers a
// validation run keeps for reuse (128 MB each) and 64 MB for the graph's copies, where it held
// the fp32 run's activations and each evaluation's beside the reference run's (699 MB here,
// for a run of 40 MB).
TEST_F(QuantizedConversionMemory, RepairOfAQdqUnetHoldsAFixedAmountBeyondARun) {
  const std::string model = Write(bench::QdqUnetModel(256), 256);
  testing::ChildRun alone = testing::RunWatchingMemory(
      {OVFIX_BINARY, "run", model, "--input", absl::StrCat("image=", Input())});
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  const int64_t bound = alone.peak_anonymous_bytes + 320 * kMB;
  testing::ChildRun run = Convert(model, {"--fp16-islands", "magnitude"});
  ASSERT_NE(run.output.find("repair:"), std::string::npos)
      << "the test needs a conversion that repairs:\n"
      << run.output;
  // 1 when only the fp32 model meets the criterion: the memory is what is measured here.
  ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.output;
  EXPECT_LE(run.peak_anonymous_bytes, bound) << run.output;
  std::printf("run: peak RssAnon %lld MB\n",
              static_cast<long long>(alone.peak_anonymous_bytes / kMB));
  Print("convert with repair", run, bound);
}

}  // namespace
}  // namespace ovfix
