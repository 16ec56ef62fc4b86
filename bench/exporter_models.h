// Generated models written the way PyTorch's exporter writes them (opset 14, no constant
// folding): shape arithmetic on static shapes left in (Shape -> Gather -> Unsqueeze -> Concat
// feeding Reshape), LayerNorm decomposed into ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/
// Mul/Add, GELU as x * 0.5 * (1 + erf(x / sqrt 2)), attention as MatMul, scale, mask Add,
// Softmax, MatMul. These are the graphs that onnxruntime rewrites when it loads them.
#pragma once

#include <cstdint>
#include <vector>

#include "onnx/onnx_pb.h"

namespace ovfix::bench {

// ConvNeXt blocks: 7x7 depthwise Conv, NCHW -> NHWC Transpose, decomposed LayerNorm,
// Linear (MatMul + Add) x4, Erf GELU, Linear, layer scale, NHWC -> NCHW, residual; 3 stages.
onnx::ModelProto ExportedConvNextModel();
// The same at another size: a square `image`, per-stage widths and block counts.
onnx::ModelProto ExportedConvNextModelSized(int64_t image, const std::vector<int64_t>& widths,
                                            const std::vector<int64_t>& depths);
// Swin-style window attention (stages at 28x28x96, 14x14x192, 7x7x384): window partition and
// reverse through shape arithmetic, qkv Reshape/Transpose/Gather, relative position bias, Softmax;
// GELU MLP.
onnx::ModelProto ExportedSwinModel();
// swin_t as torchvision exports it (224x224, depths 2/2/6/2, widths 96..768): the blocks of
// ExportedSwinModel plus the padding to windows from traced sizes and the shifted windows'
// attention mask, the per-node cost case (most of its nodes are shape arithmetic).
onnx::ModelProto ExportedSwinTModel();
// The per-node cost case at torchvision swin_t's node count (about 7000): the same export with
// 28 blocks (depths 2/2/22/2) at a quarter..third of swin_t's widths (32..256), so that the
// graph's small shape-arithmetic nodes weigh against little arithmetic.
onnx::ModelProto ExportedDeepSwinModel();
// A BERT-style encoder (128 tokens, width 256, 4 heads, 4 layers) with an additive attention
// mask computed from a 0/1 mask input, heads split by shape arithmetic, Div by sqrt(d).
onnx::ModelProto ExportedBertModel();
// The same at another size (`width` a multiple of `heads`).
onnx::ModelProto ExportedBertModelSized(int64_t tokens, int64_t width, int64_t heads,
                                        int64_t layers);
// A causal decoder (nn.TransformerEncoderLayer with a triu mask from Trilu/Where): fused qkv
// projection, 8 heads, scale after the MatMul, post-norm, GELU MLP; 128 tokens, width 256.
onnx::ModelProto ExportedCausalDecoderModel();
// A DenseNet-style net: BatchNormalization/Relu/Conv bottlenecks whose outputs are
// concatenated onto their inputs, transitions with AveragePool; 3 blocks of 6 layers.
onnx::ModelProto ExportedDenseNetModel();
// The same at another size: a square `image` (a multiple of 16), growth rate, layers per block.
onnx::ModelProto ExportedDenseNetModelSized(int64_t image, int64_t growth,
                                            int64_t layers_per_block);
// ExportedDenseNetModel as torchvision's DenseNet exports it: each layer concatenates every feature
// of its block so far (torch.cat(prev_features, 1)), and the block ends in the Concat of all of
// them, so the features are copied once per later layer unless Concats are views.
onnx::ModelProto ExportedTorchvisionDenseNetModel();
// An atrous segmentation head (DeepLab ASPP): strided backbone, dilated 3x3 Convs at rates
// 6/12/18, a pooled branch resized to the feature map by sizes from shape arithmetic, Concat,
// and a bilinear Resize of the logits to the input size.
onnx::ModelProto ExportedAtrousSegmentationModel();

// torchvision's resnet50 at 224x224 as exported without constant folding: bottlenecks 3/4/6/3
// (stride on the 3x3), a BatchNormalization after every bias-free Conv, Flatten + Gemm head.
onnx::ModelProto ExportedResNet50Model();
// torchvision's deeplabv3_mobilenet_v3_large (no aux head) on a square `image`: MobileNetV3-Large
// backbone (HardSwish / HardSigmoid ops, SE blocks through GlobalAveragePool, depthwise Convs,
// the last stage dilated for output stride 16), ASPP at rates 12/24/36 with a pooled branch
// Resized back by sizes from Shape/Slice/Concat, a bilinear Resize of the 21 class logits to
// the input size.
onnx::ModelProto ExportedDeepLabV3MobileNetV3Model(int64_t image = 512);
// A PP-OCRv4-style text recognizer on a 1x3x48x320 line: PPLCNetV3-like backbone (depthwise +
// pointwise ConvBN with HardSwish, SE in two blocks, strides (2,1)/(1,2)), AveragePool to 1x40,
// the SVTR neck (1x3 ConvBN + Swish, 2 transformer blocks with 8-head attention over the 40
// columns, Concat with the shortcut), a Linear CTC head over 6625 classes and Softmax.
onnx::ModelProto ExportedOcrRecognizerModel();
// transformers' BertModel at all-MiniLM-L6-v2's size (6 layers, width 384, 12 heads, 128
// tokens): int64 input_ids / attention_mask / token_type_ids, embeddings by Gather, positions
// sliced by the traced length, the extended mask as Unsqueeze/Unsqueeze/Cast/Sub/Mul by
// float's lowest value, and the Gemm + Tanh pooler as a second output.
onnx::ModelProto ExportedMaskedBertModel();

}  // namespace ovfix::bench
