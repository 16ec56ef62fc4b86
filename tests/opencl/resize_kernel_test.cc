// Resize and Upsample on the OpenCL executor against the CPU executor: every mode, nearest
// rounding and coordinate transformation, scales and sizes, the opset 10 form and Upsample,
// ranks 1 to 5, bool data, in fp32, fp16-storage and (on devices with half arithmetic) fp16.
// (half_pixel_symmetric is opset 19's; antialias runs on the CPU.)
#include <string>
#include <vector>

#include "tests/opencl/matches_cpu.h"

namespace ovfix::exec::matches_cpu {
namespace {

std::string Floats(const std::vector<double>& v) {
  return absl::StrCat("float[", v.size(), "] {", absl::StrJoin(v, ", "), "}");
}
std::string Ints(const std::vector<int64_t>& v) {
  return absl::StrCat("int64[", v.size(), "] {", absl::StrJoin(v, ", "), "}");
}

// y = Resize<attributes>(x, roi, scales) with the scales a Constant.
OpCase WithScales(std::string name, Dims x, const std::vector<double>& scales,
                  std::string attributes, int opset = 13) {
  return Op(std::move(name), {Float("x", std::move(x))}, "float y",
            absl::StrCat("s = Constant<value = ", Floats(scales), ">()\n", "y = Resize<",
                         attributes, ">(x, , s)"),
            opset);
}

OpCase WithSizes(std::string name, Dims x, const std::vector<int64_t>& sizes,
                 std::string attributes, int opset = 13) {
  return Op(std::move(name), {Float("x", std::move(x))}, "float y",
            absl::StrCat("s = Constant<value = ", Ints(sizes), ">()\n", "y = Resize<", attributes,
                         ">(x, , , s)"),
            opset);
}

void AddNearest(std::vector<OpCase>& cases) {
  // Every nearest rounding with every coordinate mode it meets in exports, up and down.
  const char* roundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const char* coordinates[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                               "tf_half_pixel_for_nearest"};
  for (const char* rounding : roundings) {
    for (const char* coordinate : coordinates) {
      const bool down = std::string(rounding).size() % 2 == std::string(coordinate).size() % 2;
      const std::vector<double> scales =
          down ? std::vector<double>{1, 1, 0.6, 0.45} : std::vector<double>{1, 1, 1.7, 2.5};
      cases.push_back(Exact(WithScales(
          absl::StrCat("Resize_nearest_", rounding, "_", coordinate, down ? "_down" : "_up"),
          {1, 2, 5, 7}, scales,
          absl::StrCat("mode = \"nearest\", nearest_mode = \"", rounding,
                       "\", coordinate_transformation_mode = \"", coordinate, "\""))));
    }
  }
  cases.push_back(Exact(
      WithScales("Resize_nearest_default_2x", {2, 3, 4, 5}, {1, 1, 2, 2}, "mode = \"nearest\"")));
  cases.push_back(
      Exact(WithScales("Resize_nearest_half_pixel_symmetric", {1, 2, 5, 7}, {1, 1, 1.7, 0.6},
                       "mode = \"nearest\", coordinate_transformation_mode = "
                       "\"half_pixel_symmetric\"",
                       19)));
  cases.push_back(
      Exact(WithSizes("Resize_nearest_sizes", {1, 3, 4, 6}, {1, 3, 7, 5}, "mode = \"nearest\"")));
  cases.push_back(Exact(WithScales("Resize_nearest_1d", {9}, {2.5}, "mode = \"nearest\"")));
  cases.push_back(Exact(
      WithScales("Resize_nearest_5d", {1, 2, 3, 4, 5}, {1, 1, 2, 0.5, 1.5}, "mode = \"nearest\"")));
  // Other element types move as they are: a bool map made on the device (Greater).
  cases.push_back(
      Exact(Op("Resize_nearest_bool", {Float("x", {1, 2, 3, 4}), Float("z", {4})}, "bool y",
               "m = Greater(x, z)\n"
               "s = Constant<value = float[4] {1, 1, 2, 1.5}>()\n"
               "y = Resize<mode = \"nearest\">(m, , s)")));
  cases.push_back(
      Exact(WithScales("Resize_identity", {1, 2, 3, 4}, {1, 1, 1, 1}, "mode = \"linear\"")));
}

void AddLinearCubic(std::vector<OpCase>& cases) {
  const char* coordinates[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
  size_t next = 0;
  for (const char* mode : {"linear", "cubic"}) {
    // Bilinear resizes of the last two axes take onnxruntime's float arithmetic on both
    // backends: bit-identical outside half arithmetic.
    const auto bilinear = [&](OpCase c) {
      return std::string(mode) == "linear" ? ExactInFloat(std::move(c)) : c;
    };
    for (const char* coordinate : coordinates) {
      const std::vector<double> scales =
          next++ % 2 == 0 ? std::vector<double>{1, 1, 2, 2} : std::vector<double>{1, 1, 0.6, 1.7};
      cases.push_back(bilinear(
          WithScales(absl::StrCat("Resize_", mode, "_", coordinate), {1, 3, 5, 6}, scales,
                     absl::StrCat("mode = \"", mode, "\", coordinate_transformation_mode = \"",
                                  coordinate, "\""))));
    }
    cases.push_back(WithScales(absl::StrCat("Resize_", mode, "_half_pixel_symmetric"), {1, 2, 5, 6},
                               {1, 1, 1.6, 0.7},
                               absl::StrCat("mode = \"", mode,
                                            "\", coordinate_transformation_mode = "
                                            "\"half_pixel_symmetric\""),
                               19));
    cases.push_back(bilinear(WithSizes(absl::StrCat("Resize_", mode, "_sizes_align_corners"),
                                       {2, 2, 4, 5}, {2, 2, 9, 3},
                                       absl::StrCat("mode = \"", mode,
                                                    "\", coordinate_transformation_mode = "
                                                    "\"align_corners\""))));
  }
  cases.push_back(WithScales("Resize_cubic_a_exclude_outside", {1, 2, 6, 5}, {1, 1, 1.5, 0.8},
                             "mode = \"cubic\", cubic_coeff_a = -0.5, exclude_outside = 1"));
  // tf_crop_and_resize: a region, partly outside the input, with the extrapolation value.
  for (const char* mode : {"linear", "nearest", "cubic"}) {
    cases.push_back(Op(
        absl::StrCat("Resize_", mode, "_tf_crop_and_resize"), {Float("x", {1, 2, 6, 7})}, "float y",
        absl::StrCat("r = Constant<value = float[8] {0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3}>()\n"
                     "s = Constant<value = int64[4] {1, 2, 5, 8}>()\n"
                     "y = Resize<mode = \"",
                     mode,
                     "\", coordinate_transformation_mode = \"tf_crop_and_resize\", "
                     "extrapolation_value = 7.5>(x, r, , s)")));
  }
  cases.push_back(WithScales("Resize_linear_1d", {11}, {0.7}, "mode = \"linear\""));
  cases.push_back(
      WithScales("Resize_linear_3d_last_axis", {2, 3, 7}, {1, 1, 2.5}, "mode = \"linear\""));
  cases.push_back(WithScales("Resize_linear_5d_trilinear", {1, 2, 3, 4, 5}, {1, 1, 2, 1.5, 0.8},
                             "mode = \"linear\""));
  cases.push_back(WithScales("Resize_linear_batch_and_channels", {2, 4, 3, 3}, {0.5, 1.5, 2, 1},
                             "mode = \"linear\""));
  // Segmentation heads: 8x bilinear upsampling of a logits map.
  cases.push_back(
      ExactInFloat(WithScales("Resize_linear_segmentation_8x", {1, 5, 6, 8}, {1, 1, 8, 8},
                              "mode = \"linear\", coordinate_transformation_mode = "
                              "\"pytorch_half_pixel\"")));
}

void AddLegacyAndErrors(std::vector<OpCase>& cases) {
  for (const char* mode : {"nearest", "linear"}) {
    cases.push_back(Op(absl::StrCat("Resize_opset10_", mode), {Float("x", {1, 2, 4, 5})}, "float y",
                       absl::StrCat("s = Constant<value = float[4] {1, 1, 1.5, 2.5}>()\n"
                                    "y = Resize<mode = \"",
                                    mode, "\">(x, s)"),
                       10));
    cases.push_back(Op(absl::StrCat("Upsample_opset9_", mode), {Float("x", {1, 2, 4, 5})},
                       "float y",
                       absl::StrCat("s = Constant<value = float[4] {1, 1, 2, 3}>()\n"
                                    "y = Upsample<mode = \"",
                                    mode, "\">(x, s)"),
                       9));
  }
  cases.push_back(Op("Upsample_opset7_attribute", {Float("x", {1, 2, 4, 5})}, "float y",
                     "y = Upsample<mode = \"nearest\", scales = [1.0, 1.0, 2.0, 2.0]>(x)", 7));
  cases.push_back(Fails(Op("Resize_scales_and_sizes", {Float("x", {1, 2, 4, 5})}, "float y",
                           "s = Constant<value = float[4] {1, 1, 2, 2}>()\n"
                           "z = Constant<value = int64[4] {1, 2, 8, 10}>()\n"
                           "y = Resize(x, , s, z)")));
  cases.push_back(
      Fails(WithScales("Resize_scales_wrong_count", {1, 2, 4, 5}, {2, 2}, "mode = \"linear\"")));
  cases.push_back(
      Fails(WithScales("Resize_bad_mode", {1, 2, 4, 5}, {1, 1, 2, 2}, "mode = \"bicubic\"")));
}

std::vector<OpCase> AllCases() {
  return CasesOf<OpCase>({AddNearest, AddLinearCubic, AddLegacyAndErrors});
}

OVFIX_MATCHES_CPU_TEST(ResizeKernelTest, AllCases(),
                       FirstOfEach(AllCases(), {"Resize_nearest_", "Resize_linear_",
                                                "Resize_cubic_", "Resize_linear_tf_crop"}));

}  // namespace
}  // namespace ovfix::exec::matches_cpu
