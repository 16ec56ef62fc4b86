#include "bench/generated_models.h"

#include <cmath>
#include <string>
#include <vector>

#include "bench/model_builder.h"

namespace ovfix::bench {
namespace {

using B = ModelBuilder;
constexpr int kOpset = 17;

std::string Relu(B& b, const std::string& x) { return b.Op("Relu", {x}); }

// x * Clip(x + 3, 0, 6) / 6, as exporters write hard-swish for old opsets.
std::string HardSwish(B& b, const std::string& x) {
  const std::string shifted = b.Op("Add", {x, b.Fill({}, 3.0f)});
  const std::string clipped = b.Op("Clip", {shifted, b.Fill({}, 0.0f), b.Fill({}, 6.0f)});
  return b.Op("Div", {b.Op("Mul", {x, clipped}), b.Fill({}, 6.0f)});
}

// 0.5 * x * (1 + erf(x / sqrt(2))), as exporters write GELU before opset 20.
std::string Gelu(B& b, const std::string& x) {
  const std::string erf = b.Op("Erf", {b.Op("Div", {x, b.Fill({}, std::sqrt(2.0f))})});
  const std::string one_plus = b.Op("Add", {erf, b.Fill({}, 1.0f)});
  return b.Op("Mul", {b.Op("Mul", {x, one_plus}), b.Fill({}, 0.5f)});
}

std::string LayerNorm(B& b, const std::string& x, int64_t width) {
  return b.Op("LayerNormalization", {x, b.Fill({width}, 1.0f), b.Weight({width}, 0.02f)},
              {B::Int("axis", -1), B::Float("epsilon", 1e-6f)});
}

// x (..., in) times a random (in x out) matrix, plus a bias.
std::string Linear(B& b, const std::string& x, int64_t in, int64_t out) {
  const std::string w = b.Weight({in, out}, std::sqrt(3.0f / in));
  return b.Op("Add", {b.Op("MatMul", {x, w}), b.Weight({out}, 0.02f)});
}

}  // namespace

void BuildUnet(ModelBuilder& b, int64_t size, const ConvLayer& conv, const UnetWidths& unet) {
  using B = ModelBuilder;
  std::string x = b.Input("image", {1, 3, size, size});
  const std::vector<int64_t>& widths = unet.levels;
  auto double_conv = [&](std::string in, int64_t in_channels, int64_t out_channels) {
    in = conv(b, in, in_channels, out_channels, 3, true);
    return conv(b, in, out_channels, out_channels, 3, true);
  };
  std::vector<std::string> skips;
  int64_t channels = 3;
  for (int64_t w : widths) {
    x = double_conv(x, channels, w);
    skips.push_back(x);
    x = b.Op("MaxPool", {x},
             {B::Int("ceil_mode", 0), B::Ints("kernel_shape", {2, 2}),
              B::Ints("pads", {0, 0, 0, 0}), B::Ints("strides", {2, 2})});
    channels = w;
  }
  x = double_conv(x, channels, unet.bottleneck);
  channels = unet.bottleneck;
  const std::string scales = b.Floats({1.0f, 1.0f, 2.0f, 2.0f});
  for (int i = static_cast<int>(widths.size()) - 1; i >= 0; --i) {
    const std::string up = b.Op(
        "Resize", {x, "", scales},
        {B::String("mode", "linear"), B::String("coordinate_transformation_mode", "half_pixel")});
    x = b.Op("Concat", {up, skips[i]}, {B::Int("axis", 1)});
    x = double_conv(x, channels + widths[i], widths[i]);
    channels = widths[i];
  }
  b.Output(conv(b, x, channels, 2, 1, false));
}

onnx::ModelProto UnetModel(int64_t size) {
  B b(kOpset, 11);
  BuildUnet(b, size,
            [](B& b, const std::string& in, int64_t in_channels, int64_t out_channels,
               int64_t kernel, bool relu) {
              const std::string y = b.Conv(in, in_channels, out_channels, kernel);
              return relu ? Relu(b, y) : y;
            });
  return b.model();
}

onnx::ModelProto VitEncoderModel() {
  B b(kOpset, 12);
  constexpr int64_t kWidth = 384, kHeads = 6, kHeadWidth = 64, kTokens = 197, kLayers = 6;
  const std::string image = b.Input("image", {1, 3, 224, 224});
  std::string x = b.Conv(image, 3, kWidth, 16, 16);
  x = b.Op("Reshape", {x, b.Int64s({1, kWidth, kTokens - 1})});
  x = b.Op("Transpose", {x}, {B::Ints("perm", {0, 2, 1})});
  x = b.Op("Concat", {b.Weight({1, 1, kWidth}, 0.02f), x}, {B::Int("axis", 1)});
  x = b.Op("Add", {x, b.Weight({1, kTokens, kWidth}, 0.02f)});
  const std::string heads_shape = b.Int64s({1, kTokens, kHeads, kHeadWidth});
  const std::string tokens_shape = b.Int64s({1, kTokens, kWidth});
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    const std::string h = LayerNorm(b, x, kWidth);
    auto project = [&](const std::vector<int64_t>& perm) {
      const std::string p = b.Op("Reshape", {Linear(b, h, kWidth, kWidth), heads_shape});
      return b.Op("Transpose", {p}, {B::Ints("perm", perm)});
    };
    const std::string q = project({0, 2, 1, 3});
    const std::string k = project({0, 2, 3, 1});
    const std::string v = project({0, 2, 1, 3});
    std::string scores = b.Op("Mul", {b.Op("MatMul", {q, k}), b.Fill({}, 0.125f)});
    scores = b.Op("Softmax", {scores}, {B::Int("axis", -1)});
    std::string attended = b.Op("MatMul", {scores, v});
    attended = b.Op("Transpose", {attended}, {B::Ints("perm", {0, 2, 1, 3})});
    attended = b.Op("Reshape", {attended, tokens_shape});
    x = b.Op("Add", {x, Linear(b, attended, kWidth, kWidth)});
    const std::string mlp = Gelu(b, Linear(b, LayerNorm(b, x, kWidth), kWidth, 4 * kWidth));
    x = b.Op("Add", {x, Linear(b, mlp, 4 * kWidth, kWidth)});
  }
  b.Output(LayerNorm(b, x, kWidth));
  return b.model();
}

onnx::ModelProto ConvNextModel() {
  B b(kOpset, 13);
  const std::vector<int64_t> widths = {64, 128, 256, 512}, depths = {2, 2, 4, 2};
  std::string x = b.Conv(b.Input("image", {1, 3, 224, 224}), 3, widths[0], 4, 4);
  for (size_t stage = 0; stage < widths.size(); ++stage) {
    const int64_t c = widths[stage];
    if (stage > 0) x = b.Conv(x, widths[stage - 1], c, 2, 2);
    for (int64_t block = 0; block < depths[stage]; ++block) {
      std::string h = b.Conv(x, c, c, 7, 1, c);
      h = b.Op("Transpose", {h}, {B::Ints("perm", {0, 2, 3, 1})});
      h = Gelu(b, Linear(b, LayerNorm(b, h, c), c, 4 * c));
      h = b.Op("Mul", {Linear(b, h, 4 * c, c), b.Fill({c}, 0.1f)});
      h = b.Op("Transpose", {h}, {B::Ints("perm", {0, 3, 1, 2})});
      x = b.Op("Add", {x, h});
    }
  }
  b.Output(b.Op("GlobalAveragePool", {x}));
  return b.model();
}

onnx::ModelProto MobileNetV3Model() {
  B b(kOpset, 14);
  struct Block {
    int64_t kernel, expand, out;
    bool se, hard_swish;
    int64_t stride;
  };
  // MobileNetV3-large's table.
  const std::vector<Block> blocks = {
      {3, 16, 16, false, false, 1}, {3, 64, 24, false, false, 2}, {3, 72, 24, false, false, 1},
      {5, 72, 40, true, false, 2},  {5, 120, 40, true, false, 1}, {5, 120, 40, true, false, 1},
      {3, 240, 80, false, true, 2}, {3, 200, 80, false, true, 1}, {3, 184, 80, false, true, 1},
      {3, 184, 80, false, true, 1}, {3, 480, 112, true, true, 1}, {3, 672, 112, true, true, 1},
      {5, 672, 160, true, true, 2}, {5, 960, 160, true, true, 1}, {5, 960, 160, true, true, 1}};
  std::string x = HardSwish(b, b.Conv(b.Input("image", {1, 3, 320, 320}), 3, 16, 3, 2));
  int64_t channels = 16;
  for (const Block& k : blocks) {
    auto act = [&](const std::string& v) { return k.hard_swish ? HardSwish(b, v) : Relu(b, v); };
    std::string h = x;
    if (k.expand != channels) h = act(b.Conv(h, channels, k.expand, 1));
    h = act(b.Conv(h, k.expand, k.expand, k.kernel, k.stride, k.expand));
    if (k.se) {
      const int64_t squeezed = k.expand / 4;
      std::string s = b.Op("GlobalAveragePool", {h});
      s = Relu(b, b.Conv(s, k.expand, squeezed, 1));
      s = b.Op("HardSigmoid", {b.Conv(s, squeezed, k.expand, 1)},
               {B::Float("alpha", 1.0f / 6), B::Float("beta", 0.5f)});
      h = b.Op("Mul", {h, s});
    }
    h = b.Conv(h, k.expand, k.out, 1);
    x = k.stride == 1 && k.out == channels ? b.Op("Add", {x, h}) : h;
    channels = k.out;
  }
  x = HardSwish(b, b.Conv(x, channels, 960, 1));
  // A text detector's head: two stride-2 transposed convolutions up to a probability map.
  x = Relu(b, b.Conv(x, 960, 64, 1));
  auto up = [&](const std::string& in, int64_t in_channels, int64_t out_channels) {
    const std::string w =
        b.Weight({in_channels, out_channels, 2, 2}, std::sqrt(3.0f / in_channels));
    return b.Op("ConvTranspose", {in, w, b.Weight({out_channels}, 0.02f)},
                {B::Ints("kernel_shape", {2, 2}), B::Ints("strides", {2, 2})});
  };
  x = Relu(b, up(x, 64, 32));
  b.Output(b.Op("Sigmoid", {up(x, 32, 1)}));
  return b.model();
}

onnx::ModelProto AddChainModel(int64_t nodes) {
  B b(kOpset, 15);
  std::string x = b.Input("x", {1, 16});
  const std::string step = b.Fill({1, 16}, 1e-3f);
  for (int64_t i = 0; i < nodes; ++i) x = b.Op("Add", {x, step});
  b.Output(x);
  return b.model();
}

}  // namespace ovfix::bench
