// TopK, NonZero, NonMaxSuppression and RoiAlign on the OpenCL executor against the CPU
// executor, in fp32, fp16-storage and (on devices with half arithmetic) fp16. Orders and
// indices must agree exactly (ties included); NonZero's and NonMaxSuppression's outputs have
// data-dependent sizes, which must agree too.
#include <string>
#include <vector>

#include "exec/opencl/op_context.h"
#include "tests/opencl/matches_cpu.h"

namespace ovfix::exec::matches_cpu {
namespace {

void AddTopK(std::vector<OpCase>& cases) {
  struct TopK {
    std::string name;
    Dims x;
    int64_t k, axis;
    std::string attributes;
    bool ties = false;
  };
  const TopK cases_k[] = {
      {"last_axis", {3, 10}, 3, -1, ""},
      {"smallest", {3, 10}, 4, 1, "largest = 0"},
      {"axis0", {6, 2, 3}, 2, 0, ""},
      {"middle_axis_all", {2, 5, 4}, 5, 1, ""},
      {"unsorted", {4, 9}, 3, -1, "sorted = 0"},
      {"k0", {3, 4}, 0, -1, ""},
      {"ties_largest", {4, 12}, 5, -1, "", true},
      {"ties_smallest", {4, 12}, 5, -1, "largest = 0", true},
      {"large_axis", {2, 3000}, 50, -1, ""},
      {"detector_scores", {1, 8, 400}, 100, 2, ""},
  };
  for (const TopK& t : cases_k) {
    const Input x = t.ties ? Integral("x", t.x, -3, 3) : Float("x", t.x);
    const std::string attributes =
        absl::StrCat("<axis = ", t.axis, t.attributes.empty() ? "" : ", ", t.attributes, ">");
    cases.push_back(Exact(Op(absl::StrCat("TopK_", t.name), {x}, "float v, int64 i",
                             absl::StrCat("k = Constant<value = int64[1] {", t.k, "}>()\n",
                                          "v, i = TopK", attributes, "(x, k)"),
                             11)));
  }
  // Sorted input (the first TopK sorts it ascending), with ties: the worst order for a scan
  // from the start.
  cases.push_back(
      Exact(Op("TopK_of_sorted_input", {Integral("x", {2, 300}, -40, 40)}, "float v, int64 i",
               "n = Constant<value = int64[1] {300}>()\n"
               "k = Constant<value = int64[1] {20}>()\n"
               "s, j = TopK<largest = 0>(x, n)\n"
               "v, i = TopK(s, k)",
               11)));
  cases.push_back(Exact(Op("TopK_opset1_attribute", {Float("x", {3, 7})}, "float v, int64 i",
                           "v, i = TopK<k = 2>(x)", 1)));
  cases.push_back(Exact(Op("TopK_opset10_input", {Float("x", {3, 7})}, "float v, int64 i",
                           "k = Constant<value = int64[1] {4}>()\nv, i = TopK(x, k)", 10)));
  cases.push_back(Fails(Op("TopK_k_too_large", {Float("x", {3, 7})}, "float v, int64 i",
                           "k = Constant<value = int64[1] {8}>()\nv, i = TopK(x, k)", 11)));
  cases.push_back(
      Fails(Op("TopK_axis_out_of_range", {Float("x", {3, 7})}, "float v, int64 i",
               "k = Constant<value = int64[1] {2}>()\nv, i = TopK<axis = 2>(x, k)", 11)));
}

void AddNonZero(std::vector<OpCase>& cases) {
  // Whole numbers in [-1, 1]: a third are zeros (and -0 is zero).
  for (const Dims& dims : {Dims{3, 4, 5}, Dims{1000}, Dims{3, 700}, Dims{2, 1, 3, 1, 2}}) {
    cases.push_back(Exact(Op(absl::StrCat("NonZero_float_", absl::StrJoin(dims, "x")),
                             {Integral("x", dims, -1, 1)}, "int64 y", "y = NonZero(x)")));
  }
  cases.push_back(Exact(Op("NonZero_of_negated_zeros", {Integral("x", {4, 6}, 0, 1)}, "int64 y",
                           "n = Neg(x)\ny = NonZero(n)")));
  cases.push_back(Exact(Op("NonZero_bool_mask", {Float("x", {2, 3, 50}), Float("z", {50})},
                           "int64 y", "m = Greater(x, z)\ny = NonZero(m)")));
  cases.push_back(
      Exact(Op("NonZero_all_zero", {Integral("x", {3, 4}, 0, 0)}, "int64 y", "y = NonZero(x)")));
  cases.push_back(
      Exact(Op("NonZero_scalar", {Integral("x", {}, 1, 1)}, "int64 y", "y = NonZero(x)")));
  cases.push_back(Exact(Op("NonZero_empty", {Float("x", {2, 0})}, "int64 y", "y = NonZero(x)")));
}

// boxes [batches, count, 4] and scores [batches, classes, count] as graph inputs, the other
// inputs as Constants (`arguments` names those the node takes after b and s).
OpCase Nms(std::string name, int64_t batches, int64_t classes, int64_t count, std::string constants,
           std::string arguments, std::string attributes = "", bool tied_scores = false) {
  Input scores = tied_scores ? Integral("s", {batches, classes, count}, 0, 4)
                             : Float("s", {batches, classes, count}, 0, 1);
  return Exact(Op(
      absl::StrCat("NonMaxSuppression_", name), {Float("b", {batches, count, 4}, 0, 1), scores},
      "int64 y",
      absl::StrCat(constants, "y = NonMaxSuppression", attributes, "(b, s", arguments, ")"), 11));
}

void AddNms(std::vector<OpCase>& cases) {
  const std::string limits =
      "m = Constant<value = int64[1] {5}>()\n"
      "t = Constant<value = float[1] {0.3}>()\n"
      "c = Constant<value = float[1] {0.2}>()\n";
  cases.push_back(Nms("thresholds", 1, 3, 40, limits, ", m, t, c"));
  cases.push_back(Nms("two_batches", 2, 2, 30, limits, ", m, t, c"));
  cases.push_back(Nms("no_score_threshold", 1, 2, 30, limits, ", m, t"));
  cases.push_back(Nms("center_point_box", 1, 2, 30, limits, ", m, t, c", "<center_point_box = 1>"));
  cases.push_back(Nms("tied_scores", 1, 2, 30, limits, ", m, t, c", "", true));
  cases.push_back(Nms("keep_all", 1, 1, 25,
                      "m = Constant<value = int64[1] {100}>()\n"
                      "t = Constant<value = float[1] {0.7}>()\n",
                      ", m, t"));
  cases.push_back(Nms("defaults_select_nothing", 1, 2, 10, "", ""));
  cases.push_back(Nms("detector_head", 1, 4, 300,
                      "m = Constant<value = int64[1] {20}>()\n"
                      "t = Constant<value = float[1] {0.5}>()\n"
                      "c = Constant<value = float[1] {0.05}>()\n",
                      ", m, t, c"));
  cases.push_back(Fails(Nms("iou_threshold_above_1", 1, 1, 10,
                            "m = Constant<value = int64[1] {5}>()\n"
                            "t = Constant<value = float[1] {1.5}>()\n",
                            ", m, t")));
  cases.push_back(Fails(Op("NonMaxSuppression_scores_shape",
                           {Float("b", {1, 10, 4}, 0, 1), Float("s", {1, 1, 9}, 0, 1)}, "int64 y",
                           "y = NonMaxSuppression(b, s)", 11)));
}

void AddRoiAlign(std::vector<OpCase>& cases) {
  const std::string rois =
      "r = Constant<value = float[4, 4] {0, 0, 7, 5, 2.5, 1.5, 9.5, 8, 1, 3, 3, 4, "
      "-2, -1, 13, 11}>()\n"
      "n = Constant<value = int64[4] {0, 1, 1, 0}>()\n";
  struct Roi {
    std::string name, attributes;
    int opset = 16;
  };
  const Roi variants[] = {
      {"avg_half_pixel", "output_height = 3, output_width = 4, sampling_ratio = 2"},
      {"max_half_pixel", "mode = \"max\", output_height = 3, output_width = 2"},
      {"avg_output_half_pixel",
       "coordinate_transformation_mode = \"output_half_pixel\", output_height = 2, "
       "output_width = 2"},
      {"adaptive_sampling_scaled", "output_height = 2, output_width = 3, spatial_scale = 0.5"},
      {"opset10", "output_height = 2, output_width = 2, sampling_ratio = 1", 10},
      {"max_opset10", "mode = \"max\", output_height = 3, output_width = 3", 10},
  };
  for (const Roi& v : variants) {
    cases.push_back(Op(absl::StrCat("RoiAlign_", v.name), {Float("x", {2, 3, 10, 12})}, "float y",
                       absl::StrCat(rois, "y = RoiAlign<", v.attributes, ">(x, r, n)"), v.opset));
  }
  // Random boxes (some inverted, some past the edges) from the graph.
  cases.push_back(Op("RoiAlign_random_boxes",
                     {Float("x", {1, 4, 9, 9}), Float("r", {6, 4}, -2, 11)}, "float y",
                     "n = Constant<value = int64[6] {0, 0, 0, 0, 0, 0}>()\n"
                     "y = RoiAlign<output_height = 2, output_width = 2>(x, r, n)"));
  cases.push_back(
      Fails(Op("RoiAlign_batch_index_out_of_range", {Float("x", {2, 3, 10, 12})}, "float y",
               "r = Constant<value = float[1, 4] {0, 0, 4, 4}>()\n"
               "n = Constant<value = int64[1] {2}>()\n"
               "y = RoiAlign(x, r, n)")));
}

// NaN and infinities (0/0 and x/0 of whole numbers, ties among the rest): TopK orders NaN
// above every number as numpy does, NonZero counts NaN, NonMaxSuppression never selects a
// NaN score.
void AddSpecials(std::vector<OpCase>& cases) {
  const std::vector<Input> ab = {Integral("a", {3, 20}, -2, 2), Integral("b", {3, 20}, -1, 1)};
  for (const char* largest : {"1", "0"}) {
    cases.push_back(Exact(Op(absl::StrCat("TopK_specials_largest", largest), ab, "float v, int64 i",
                             absl::StrCat("q = Div(a, b)\nk = Constant<value = int64[1] {7}>()\n"
                                          "v, i = TopK<largest = ",
                                          largest, ">(q, k)"),
                             11)));
  }
  cases.push_back(Exact(Op("NonZero_specials", ab, "int64 y", "q = Div(a, b)\ny = NonZero(q)")));
  cases.push_back(Exact(Op("NonMaxSuppression_specials",
                           {Float("boxes", {1, 20, 4}, 0, 1), Integral("a", {1, 3, 20}, -2, 2),
                            Integral("b", {1, 3, 20}, -1, 1)},
                           "int64 y",
                           "s = Div(a, b)\n"
                           "m = Constant<value = int64[1] {6}>()\n"
                           "t = Constant<value = float[1] {0.4}>()\n"
                           "y = NonMaxSuppression(boxes, s, m, t)",
                           11)));
}

std::vector<OpCase> AllCases() {
  return CasesOf<OpCase>({AddTopK, AddNonZero, AddNms, AddRoiAlign, AddSpecials});
}

OVFIX_MATCHES_CPU_TEST(DetectionKernelTest, AllCases(),
                       FirstOfEach(AllCases(), {"TopK_", "NonZero_", "NonMaxSuppression_",
                                                "RoiAlign_avg", "RoiAlign_max"}));

// The OpenCL table covers the versions the CPU kernels do, no earlier.
TEST(OpenclOpTable, DetectionResizeOpsHaveTheirVersions) {
  EXPECT_EQ(opencl::FindOp("NonMaxSuppression", 9), nullptr);
  EXPECT_NE(opencl::FindOp("NonMaxSuppression", 10), nullptr);
  EXPECT_EQ(opencl::FindOp("NonZero", 8), nullptr);
  EXPECT_NE(opencl::FindOp("NonZero", 9), nullptr);
  EXPECT_EQ(opencl::FindOp("RoiAlign", 9), nullptr);
  EXPECT_NE(opencl::FindOp("RoiAlign", 16), nullptr);
  EXPECT_NE(opencl::FindOp("TopK", 1), nullptr);
  EXPECT_NE(opencl::FindOp("ConvTranspose", 1), nullptr);
  EXPECT_EQ(opencl::FindOp("Resize", 9), nullptr);
  EXPECT_NE(opencl::FindOp("Resize", 18), nullptr);
  EXPECT_NE(opencl::FindOp("Resize", 26), nullptr);  // antialias declines to the CPU
  EXPECT_NE(opencl::FindOp("Upsample", 7), nullptr);
  EXPECT_EQ(opencl::FindOp("Upsample", 10), nullptr);
}

}  // namespace
}  // namespace ovfix::exec::matches_cpu
