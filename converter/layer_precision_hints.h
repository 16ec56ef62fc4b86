// Layer precision hints for TensorRT builds that are not strongly typed: trtexec takes the
// precision of each layer from builder flags (--fp16, --bf16), and pins chosen layers with
// --precisionConstraints=obey --layerPrecisions=NAME:fp32,... --layerOutputTypes=NAME:fp32,...
// TensorRT's ONNX parser names each layer after its ONNX node, so the hints name the nodes of
// the converted model's fp32 islands; unnamed ones get a name here, written into the model.
// Main graph only: TensorRT names the layers of If/Loop bodies its own way.
#pragma once

#include <string>
#include <vector>

#include "ir/model.h"

namespace ovfix::converter {

struct LayerPrecisionHints {
  std::vector<std::string> fp32_nodes;  // node names, in graph order
  // An fp16 model's islands that compute in bfloat16 (--island-precision bf16), pinned as bf16.
  std::vector<std::string> bf16_nodes;
  std::string layer_precisions;    // "--layerPrecisions=a:fp32,b:fp32" ("" when none)
  std::string layer_output_types;  // "--layerOutputTypes=a:fp32,b:fp32+fp32"
  int named = 0;                   // nodes that had no name and got one
  // Nodes left out because their name holds ',' or ':', which the hint's syntax cannot quote.
  std::vector<std::string> unquotable;
};

// The hints for the nodes of `model`'s main graph that compute in fp32 (a float32 output, no
// float16/bfloat16 one; Casts and Constants aside) when the model computes in a 16-bit float
// somewhere; empty hints for a model that does not. Names unnamed fp32 nodes (unique).
LayerPrecisionHints MakeLayerPrecisionHints(Model& model);

}  // namespace ovfix::converter
