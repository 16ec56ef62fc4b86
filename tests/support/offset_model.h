// The small model that fp16 cannot hold, which the convert, repair and exit-code tests write:
// x + 1000 - 1000 loses x's fraction in fp16 (values near 1000 are 0.5 apart there) unless
// both the Add and the Sub compute in fp32.
#pragma once

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/text_form.h"

namespace ovfix::test_support {

// y = x + 1000 - 1000: only the fp32 model meets a tight criterion.
inline constexpr char kOffsetModel[] = R"(
    m (float[1, 64] x) => (float[1, 64] y) {
      offset = Constant <value = float[1] {1000}> ()
      shifted = Add(x, offset)
      y = Sub(shifted, offset)
    })";

// The same followed by a Mul by 0.5, which fp16 computes well.
inline constexpr char kOffsetThenHalfModel[] = R"(
    m (float[1, 64] x) => (float[1, 64] y) {
      offset = Constant <value = float[1] {1000}> ()
      half = Constant <value = float[1] {0.5}> ()
      shifted = Add(x, offset)
      back = Sub(shifted, offset)
      y = Mul(back, half)
    })";

// Saves the model of ONNX text `text` as `path` and returns the path (a parse or save
// failure fails the test that asked).
inline std::string SaveModelText(const std::filesystem::path& path, const char* text) {
  auto model = ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  if (model.ok()) {
    EXPECT_TRUE(SaveModel(**model, path.string()).ok());
  }
  return path.string();
}

}  // namespace ovfix::test_support
