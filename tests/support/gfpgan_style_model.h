// A GFPGAN-style face restoration block built in C++, for the fp16-safe rewrites: its input is
// a photograph in 0..255 (as face restoration exports take it), a stride-2 conv encoder, a
// StyleGAN pixel norm x / sqrt(mean_c(x^2) + 1e-8) over the encoder's features, a style code
// from their global average (Gemm + 1), a modulated 3x3 conv with StyleGAN2's weight
// demodulation rsqrt(sum(w_mod^2) + 1e-8) and a 1x1 to-RGB conv. The encoder's features reach
// ~1e3, so the pixel norm's mean of squares and the demodulation's sum of squares exceed
// fp16's 65504: with every tensor in fp16 the original computes inf there and its image is
// lost. Fed the cat photograph of tests/data/photos (chelsea_96.pb).
#pragma once

#include "absl/status/statusor.h"
#include "tests/support/fp16_models.h"

namespace ovfix::test_models {

// `energy_output`: a second output, the sum of the pixel norm's squares (1e9: beyond fp16 in
// the original too), which shares the square with the pixel norm.
absl::StatusOr<Fp16TestModel> GfpganStyleBlock(bool energy_output = false);

}  // namespace ovfix::test_models
