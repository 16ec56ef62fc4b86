// Why an onnxruntime-quantized UNet came out 9% of the range away from onnxruntime, and the
// regression tests of that cause: bilinear Resize computed in double (one rounding) instead of
// onnxruntime's float sum of four weighted terms differed in the last bit; the next
// DynamicQuantizeLinear turns such a bit at a rounding boundary into a whole quantization step,
// and the steps compound through every quantized conv after it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "tests/kernels/math_test_util.h"
#include "tests/kernels/ort_quantized_unet.h"
#include "tests/support/ort_peer.h"

namespace ovfix::exec::math_testing {
namespace {

namespace fs = std::filesystem;

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

// 2x2 -> 4x4, half_pixel: output (1, 1) sits at input (0.25, 0.25), weights 9/16, 3/16, 3/16,
// 1/16 on 0.1f, 0.1f, 0.1f, 0.3f. Exactly that is 0.11250000223..., which rounds to
// 0x3DE66667; onnxruntime rounds each weighted term to float and sums left to right:
// 0.05625f + 0.01875f = 0.075f, + 0.01875f = 0.09375f, + 0.01875f (0.0625 * 0.3f) gives
// 0x3DE66666. ovfix must give onnxruntime's bits.
TEST(BilinearResizeRounding, SumsWeightedTermsInFloatAsOnnxruntimeDoes) {
  const Tensor x = FloatTensor({1, 1, 2, 2}, {0.1f, 0.1f, 0.1f, 0.3f});
  const Tensor scales = FloatTensor({4}, {1, 1, 2, 2});
  auto y = RunNode("Resize", 13, {x, Tensor(), scales}, {StringAttr("mode", "linear")});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].dims(), (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_EQ(Bits((*y)[0].data<float>()[5]), 0x3DE66666u) << (*y)[0].data<float>()[5];
  // Corners read one input element with weight 1 (or 1/2 twice): exact.
  EXPECT_EQ((*y)[0].data<float>()[0], 0.1f);
  EXPECT_EQ((*y)[0].data<float>()[15], 0.3f);
}

class OrtQuantizedUnet : public ::testing::TestWithParam<bool> {};

// The whole quantized net, ovfix against onnxruntime with its graph run as written: every
// op in it has one right answer in float or integer arithmetic, so they must agree bit for
// bit. Before the fix 38 (int8 weights) and 80 (uint8) of the 36864 outputs differed here.
TEST_P(OrtQuantizedUnet, MatchesOnnxruntimeBitForBit) {
  OVFIX_REQUIRE_ORT(modules);
  test_models::QuantizedUnetOptions options;
  options.size = 192;
  options.channels = 16;
  options.uint8_weights = GetParam();
  test_models::QuantizedUnetBuilder builder(options);
  onnx::ModelProto proto = builder.Build();
  const Tensor input = FloatTensor({1, 3, options.size, options.size}, builder.Input());

  const fs::path dir =
      fs::temp_directory_path() /
      ("ovfix_quant_unet_" + std::to_string(::getpid()) + (GetParam() ? "u" : "s"));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "model.onnx", std::ios::binary);
    ASSERT_TRUE(proto.SerializeToOstream(&out));
  }
  ASSERT_TRUE(WriteTensorFile((dir / "input_0.pb").string(), input, "x").ok());
  const std::string command = "NODE_PATH='" + modules + "' node '" OVFIX_SHARED_DIR +
                              std::string("/tools/ort/run.js' '") + (dir / "model.onnx").string() +
                              "' '" + (dir / "ort").string() + "' '" +
                              (dir / "input_0.pb").string() + "' --opt-level disabled > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  absl::StatusOr<Tensor> expected = ReadTensorFile((dir / "ort/output_0.pb").string());
  ASSERT_TRUE(expected.ok()) << expected.status();

  auto model = ModelFromProto(std::move(proto), dir.string(), "quantized_unet");
  ASSERT_TRUE(model.ok()) << model.status();
  SessionOptions session_options;
  session_options.threads = 2;
  auto session = CreateSession(**model, session_options);
  ASSERT_TRUE(session.ok()) << session.status();
  auto outputs = (*session)->Run({{"x", input}});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  fs::remove_all(dir);

  const Tensor& actual = (*outputs)[0];
  ASSERT_EQ(actual.dims(), expected->dims());
  int64_t differing = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    differing += Bits(actual.data<float>()[i]) != Bits(expected->data<float>()[i]);
  }
  EXPECT_EQ(differing, 0) << "of " << actual.numel() << " outputs";
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, OrtQuantizedUnet, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "uint8" : "int8"; });

}  // namespace
}  // namespace ovfix::exec::math_testing
