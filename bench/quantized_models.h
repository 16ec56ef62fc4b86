// The quantized models of the executor benchmark: a UNet-style segmentation net (as in
// generated_models.h) with its convolutions quantized the two ways onnxruntime's quantization
// tool writes them, built in C++ with seeded random weights.
#pragma once

#include <cstdint>

#include "bench/generated_models.h"
#include "onnx/onnx_pb.h"

namespace ovfix::bench {

// Dynamic quantization (quantize_dynamic): each Conv becomes DynamicQuantizeLinear of its
// input -> ConvInteger (uint8 x; int8 symmetric weights, its default, or uint8 asymmetric
// ones, weight_type=QUInt8) -> Cast to float -> Mul by the product of the two scales -> Add
// bias. Pooling, Resize and Concat stay float.
onnx::ModelProto DynamicQuantizedUnetModel(int64_t size, bool uint8_weights = false,
                                           const UnetWidths& widths = {});
// Static quantization in QDQ form (quantize_static, QuantFormat.QDQ): every Conv input
// passes QuantizeLinear -> DequantizeLinear (uint8, fixed calibrated scales), weights are
// int8 per output channel behind DequantizeLinear, biases int32 behind DequantizeLinear,
// and each Conv+Relu's output is quantized and dequantized again.
onnx::ModelProto QdqUnetModel(int64_t size, const UnetWidths& widths = {});

}  // namespace ovfix::bench
