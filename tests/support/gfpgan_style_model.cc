#include "tests/support/gfpgan_style_model.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "bench/model_builder.h"
#include "ir/model_io.h"
#include "ir/status_macros.h"

namespace ovfix::test_models {
namespace {

using bench::ModelBuilder;

// The photograph as float [1, C, H, W] in 0..255.
Tensor Planar(const Tensor& photo) {
  const int64_t h = photo.dim(0), w = photo.dim(1), c = photo.dim(2);
  Tensor out = Tensor::Uninitialized(DataType::kFloat, {1, c, h, w});
  const uint8_t* p = photo.data<uint8_t>();
  float* o = out.data<float>();
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t i = 0; i < h * w; ++i) o[ch * h * w + i] = p[i * c + ch];
  }
  return out;
}

}  // namespace

absl::StatusOr<Fp16TestModel> GfpganStyleBlock(bool energy_output) {
  ModelBuilder b(17, 41);
  constexpr int64_t kIn = 16, kOut = 32;
  const std::string x = b.Input("image", {1, 3, 96, 96});
  auto ints = [&](std::vector<int64_t> v) { return b.Int64s(v); };
  // Encoder: He-uniform 3x3 stride-2 conv on 0..255 pixels, LeakyRelu(0.2) * sqrt(2).
  std::string f =
      b.Op("Conv", {x, b.Weight({kIn, 3, 3, 3}, std::sqrt(6.0f / 27)), b.Weight({kIn}, 0.1f)},
           {ModelBuilder::Ints("kernel_shape", {3, 3}), ModelBuilder::Ints("strides", {2, 2}),
            ModelBuilder::Ints("pads", {1, 1, 1, 1})});
  f = b.Op("Mul", {b.Op("LeakyRelu", {f}, {ModelBuilder::Float("alpha", 0.2f)}),
                   b.Floats({std::sqrt(2.0f)})});
  // Pixel norm over channels.
  const std::string square = b.Op("Pow", {f, b.Floats({2.0f})});
  const std::string mean_sq = b.Op(
      "ReduceMean", {square}, {ModelBuilder::Ints("axes", {1}), ModelBuilder::Int("keepdims", 1)});
  const std::string norm = b.Op("Sqrt", {b.Op("Add", {mean_sq, b.Floats({1e-8f})})});
  const std::string p = b.Op("Div", {f, norm});
  // Style code from the encoder's features: Gemm(GAP(f)) + 1 (StyleGAN2's EqualLinear, bias 1).
  const std::string pooled = b.Op("Flatten", {b.Op("GlobalAveragePool", {f})});
  std::string style = b.Op("Gemm", {pooled, b.Weight({kIn, kIn}, 0.1f), b.Fill({kIn}, 1.0f)},
                           {ModelBuilder::Int("transB", 1)});
  // Modulated conv: w = W * style[c_in], demodulated per output channel.
  const std::string w = b.Weight({1, kOut, kIn, 3, 3}, std::sqrt(3.0f));  // unit variance
  const std::string w_mod = b.Op("Mul", {w, b.Op("Reshape", {style, ints({1, 1, kIn, 1, 1})})});
  const std::string sum_sq = b.Op("ReduceSum", {b.Op("Mul", {w_mod, w_mod}), ints({2, 3, 4})},
                                  {ModelBuilder::Int("keepdims", 0)});
  const std::string demod =
      b.Op("Pow", {b.Op("Add", {sum_sq, b.Floats({1e-8f})}), b.Floats({-0.5f})});
  const std::string w_demod =
      b.Op("Mul", {w_mod, b.Op("Reshape", {demod, ints({1, kOut, 1, 1, 1})})});
  std::string y =
      b.Op("Conv", {p, b.Op("Reshape", {w_demod, ints({kOut, kIn, 3, 3})})},
           {ModelBuilder::Ints("kernel_shape", {3, 3}), ModelBuilder::Ints("pads", {1, 1, 1, 1})});
  y = b.Op("Mul", {b.Op("LeakyRelu", {y}, {ModelBuilder::Float("alpha", 0.2f)}),
                   b.Floats({std::sqrt(2.0f)})});
  // To RGB in [-1, 1].
  const std::string rgb =
      b.Op("Tanh", {b.Op("Conv", {y, b.Weight({3, kOut, 1, 1}, 0.05f), b.Fill({3}, 0.0f)})});
  b.Output(rgb);
  if (energy_output) b.Output(b.Op("ReduceSum", {square}, {ModelBuilder::Int("keepdims", 1)}));
  onnx::ModelProto proto = b.model();
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                         ModelFromProto(std::move(proto), "", "gfpgan_style"));
  OVFIX_ASSIGN_OR_RETURN(Tensor photo, ReadPhoto("chelsea_96.pb"));
  Fp16TestModel m;
  m.name = "gfpgan_style";
  m.model = std::move(model);
  m.input_name = "image";
  m.input = Planar(photo);
  return m;
}

}  // namespace ovfix::test_models
