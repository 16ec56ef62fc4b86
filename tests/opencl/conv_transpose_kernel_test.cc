// ConvTranspose on the OpenCL executor against the CPU executor: 1-D to 3-D, groups, strides,
// dilations, pads, output_padding, output_shape and auto_pad, with and without bias, in fp32,
// fp16-storage and (on devices with half arithmetic) fp16.
#include <string>
#include <vector>

#include "tests/opencl/matches_cpu.h"

namespace ovfix::exec::matches_cpu {
namespace {

std::vector<OpCase> AllCases() {
  struct Transposed {
    std::string name;
    Dims x, w;
    std::string attributes;
    bool bias = false;
    int64_t group = 1;
  };
  const Transposed variants[] = {
      {"2d", {1, 3, 5, 5}, {3, 2, 3, 3}, ""},
      {"2d_bias", {2, 3, 4, 5}, {3, 4, 3, 3}, "", true},
      {"stride2_pads_output_padding",
       {1, 2, 4, 5},
       {2, 3, 3, 3},
       "strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 1]",
       true},
      // The decoder upsampling of segmentation nets (FCN, UNet): kernel 4, stride 2, pad 1.
      {"upsample_2x", {1, 4, 6, 6}, {4, 3, 4, 4}, "strides = [2, 2], pads = [1, 1, 1, 1]", true},
      {"groups", {1, 4, 5, 5}, {4, 3, 3, 3}, "group = 2, strides = [2, 1]", true, 2},
      {"depthwise", {1, 4, 5, 4}, {4, 1, 3, 3}, "group = 4, strides = [2, 2]"},
      {"dilations", {1, 2, 5, 5}, {2, 2, 3, 3}, "dilations = [2, 2], pads = [1, 0, 2, 1]"},
      {"same_upper", {1, 2, 4, 5}, {2, 3, 3, 3}, "auto_pad = \"SAME_UPPER\", strides = [2, 2]"},
      {"same_lower", {1, 2, 4, 5}, {2, 3, 4, 3}, "auto_pad = \"SAME_LOWER\", strides = [2, 3]"},
      {"valid", {1, 2, 3, 4}, {2, 2, 2, 2}, "auto_pad = \"VALID\", strides = [2, 2]"},
      {"output_shape", {1, 2, 4, 4}, {2, 3, 3, 3}, "strides = [3, 2], output_shape = [12, 10]"},
      {"1d", {2, 3, 7}, {3, 2, 3}, "strides = [3], pads = [1, 2]", true},
      {"3d", {1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, "strides = [2, 1, 2], pads = [0, 1, 1, 1, 0, 0]"},
      {"asymmetric_kernel",
       {1, 3, 5, 6},
       {3, 2, 1, 5},
       "strides = [1, 3], output_padding = [0, 2]"},
  };
  std::vector<OpCase> cases;
  for (const Transposed& t : variants) {
    std::vector<Input> inputs = {Float("x", t.x), Float("w", t.w)};
    if (t.bias) inputs.push_back(Float("b", {t.w[1] * t.group}));
    std::string attributes = t.attributes.empty() ? "" : absl::StrCat("<", t.attributes, ">");
    cases.push_back(
        Op(absl::StrCat("ConvTranspose_", t.name), inputs, "float y",
           absl::StrCat("y = ConvTranspose", attributes, "(x, w", t.bias ? ", b" : "", ")"), 11));
  }
  cases.push_back(Fails(Op("ConvTranspose_channels_mismatch",
                           {Float("x", {1, 3, 4, 4}), Float("w", {2, 2, 3, 3})}, "float y",
                           "y = ConvTranspose(x, w)", 11)));
  cases.push_back(Fails(Op("ConvTranspose_output_padding_count",
                           {Float("x", {1, 2, 4, 4}), Float("w", {2, 2, 3, 3})}, "float y",
                           "y = ConvTranspose<output_padding = [1]>(x, w)", 11)));
  return cases;
}

OVFIX_MATCHES_CPU_TEST(ConvTransposeKernelTest, AllCases(),
                       FirstOfEach(AllCases(), {"ConvTranspose_2d_bias", "ConvTranspose_groups",
                                                "ConvTranspose_3d"}));

}  // namespace
}  // namespace ovfix::exec::matches_cpu
