// The generated models of the executor benchmark: the classes of net that the executor was
// slow on, built in C++ with seeded random weights (no downloads).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/model_builder.h"
#include "onnx/onnx_pb.h"

namespace ovfix::bench {

// A UNet-style segmentation net on a size x size RGB image: four levels of two 3x3
// Conv+Relu, MaxPool down, bilinear Resize up, Concat skips, a 1x1 head.
onnx::ModelProto UnetModel(int64_t size);

// A conv layer of some kind (float, quantized): (builder, input, in channels, out channels,
// kernel, followed by Relu) -> output.
using ConvLayer =
    std::function<std::string(ModelBuilder&, const std::string&, int64_t, int64_t, int64_t, bool)>;
// The channel widths of a UNet: one per level going down, then the bottleneck's.
struct UnetWidths {
  std::vector<int64_t> levels = {16, 32, 64, 128};
  int64_t bottleneck = 256;
};
// The UnetModel net built into `b` with its convolutions made by `conv`.
void BuildUnet(ModelBuilder& b, int64_t size, const ConvLayer& conv, const UnetWidths& widths = {});
// A ViT-style encoder: 16x16 patch embedding (Conv), LayerNormalization, MatMul attention
// with Softmax, GELU (as Erf) MLP, residual Adds; 197 tokens of width 384, 6 heads, 6 layers.
onnx::ModelProto VitEncoderModel();
// A ConvNeXt-like net: 7x7 depthwise Conv, LayerNormalization over channels (channels-last
// through Transpose), pointwise MatMuls with GELU, layer scale, residual Adds.
onnx::ModelProto ConvNextModel();
// A MobileNetV3-like backbone (as in text detectors): inverted residuals with 3x3 and 5x5
// depthwise Convs, hard-swish written as Add/Clip/Mul/Div, squeeze-excitation.
onnx::ModelProto MobileNetV3Model();
// The executor's cost per node: a chain of `nodes` Adds of a [1, 16] tensor and a constant,
// whose arithmetic is nothing (the bench's time per node is the executor's own).
onnx::ModelProto AddChainModel(int64_t nodes);

}  // namespace ovfix::bench
