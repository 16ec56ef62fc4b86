// Every OpenCL kernel against the CPU executor: a one-node model per case (an op, its
// attributes, its input shapes), random inputs, both backends in fp32 and in fp16-storage
// (where both round every float tensor to half when produced, so they must agree to a few
// half ulps), and in half arithmetic on devices with cl_khr_fp16. A case also says where
// the node must run: on the device (no CPU fallback note), on the CPU with a note (a
// configuration the kernels decline), or wherever the session likes (host-side integers).
// Runs on whatever OpenCL device is present (PoCL's CPU device on test machines).
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/opencl/matches_cpu.h"

namespace ovfix::exec::matches_cpu {
namespace {

std::string DimsName(const Dims& dims) {
  return dims.empty() ? "scalar" : absl::StrJoin(dims, "x");
}
std::string AxisName(int64_t axis) { return absl::StrCat(axis < 0 ? "m" : "", std::abs(axis)); }

// ---------------------------------------------------------------------------------------
// The cases. Where the kernel is the same code whatever the shape (element-wise ops, the
// axes arithmetic of reductions), shapes rotate over the ops instead of multiplying with
// them: every PoCL program build costs ~0.1 s.

void AddUnary(std::vector<OpCase>& cases) {
  struct Unary {
    std::string op, attributes;
    double low = -2, high = 2;
  };
  const Unary ops[] = {{"Relu", ""},
                       {"LeakyRelu", "<alpha = 0.1>"},
                       {"HardSigmoid", "<alpha = 0.3, beta = 0.4>"},
                       {"HardSwish", ""},
                       {"Sigmoid", ""},
                       {"Tanh", ""},
                       {"Sqrt", "", 0.01, 4},
                       {"Exp", ""},
                       {"Erf", ""},
                       {"Abs", ""},
                       {"Neg", ""},
                       {"Log", "", 0.01, 4},
                       {"Reciprocal", "", 0.25, 4},
                       {"Elu", "<alpha = 0.7>"},
                       {"Softplus", ""},
                       {"Floor", "", -3, 3},
                       {"Ceil", "", -3, 3}};
  const Dims shapes[] = {{7}, {2, 13, 5}, {1, 3, 7, 13}, {3, 1, 5}};
  size_t next = 0;
  for (const Unary& u : ops) {
    const Dims& dims = shapes[next++ % std::size(shapes)];
    cases.push_back(Op(absl::StrCat(u.op, "_", DimsName(dims)), {Float("x", dims, u.low, u.high)},
                       "float y", absl::StrCat("y = ", u.op, u.attributes, "(x)"), 14));
  }
  for (const Dims& dims : {Dims{1}, Dims{}, Dims{2, 0, 3}}) {
    cases.push_back(
        Op(absl::StrCat("Relu_", DimsName(dims)), {Float("x", dims)}, "float y", "y = Relu(x)"));
  }
  // Clip: attributes before opset 11, optional scalar inputs after.
  const Input x = Float("x", {3, 13}), lo = Float("lo", {}, -1, -0.25),
              hi = Float("hi", {}, 0.25, 1);
  cases.push_back(
      Op("Clip_opset6_attributes", {x}, "float y", "y = Clip<min = -0.5, max = 1.25>(x)", 6));
  cases.push_back(Op("Clip_both_bounds", {x, lo, hi}, "float y", "y = Clip(x, lo, hi)"));
  cases.push_back(Op("Clip_min_only", {x, lo}, "float y", "y = Clip(x, lo)"));
  cases.push_back(Op("Clip_max_only", {x, hi}, "float y", "y = Clip(x, , hi)"));
  cases.push_back(Op("Clip_no_bounds", {x}, "float y", "y = Clip(x)"));
  cases.push_back(Op("Clip_constant_bounds", {Float("x", {2, 7, 5}, -8, 8)}, "float y",
                     "lo = Constant<value = float {0.0}>()\n"
                     "hi = Constant<value = float {6.0}>()\n"
                     "y = Clip(x, lo, hi)"));
  cases.push_back(
      Host(Op("Clip_int64", {Integral("x", {3, 5}, DataType::kInt64)}, "int64 y", "y = Clip(x)")));
  // Cast between float storages runs on the device (overflow to inf and subnormals included),
  // and so does a cast to integers (more in data_kernel_test.cc).
  cases.push_back(Exact(Op("Cast_float_to_float16", {Float("x", {3, 7}, -70000, 70000)},
                           "float16 y", "y = Cast<to = 10>(x)")));
  cases.push_back(Exact(Op("Cast_float_to_float16_small", {Float("x", {13}, -1e-4, 1e-4)},
                           "float16 y", "y = Cast<to = 10>(x)")));
  cases.push_back(Exact(Op("Cast_float16_to_float", {{"x", DataType::kFloat16, {2, 13}, -100, 100}},
                           "float y", "y = Cast<to = 1>(x)")));
  cases.push_back(Exact(
      Op("Cast_float_to_int32", {Float("x", {3, 7}, -9, 9)}, "int32 y", "y = Cast<to = 6>(x)")));
}

void AddBinary(std::vector<OpCase>& cases) {
  // Same shape, scalar, rank-mismatched, broadcasting on both sides.
  const std::pair<Dims, Dims> shapes[] = {{{3, 7}, {3, 7}}, {{2, 3, 5}, {}},
                                          {{2, 3, 5}, {5}}, {{3, 1, 5}, {1, 4, 1}},
                                          {{1}, {13}},      {{7, 1}, {2, 1, 3}}};
  struct Binary {
    std::string op;
    double a_low = -2, a_high = 2, b_low = -2, b_high = 2;
  };
  const Binary arithmetic[] = {
      {"Add"}, {"Sub"}, {"Mul"}, {"Div", -2, 2, 0.25, 2}, {"Pow", 0.1, 3, -2, 2}, {"Max"}, {"Min"}};
  size_t next = 1;
  for (const Binary& b : arithmetic) {
    for (size_t k = 0; k < std::size(shapes); ++k) {
      if (b.op != "Add" && k != next % std::size(shapes)) continue;  // Add takes every pair
      const auto& [da, db] = shapes[k];
      cases.push_back(Op(absl::StrCat(b.op, "_", DimsName(da), "_", DimsName(db)),
                         {Float("a", da, b.a_low, b.a_high), Float("b", db, b.b_low, b.b_high)},
                         "float y", absl::StrCat("y = ", b.op, "(a, b)")));
    }
    if (b.op != "Add") ++next;
  }
  for (const std::string op : {"Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual"}) {
    const auto& [da, db] = shapes[next++ % std::size(shapes)];
    cases.push_back(Exact(Op(absl::StrCat(op, "_", DimsName(da), "_", DimsName(db)),
                             {Integral("a", da), Integral("b", db)}, "bool y",
                             absl::StrCat("y = ", op, "(a, b)"), 16)));
  }
  // PRelu: the slope broadcasts to x (per channel, or along the last axis).
  for (const Dims& slope : {Dims{3, 1, 1}, Dims{5}}) {
    cases.push_back(Op(absl::StrCat("PRelu_slope_", DimsName(slope)),
                       {Float("x", {2, 3, 4, 5}), Float("slope", slope, 0, 0.5)}, "float y",
                       "y = PRelu(x, slope)"));
  }
  // Declined: integer arithmetic stays on the host; variadic Max and a float ^ int Pow fall
  // back with a note. All still compute the right thing.
  cases.push_back(Host(Op(
      "Add_int64", {Integral("a", {3, 5}, DataType::kInt64), Integral("b", {5}, DataType::kInt64)},
      "int64 y", "y = Add(a, b)")));
  cases.push_back(
      Host(Op("Mul_int32",
              {Integral("a", {2, 7}, DataType::kInt32), Integral("b", {2, 7}, DataType::kInt32)},
              "int32 y", "y = Mul(a, b)")));
  cases.push_back(FallsBack(
      "Max", Op("Max_three_inputs", {Float("a", {3, 5}), Float("b", {5}), Float("c", {3, 1})},
                "float y", "y = Max(a, b, c)")));
  cases.push_back(FallsBack(
      "Pow",
      Op("Pow_int_exponent", {Float("a", {3, 5}, 0.5, 2), Integral("b", {5}, DataType::kInt64)},
         "float y", "y = Pow(a, b)")));
  cases.push_back(Fails(Op("Add_shapes_mismatch", {Float("a", {3, 5}), Float("b", {4})}, "float y",
                           "y = Add(a, b)")));
}

void AddWhereConcat(std::vector<OpCase>& cases) {
  const std::vector<Dims> where_shapes[] = {
      {{3, 4, 5}, {3, 4, 5}, {5}}, {{3, 1, 5}, {1, 4, 5}, {5}}, {{2, 1, 1}, {}, {3, 4}}};
  for (const auto& s : where_shapes) {
    cases.push_back(Exact(Op(
        absl::StrCat("Where_", DimsName(s[0]), "_", DimsName(s[1]), "_", DimsName(s[2])),
        {Bool("c", s[0]), Float("a", s[1]), Float("b", s[2])}, "float y", "y = Where(c, a, b)")));
  }
  cases.push_back(Host(Op("Where_int64",
                          {Bool("c", {3, 5}), Integral("a", {3, 5}, DataType::kInt64),
                           Integral("b", {5}, DataType::kInt64)},
                          "int64 y", "y = Where(c, a, b)")));
  const std::pair<int64_t, std::vector<Dims>> concats[] = {{0, {{3}, {1}, {7}}},
                                                           {1, {{2, 3, 5}, {2, 1, 5}}},
                                                           {-1, {{2, 3, 5}, {2, 3, 7}, {2, 3, 1}}},
                                                           {2, {{1, 2, 3, 4}, {1, 2, 5, 4}}},
                                                           {1, {{2, 3}, {2, 0}, {2, 4}}}};
  for (const auto& [axis, dims] : concats) {
    std::string name = absl::StrCat("Concat_axis", AxisName(axis));
    std::vector<Input> inputs;
    std::vector<std::string> names;
    for (size_t i = 0; i < dims.size(); ++i) {
      names.push_back(absl::StrCat("x", i));
      inputs.push_back(Float(names.back(), dims[i]));
      absl::StrAppend(&name, "_", DimsName(dims[i]));
    }
    cases.push_back(
        Exact(Op(name, inputs, "float y",
                 absl::StrCat("y = Concat<axis = ", axis, ">(", absl::StrJoin(names, ", "), ")"))));
  }
  cases.push_back(
      Host(Op("Concat_int64",
              {Integral("a", {2, 3}, DataType::kInt64), Integral("b", {1, 3}, DataType::kInt64)},
              "int64 y", "y = Concat<axis = 0>(a, b)")));
  cases.push_back(Fails(Op("Concat_axis_out_of_range", {Float("a", {2, 3}), Float("b", {2, 3})},
                           "float y", "y = Concat<axis = 2>(a, b)")));
}

// Views sit between two device ops (Neg, exact) so they take and give device buffers.
OpCase View(std::string name, Dims dims, std::string op_lines, int opset = 13) {
  return Exact(Op(std::move(name), {Float("x", std::move(dims))}, "float y",
                  absl::StrCat("t = Neg(x)\n", op_lines, "\ny = Neg(u)"), opset));
}

void AddShapeOps(std::vector<OpCase>& cases) {
  cases.push_back(View("Reshape_zero_and_minus_one", {2, 3, 5, 7},
                       "s = Constant<value = int64[3] {0, -1, 7}>()\nu = Reshape(t, s)"));
  cases.push_back(View("Reshape_allowzero", {3, 0, 7},
                       "s = Constant<value = int64[2] {0, 5}>()\nu = Reshape<allowzero = 1>(t, s)",
                       14));
  cases.push_back(View("Flatten_axis0", {2, 3, 5}, "u = Flatten<axis = 0>(t)"));
  cases.push_back(View("Flatten_axis_m1", {2, 3, 5}, "u = Flatten<axis = -1>(t)"));
  cases.push_back(View("Flatten_zero_outer", {0, 3, 5}, "u = Flatten(t)"));
  cases.push_back(View("Squeeze_axes_input", {1, 3, 1, 7},
                       "a = Constant<value = int64[2] {0, -2}>()\nu = Squeeze(t, a)"));
  cases.push_back(View("Squeeze_all", {1, 3, 1, 7}, "u = Squeeze(t)"));
  cases.push_back(View("Squeeze_opset11_attribute", {3, 1, 7}, "u = Squeeze<axes = [1]>(t)", 11));
  cases.push_back(View("Unsqueeze_axes_input", {3, 7},
                       "a = Constant<value = int64[3] {0, -1, 2}>()\nu = Unsqueeze(t, a)"));
  cases.push_back(
      View("Unsqueeze_opset11_attribute", {3, 7}, "u = Unsqueeze<axes = [1, 3]>(t)", 11));
  cases.push_back(View("Identity", {2, 13}, "u = Identity(t)"));
  cases.push_back(
      Exact(Op("Shape", {Float("x", {2, 3, 5, 7})}, "int64 y", "t = Neg(x)\ny = Shape(t)", 15)));
  cases.push_back(Exact(Op("Shape_start_m2_end_10", {Float("x", {2, 3, 5, 7})}, "int64 y",
                           "t = Neg(x)\ny = Shape<start = -2, end = 10>(t)", 15)));
  cases.push_back(Fails(View("Squeeze_non_unit_axis", {3, 7},
                             "a = Constant<value = int64[1] {0}>()\nu = Squeeze(t, a)")));
  cases.push_back(Fails(View("Reshape_wrong_count", {3, 7},
                             "s = Constant<value = int64[2] {4, 5}>()\nu = Reshape(t, s)")));
}

void AddConv(std::vector<OpCase>& cases) {
  struct Conv {
    std::string name;
    Dims x, w;
    std::string attributes;
    bool bias = true;
  };
  const Conv convs[] = {
      {"1d_pads", {1, 3, 13}, {4, 3, 3}, "<pads = [1, 1]>"},
      {"1d_stride_dilation", {2, 2, 13}, {3, 2, 3}, "<strides = [2], dilations = [2]>"},
      {"2d_stride2_asymmetric_pads",
       {2, 3, 7, 9},
       {5, 3, 3, 3},
       "<strides = [2, 2], pads = [1, 0, 2, 1]>"},
      {"2d_dilations", {1, 2, 9, 7}, {3, 2, 3, 3}, "<dilations = [2, 1], pads = [2, 1, 2, 1]>"},
      {"2d_groups", {1, 4, 7, 7}, {6, 2, 3, 3}, "<group = 2, pads = [1, 1, 1, 1]>"},
      {"2d_depthwise",
       {1, 6, 9, 9},
       {6, 1, 3, 3},
       "<group = 6, strides = [2, 2], pads = [1, 1, 1, 1]>"},
      {"2d_depthwise_multiplier",
       {1, 3, 7, 7},
       {6, 1, 5, 5},
       "<group = 3, pads = [2, 2, 2, 2], kernel_shape = [5, 5]>"},
      {"2d_pointwise", {1, 13, 5, 7}, {8, 13, 1, 1}, ""},
      {"2d_no_bias", {1, 3, 7, 7}, {4, 3, 3, 3}, "<pads = [1, 1, 1, 1]>", false},
      {"2d_stem_7x7", {1, 3, 13, 13}, {8, 3, 7, 7}, "<strides = [2, 2], pads = [3, 3, 3, 3]>"},
      {"2d_nonsquare_kernel", {1, 2, 7, 9}, {3, 2, 1, 5}, "<pads = [0, 2, 0, 2]>"},
      {"2d_same_upper",
       {1, 3, 7, 8},
       {4, 3, 3, 3},
       "<auto_pad = \"SAME_UPPER\", strides = [2, 2]>"},
      {"2d_same_lower", {1, 3, 7, 8}, {4, 3, 4, 4}, "<auto_pad = \"SAME_LOWER\">"},
      {"2d_valid", {1, 3, 7, 8}, {4, 3, 3, 3}, "<auto_pad = \"VALID\", strides = [2, 1]>"},
      // The kernel's tiles: rows of several 8- or 16-wide tiles with a partial last one,
      // strides that load whole vectors (1, 2) or element by element (3), dilation along w,
      // 16 output channels (two tiles of 8 on GPUs).
      {"2d_wide_rows", {1, 2, 5, 21}, {16, 2, 3, 3}, "<pads = [1, 1, 1, 1]>"},
      {"1d_stride2_tiles", {1, 3, 37}, {8, 3, 5}, "<strides = [2], pads = [2, 1]>"},
      {"2d_stride3_dilation_w",
       {1, 4, 9, 19},
       {8, 4, 3, 3},
       "<strides = [1, 3], dilations = [1, 2], pads = [1, 2, 1, 2]>"},
      {"3d", {1, 2, 5, 6, 7}, {3, 2, 3, 1, 2}, "<pads = [1, 0, 1, 1, 0, 0]>"},
      {"3d_groups_strides",
       {1, 4, 5, 5, 5},
       {4, 2, 3, 3, 3},
       "<group = 2, strides = [2, 1, 2], pads = [1, 1, 1, 1, 1, 1]>"},
  };
  for (const Conv& c : convs) {
    std::vector<Input> inputs = {Float("x", c.x), Float("w", c.w, -0.5, 0.5)};
    if (c.bias) inputs.push_back(Float("b", {c.w[0]}));
    cases.push_back(Op(absl::StrCat("Conv_", c.name), inputs, "float y",
                       absl::StrCat("y = Conv", c.attributes, c.bias ? "(x, w, b)" : "(x, w)")));
  }
  cases.push_back(Op("Conv_zero_batch", {Float("x", {0, 3, 5, 5}), Float("w", {2, 3, 3, 3})},
                     "float y", "y = Conv(x, w)"));
  cases.push_back(
      Fails(Op("Conv_group_mismatch", {Float("x", {1, 4, 5, 5}), Float("w", {6, 3, 3, 3})},
               "float y", "y = Conv<group = 2>(x, w)")));
}

void AddGemm(std::vector<OpCase>& cases) {
  struct Gemm {
    std::string name;
    Dims a, b;
    std::string attributes;
    bool has_c;
    Dims c;
  };
  const Gemm gemms[] = {
      {"plain", {3, 5}, {5, 7}, "", false, {}},
      {"transA", {5, 3}, {5, 7}, "<transA = 1>", true, {7}},
      {"transB", {3, 5}, {7, 5}, "<transB = 1>", true, {1, 7}},
      {"transA_transB", {13, 3}, {7, 13}, "<transA = 1, transB = 1>", true, {3, 7}},
      {"alpha_beta", {3, 5}, {5, 7}, "<alpha = 0.5, beta = 2.0>", true, {3, 1}},
      {"c_scalar", {3, 5}, {5, 7}, "<beta = -1.0>", true, {}},
      {"vector_result", {1, 13}, {13, 1}, "<alpha = 2.0>", true, {1, 1}},
      {"fc_like", {2, 64}, {10, 64}, "<transB = 1>", true, {10}},
  };
  for (const Gemm& g : gemms) {
    std::vector<Input> inputs = {Float("a", g.a), Float("b", g.b)};
    if (g.has_c) inputs.push_back(Float("c", g.c));
    cases.push_back(Op(absl::StrCat("Gemm_", g.name), inputs, "float y",
                       absl::StrCat("y = Gemm", g.attributes, g.has_c ? "(a, b, c)" : "(a, b)")));
  }
  cases.push_back(Fails(Op("Gemm_inner_mismatch", {Float("a", {3, 5}), Float("b", {4, 7})},
                           "float y", "y = Gemm(a, b)")));
}

void AddMatMul(std::vector<OpCase>& cases) {
  struct MatMul {
    std::string name;
    Dims a, b;
  };
  const MatMul products[] = {
      {"2d", {3, 5}, {5, 7}},
      {"row_vector", {5}, {5, 7}},
      {"column_vector", {3, 5}, {5}},
      {"dot", {13}, {13}},
      {"batched", {2, 3, 5}, {2, 5, 4}},
      {"weights_shared", {2, 3, 4, 5}, {5, 6}},  // a projection: B broadcast over the batch
      {"both_broadcast", {2, 1, 3, 5}, {1, 4, 5, 2}},
      {"attention_like", {1, 4, 16, 8}, {1, 4, 8, 16}},
      {"residual_mlp", {1, 64}, {64, 64}},
  };
  for (const MatMul& m : products) {
    cases.push_back(Op(absl::StrCat("MatMul_", m.name), {Float("a", m.a), Float("b", m.b)},
                       "float y", "y = MatMul(a, b)"));
  }
  cases.push_back(Fails(Op("MatMul_inner_mismatch", {Float("a", {3, 5}), Float("b", {4, 7})},
                           "float y", "y = MatMul(a, b)")));
  cases.push_back(Fails(Op("MatMul_batch_mismatch", {Float("a", {2, 3, 5}), Float("b", {3, 5, 7})},
                           "float y", "y = MatMul(a, b)")));
}

void AddPooling(std::vector<OpCase>& cases) {
  struct Pool {
    std::string name, op;
    Dims x;
    std::string attributes;
  };
  const Pool pools[] = {
      {"resnet",
       "MaxPool",
       {1, 3, 13, 13},
       "<kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]>"},
      {"1d", "MaxPool", {2, 3, 13}, "<kernel_shape = [3], strides = [2]>"},
      {"ceil_mode",
       "MaxPool",
       {1, 2, 7, 8},
       "<kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1>"},
      {"dilations", "MaxPool", {1, 2, 9, 9}, "<kernel_shape = [2, 2], dilations = [2, 2]>"},
      {"asymmetric_pads",
       "MaxPool",
       {1, 2, 7, 7},
       "<kernel_shape = [3, 2], pads = [0, 1, 2, 0], strides = [1, 2]>"},
      {"same_upper",
       "MaxPool",
       {1, 2, 7, 7},
       "<kernel_shape = [3, 3], strides = [2, 2], auto_pad = \"SAME_UPPER\">"},
      {"3d", "MaxPool", {1, 2, 5, 6, 7}, "<kernel_shape = [2, 3, 2], strides = [1, 2, 2]>"},
      {"pads_excluded",
       "AveragePool",
       {1, 2, 7, 7},
       "<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>"},
      {"pads_included",
       "AveragePool",
       {1, 2, 7, 7},
       "<kernel_shape = [3, 3], pads = [1, 1, 1, 1], count_include_pad = 1>"},
      {"asymmetric_pads_included",
       "AveragePool",
       {1, 2, 7, 7},
       "<kernel_shape = [3, 3], pads = [0, 1, 2, 0], count_include_pad = 1>"},
      {"ceil_mode",
       "AveragePool",
       {1, 2, 7, 8},
       "<kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1>"},
      {"ceil_mode_pads_included",
       "AveragePool",
       {1, 2, 8, 7},
       "<kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = 1, "
       "count_include_pad = 1>"},
      {"same_lower",
       "AveragePool",
       {1, 2, 7, 7},
       "<kernel_shape = [2, 2], auto_pad = \"SAME_LOWER\">"},
      {"1d", "AveragePool", {2, 3, 13}, "<kernel_shape = [4], strides = [3], pads = [1, 2]>"},
      {"3d",
       "AveragePool",
       {1, 2, 5, 6, 7},
       "<kernel_shape = [3, 2, 3], pads = [1, 0, 1, 1, 0, 1]>"},
  };
  for (const Pool& p : pools) {
    cases.push_back(Op(absl::StrCat(p.op, "_", p.name), {Float("x", p.x)}, "float y",
                       absl::StrCat("y = ", p.op, p.attributes, "(x)")));
  }
  for (const std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    for (const Dims& dims : {Dims{2, 3, 13}, Dims{1, 2, 3, 4, 5}}) {
      cases.push_back(Op(absl::StrCat(op, "_", DimsName(dims)), {Float("x", dims)}, "float y",
                         absl::StrCat("y = ", op, "(x)")));
    }
  }
  cases.push_back(FallsBack(
      "MaxPool", Exact(Op("MaxPool_indices", {Float("x", {1, 2, 5, 5})}, "float y, int64 i",
                          "y, i = MaxPool<kernel_shape = [2, 2]>(x)"))));
  for (const auto& [opset, dims] : {std::pair{15, Dims{2, 3, 5, 7}}, std::pair{9, Dims{4, 3}}}) {
    const int64_t c = dims[1];
    cases.push_back(
        Op(absl::StrCat("BatchNormalization_opset", opset, "_", DimsName(dims)),
           {Float("x", dims), Float("scale", {c}), Float("bias", {c}), Float("mean", {c}, -1, 1),
            Float("var", {c}, 0.1, 2)},
           "float y", "y = BatchNormalization<epsilon = 0.001>(x, scale, bias, mean, var)", opset));
  }
}

void AddReduce(std::vector<OpCase>& cases) {
  struct Reduce {
    std::string op;
    double low = -2, high = 2;
  };
  const Reduce ops[] = {{"ReduceSum"},      {"ReduceMean"},           {"ReduceMax"},
                        {"ReduceMin"},      {"ReduceSumSquare"},      {"ReduceL2"},
                        {"ReduceL1"},       {"ReduceProd", 0.7, 1.4}, {"ReduceLogSum", 0.1, 2},
                        {"ReduceLogSumExp"}};
  struct Axes {
    Dims dims;
    std::vector<int64_t> axes;  // empty: all
    int keepdims;
  };
  const Axes axes_sets[] = {{{3, 5, 7}, {}, 1},           {{3, 5, 7}, {1}, 0},
                            {{2, 3, 4, 5}, {0, 2}, 1},    {{2, 3, 4, 5}, {-1}, 0},
                            {{2, 3, 4, 5}, {1, 2, 3}, 1}, {{13}, {0}, 0}};
  size_t next = 0;
  for (const Reduce& r : ops) {
    for (size_t k = 0; k < std::size(axes_sets); ++k) {
      // ReduceSum takes every axes set, the others two each.
      const size_t n = std::size(axes_sets);
      if (r.op != "ReduceSum" && k != next % n && k != (next + 3) % n) continue;
      const Axes& a = axes_sets[k];
      std::string name = absl::StrCat(r.op, "_", DimsName(a.dims), "_axes");
      for (int64_t axis : a.axes) absl::StrAppend(&name, "_", AxisName(axis));
      absl::StrAppend(&name, a.axes.empty() ? "_all" : "", a.keepdims ? "_keepdims" : "");
      const std::string axes = absl::StrJoin(a.axes, ", ");
      std::string body;
      if (r.op == "ReduceSum" && !a.axes.empty()) {  // opset 13: axes is an input
        body = absl::StrCat("a = Constant<value = int64[", a.axes.size(), "] {", axes, "}>()\n",
                            "y = ReduceSum<keepdims = ", a.keepdims, ">(x, a)");
      } else {
        body = absl::StrCat("y = ", r.op, "<keepdims = ", a.keepdims,
                            a.axes.empty() || r.op == "ReduceSum" ? "" : ", axes = [" + axes + "]",
                            ">(x)");
      }
      cases.push_back(Op(name, {Float("x", a.dims, r.low, r.high)}, "float y", body));
    }
    if (r.op != "ReduceSum") ++next;
  }
  cases.push_back(Op("ReduceSum_opset11_axes_attribute", {Float("x", {3, 5, 7})}, "float y",
                     "y = ReduceSum<axes = [0, 2]>(x)", 11));
  cases.push_back(Op("ReduceSum_axes_graph_input",
                     {Float("x", {3, 5, 7}), {"a", DataType::kInt64, {1}, 1, 1}}, "float y",
                     "y = ReduceSum(x, a)"));
  cases.push_back(Exact(Op("ReduceSum_empty_axes_noop", {Float("x", {3, 5})}, "float y",
                           "a = Constant<value = int64[0] {}>()\n"
                           "y = ReduceSum<noop_with_empty_axes = 1>(x, a)")));
  cases.push_back(Op("ReduceSum_empty_axes_all", {Float("x", {3, 5})}, "float y",
                     "a = Constant<value = int64[0] {}>()\ny = ReduceSum(x, a)"));
  cases.push_back(Host(Op("ReduceSum_int64", {Integral("x", {3, 5}, DataType::kInt64)}, "int64 y",
                          "y = ReduceSum<keepdims = 0>(x)")));
  cases.push_back(Fails(Op("ReduceMean_axis_out_of_range", {Float("x", {3, 5})}, "float y",
                           "y = ReduceMean<axes = [2]>(x)")));
}

void AddSoftmaxGather(std::vector<OpCase>& cases) {
  // Opset 11 coerces the input to 2-D at `axis` (default 1); opset 13 normalizes along
  // `axis` alone (default -1).
  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    for (int opset : {11, 13}) {
      for (const auto& [dims, axis] :
           {std::pair{Dims{3, 5, 7}, 1}, std::pair{Dims{2, 3, 4, 5}, 0}, std::pair{Dims{13}, -1}}) {
        cases.push_back(
            Op(absl::StrCat(op, "_opset", opset, "_", DimsName(dims), "_axis", AxisName(axis)),
               {Float("x", dims, -4, 4)}, "float y",
               absl::StrCat("y = ", op, "<axis = ", axis, ">(x)"), opset));
      }
      cases.push_back(Op(absl::StrCat(op, "_opset", opset, "_default_axis"),
                         {Float("x", {2, 3, 5}, -4, 4)}, "float y", absl::StrCat("y = ", op, "(x)"),
                         opset));
    }
  }
  struct Gather {
    std::string name;
    Dims data, indices;
    int64_t axis;
    DataType index_type = DataType::kInt64;
  };
  const Gather gathers[] = {{"axis0", {5, 7}, {3}, 0},
                            {"axis1_matrix_indices", {3, 7, 2}, {2, 3}, 1},
                            {"axis_m1", {2, 3, 5}, {4}, -1},
                            {"scalar_index", {5, 7}, {}, 0},
                            {"int32_indices", {13, 3}, {5}, 0, DataType::kInt32}};
  for (const Gather& g : gathers) {
    const size_t axis = g.axis < 0 ? g.axis + g.data.size() : g.axis;
    const double n = static_cast<double>(g.data[axis]);
    // Indices in [-n, n - 1]: negative ones count from the end.
    cases.push_back(Exact(Op(absl::StrCat("Gather_", g.name),
                             {Float("x", g.data), {"i", g.index_type, g.indices, -n, n - 1}},
                             "float y", absl::StrCat("y = Gather<axis = ", g.axis, ">(x, i)"))));
  }
  cases.push_back(
      Host(Op("Gather_int64_data",
              {Integral("x", {5, 3}, DataType::kInt64), {"i", DataType::kInt64, {4}, -5, 4}},
              "int64 y", "y = Gather(x, i)")));
  cases.push_back(Fails(Op("Gather_index_out_of_range", {Float("x", {5, 7})}, "float y",
                           "i = Constant<value = int64[2] {1, 5}>()\ny = Gather(x, i)")));
}

// Non-finite inputs: NaN propagates and infinities stay infinite as in the CPU executor
// (fmax/fmin would drop a NaN). The pools see infinities only, never a window of -inf alone:
// the CPU executor's pools keep a NaN only when it comes first in the window (its ReduceMax
// and Max keep any) and give -FLT_MAX for a window of -inf (OpenclKernels.MaxOfMinusInfinity
// checks the OpenCL side of that on its own).
void AddSpecials(std::vector<OpCase>& cases) {
  const std::pair<std::string, std::string> ops[] = {
      {"Relu", "y = Relu(x)"},
      {"Add", "y = Add(x, z)"},
      {"Max", "y = Max(x, z)"},
      {"Min", "y = Min(z, x)"},
      {"Clip", "y = Clip(x, lo, hi)"},
      {"ReduceMax", "y = ReduceMax<axes = [1], keepdims = 0>(x)"},
      {"ReduceMin", "y = ReduceMin<axes = [0, 2]>(x)"},
      {"ReduceLogSumExp", "y = ReduceLogSumExp<axes = [2]>(x)"},
      {"Softmax", "y = Softmax<axis = 1>(x)"},
      {"MaxPool", "y = MaxPool<kernel_shape = [3], strides = [2]>(x)"},
      {"GlobalMaxPool", "y = GlobalMaxPool(x)"}};
  for (const auto& [op, body] : ops) {
    const int kinds = absl::StrContains(op, "Pool") ? 2 : 3;
    std::vector<Input> inputs = {WithSpecials(Float("x", {3, 5, 7}), kinds)};
    if (absl::StrContains(body, "z")) inputs.push_back(WithSpecials(Float("z", {5, 1})));
    if (op == "Clip")
      inputs.insert(inputs.end(), {Float("lo", {}, -1, -0.5), Float("hi", {}, 0.5, 1)});
    cases.push_back(Op(op + "_specials", inputs, "float y", body));
  }
}

std::vector<OpCase> AllCases() {
  return CasesOf<OpCase>({AddUnary, AddBinary, AddWhereConcat, AddShapeOps, AddConv, AddGemm,
                          AddMatMul, AddPooling, AddReduce, AddSoftmaxGather, AddSpecials});
}

// Half arithmetic exists on GPUs only (PoCL's CPU device has no cl_khr_fp16: these skip
// there): the first case whose name starts with each of these covers every kernel source.
std::vector<OpCase> HalfArithmeticCases() {
  // clang-format off
  return FirstOfEach(AllCases(),
      {"Sigmoid_", "Exp_", "Clip_both", "Add_3x1x5", "Div_", "Greater_", "Where_", "Concat_",
       "Conv_2d_stride2", "Conv_2d_depthwise", "Conv_2d_wide_rows", "Gemm_transA_transB", "MatMul_both_broadcast",
       "MaxPool_resnet", "AveragePool_pads_included", "GlobalAveragePool_",
       "BatchNormalization_", "ReduceMean_", "ReduceLogSumExp_", "Softmax_opset13",
       "LogSoftmax_opset13", "Gather_axis1"});
  // clang-format on
}

// ---------------------------------------------------------------------------------------
// The test.

OVFIX_MATCHES_CPU_TEST(KernelTest, AllCases(), HalfArithmeticCases());

// The max of nothing but -inf is -inf (a max that starts from -FLT_MAX gives -FLT_MAX):
// checked here against the value itself, since the CPU executor's pools give -FLT_MAX.
TEST(OpenclKernels, MaxOfMinusInfinity) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  auto opencl = OnOpencl(R"(
    m (float[1, 2, 3] x) => (float pool, float global, float reduce) {
      pool = MaxPool<kernel_shape = [2]>(x)
      global = GlobalMaxPool(x)
      reduce = ReduceMax<axes = [2], keepdims = 0>(x)
    }
  )");
  ASSERT_TRUE(opencl.ok()) << opencl.status();
  Session* cl = opencl->session.get();
  const Tensor x = Tensor::FromVector<float>(DataType::kFloat, {1, 2, 3},
                                             {-INFINITY, -INFINITY, -INFINITY, 1, -INFINITY, 2});
  auto out = cl->Run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].values<float>()[0], -INFINITY);
  EXPECT_EQ((*out)[0].values<float>()[2], 1.0f);
  EXPECT_EQ((*out)[1].values<float>()[0], -INFINITY);
  EXPECT_EQ((*out)[2].values<float>()[0], -INFINITY);
  EXPECT_EQ((*out)[2].values<float>()[1], 2.0f);
}

}  // namespace
}  // namespace ovfix::exec::matches_cpu
