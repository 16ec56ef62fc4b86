// Test models for fp16 conversions, one per class of network users convert, built in C++
// with weights that look trained (He-scaled convolutions, BatchNormalization statistics
// settled on the photograph they are fed, residual branches scaled by depth) and fed real
// photographs (tests/data/photos, from scikit-image's data folder):
//   ocr_detector     DBNet-style text detector: stride-2 backbone, FPN with nearest
//                    upsampling, ConvTranspose head, sigmoid probability map; one head
//                    BatchNormalization channel has a variance of 9.79e7 (inf in fp16), as in
//                    PaddleOCR v4's detector. Fed a photographed printed page.
//   ctc_recognizer   SVTR/CRNN-style line recognizer: conv/pool to height 1, two attention
//                    blocks (LayerNorm, 4-head softmax attention, swish MLP), two MatMuls,
//                    softmax over 97 classes per column. Fed one line of that page.
//   classifier       torchvision ResNet-50 layout (3, 4, 6, 3 bottleneck blocks, downsample
//                    1x1 conv + BN, global pooling, Gemm to 1000 logits); each block's last
//                    BatchNormalization has the small gammas training leaves there. Fed a
//                    photograph of a cat; judged by its top 5 and the default criteria.
//   residual_mlp     deep residual MLP (Gemm -> Relu -> Gemm added to the stream, `blocks`
//                    of them) on a 16x16 photograph flattened to 768 features.
//   segmentation     UNet with nearest upsampling and Concat skips, three sigmoid maps
//                    (full, 1/2 and 1/4 resolution). Fed a photograph of a cup.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/executor.h"
#include "ir/model.h"
#include "ir/tensor.h"

namespace ovfix::test_models {

struct Fp16TestModel {
  std::string name;
  std::unique_ptr<Model> model;
  std::string input_name;
  Tensor input;  // the photograph, normalized, in the model's input layout
  // How a user judges each output, as `--accuracy NAME=CRITERION` arguments would say it
  // (converter/accuracy.h: mask@0.3:0.001, a mask at 0.3; top5:0, the top-5 classes; ...).
  std::vector<std::string> accuracy;
};

// The photograph `file` of tests/data/photos (uint8 [H, W, C]).
absl::StatusOr<Tensor> ReadPhoto(const std::string& file);
// The photograph `file` as float [1, 3, size, size] (NCHW), brought to that size by nearest
// pixels, each raw pixel value v (0-255) written as v * scale + offset.
absl::StatusOr<Tensor> ResizedPhoto(const std::string& file, int64_t size, float scale = 1,
                                    float offset = 0);

// The five classes above. `scale` multiplies channel widths (1: test size, seconds to
// convert; the benchmark uses larger ones); `blocks` is the residual MLP's depth.
absl::StatusOr<Fp16TestModel> OcrDetector(int scale = 1);
absl::StatusOr<Fp16TestModel> CtcRecognizer(int scale = 1);
absl::StatusOr<Fp16TestModel> Classifier(int scale = 1);
absl::StatusOr<Fp16TestModel> ResidualMlp(int blocks = 64);
absl::StatusOr<Fp16TestModel> Segmentation(int scale = 1);

// One of the five at test size, by its name ("ocr_detector", ...).
absl::StatusOr<Fp16TestModel> Fp16TestModelNamed(const std::string& name);

// Sets the statistics of every BatchNormalization of `model` to the mean and variance its
// input has over the batch and spatial dims on `inputs` (front to back, one run per
// layer depth until they settle), as training leaves running statistics.
absl::Status SettleBatchNorms(Model& model, const exec::TensorMap& inputs);

}  // namespace ovfix::test_models
