// Tests of the window and filter bank generators (exec/cpu/signal.cc): windows of size 4, periodic
// and symmetric, worked by hand from w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), the
// output types, and bad sizes.
#include <cstdint>
#include <string>
#include <vector>

#include "exec/kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

using ::testing::HasSubstr;

Tensor Size(int64_t n) { return Tensor::FromVector<int64_t>(DataType::kInt64, {}, {n}); }

std::vector<double> Window(const std::string& op, int64_t periodic) {
  auto out = RunNode(op, 17, {Size(4)}, {IntAttr("periodic", periodic)});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  const Tensor& y = (*out)[0];
  EXPECT_EQ(y.type(), DataType::kFloat);
  EXPECT_EQ(y.dims(), std::vector<int64_t>{4});
  std::vector<double> v;
  for (int64_t i = 0; i < y.numel(); ++i) v.push_back(y.GetAsDouble(i));
  return v;
}

void ExpectWindow(const std::vector<double>& actual, const std::vector<double>& expected,
                  const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-6) << what << " element " << i;
  }
}

// Periodic: N = 4, angles 0, pi/2, pi, 3pi/2. Symmetric: N = 3, angles 0, 2pi/3, 4pi/3, 2pi.
TEST(WindowTest, HannSizeFour) {
  ExpectWindow(Window("HannWindow", 1), {0, 0.5, 1, 0.5}, "periodic");
  ExpectWindow(Window("HannWindow", 0), {0, 0.75, 0.75, 0}, "symmetric");
}

TEST(WindowTest, HammingSizeFour) {
  // a0 = 25/46, a1 = 21/46.
  ExpectWindow(Window("HammingWindow", 1), {4.0 / 46, 25.0 / 46, 1, 25.0 / 46}, "periodic");
  ExpectWindow(Window("HammingWindow", 0), {4.0 / 46, 71.0 / 92, 71.0 / 92, 4.0 / 46}, "symmetric");
}

TEST(WindowTest, BlackmanSizeFour) {
  // a0 = 0.42, a1 = 0.5, a2 = 0.08: 0.42 - 0 - 0.08 at pi/2, 0.42 + 0.25 - 0.04 at 2pi/3.
  ExpectWindow(Window("BlackmanWindow", 1), {0, 0.34, 1, 0.34}, "periodic");
  ExpectWindow(Window("BlackmanWindow", 0), {0, 0.63, 0.63, 0}, "symmetric");
}

TEST(WindowTest, PeriodicIsTheDefault) {
  auto out = RunNode("HannWindow", 17, {Size(4)}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {4}, {0, 0.5, 1, 0.5}, 1e-6, "default");
}

TEST(WindowTest, OutputDatatypeAndInt32Size) {
  const Tensor size32 = Tensor::FromVector<int32_t>(DataType::kInt32, {}, {4});
  auto as_double = RunNode("HannWindow", 18, {size32}, {IntAttr("output_datatype", 11)});
  ASSERT_TRUE(as_double.ok()) << as_double.status();
  EXPECT_EQ((*as_double)[0].type(), DataType::kDouble);
  ExpectNear((*as_double)[0], {4}, {0, 0.5, 1, 0.5}, 1e-12, "double");
  // Integer types truncate as Cast does: only the 1 survives.
  auto as_int = RunNode("HannWindow", 17, {Size(4)}, {IntAttr("output_datatype", 6)});
  ASSERT_TRUE(as_int.ok()) << as_int.status();
  EXPECT_EQ((*as_int)[0].type(), DataType::kInt32);
  ExpectNear((*as_int)[0], {4}, {0, 0, 1, 0}, 0, "int32");
  auto as_half = RunNode("HannWindow", 17, {Size(4)}, {IntAttr("output_datatype", 10)});
  ASSERT_TRUE(as_half.ok()) << as_half.status();
  EXPECT_EQ((*as_half)[0].type(), DataType::kFloat16);
  ExpectNear((*as_half)[0], {4}, {0, 0.5, 1, 0.5}, 0, "float16");
}

TEST(WindowTest, EmptyAndBadSizes) {
  auto empty = RunNode("BlackmanWindow", 17, {Size(0)}, {});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].dims(), std::vector<int64_t>{0});
  auto negative = RunNode("HannWindow", 17, {Size(-1)}, {});
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(std::string(negative.status().message()), HasSubstr("size -1 out of range"));
  auto vector_size =
      RunNode("HannWindow", 17, {Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {4, 4})}, {});
  ASSERT_FALSE(vector_size.ok());
  EXPECT_THAT(std::string(vector_size.status().message()), HasSubstr("int64 scalar"));
  auto string_type = RunNode("HannWindow", 17, {Size(4)}, {IntAttr("output_datatype", 8)});
  ASSERT_FALSE(string_type.ok());
  EXPECT_THAT(std::string(string_type.status().message()),
              HasSubstr("unsupported output_datatype string"));
}

Tensor Int32(int32_t v) { return Tensor::FromVector<int32_t>(DataType::kInt32, {}, {v}); }
Tensor Float(float v) { return Tensor::FromVector<float>(DataType::kFloat, {}, {v}); }

// Two bands between 0 and 8.4 Hz over the 9 bins of a 16-point DFT at 16 Hz: the four band
// edges, evenly spaced in mel with step mel(8.4) / 4, sit at 0, 2.09, 4.19 and 6.29 Hz, that
// is at bins floor(17 f / 16) = 0, 2, 4, 6. Band 0 rises over bins 0..2 and falls to bin 4,
// band 1 rises over 2..4 and falls to 6.
TEST(MelWeightMatrixTest, TwoBandsWorkedByHand) {
  auto out =
      RunNode("MelWeightMatrix", 17, {Int32(2), Int32(16), Int32(16), Float(0), Float(8.4f)}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].type(), DataType::kFloat);
  ExpectNear((*out)[0], {9, 2}, {0, 0, 0.5, 0, 1, 0, 0.5, 0.5, 0, 1, 0, 0.5, 0, 0, 0, 0, 0, 0},
             1e-6, "mel");
}

TEST(MelWeightMatrixTest, OutputTypeAndBadInputs) {
  auto as_double =
      RunNode("MelWeightMatrix", 17, {Int32(2), Int32(16), Int32(16), Float(0), Float(8.4f)},
              {IntAttr("output_datatype", 11)});
  ASSERT_TRUE(as_double.ok()) << as_double.status();
  EXPECT_EQ((*as_double)[0].type(), DataType::kDouble);
  auto no_bands =
      RunNode("MelWeightMatrix", 17, {Int32(0), Int32(16), Int32(16), Float(0), Float(8.4f)}, {});
  ASSERT_FALSE(no_bands.ok());
  // An upper edge above the Nyquist frequency puts band edges past the last bin.
  auto too_high =
      RunNode("MelWeightMatrix", 17, {Int32(2), Int32(16), Int32(16), Float(0), Float(100)}, {});
  ASSERT_FALSE(too_high.ok());
  EXPECT_THAT(std::string(too_high.status().message()), HasSubstr("outside"));
}

}  // namespace
}  // namespace ovfix::exec::math_testing
