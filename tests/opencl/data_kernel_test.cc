// The OpenCL data-movement kernels (exec/opencl/ops_data.cc) against the CPU executor: a
// one-node model per case (an op, its attributes, input shapes; index inputs as constants so
// they are valid), random float inputs, both backends in fp32 and fp16-storage, and a few in
// half arithmetic where the device has it. Moving elements is exact in every precision (both
// sides round the same inputs), so outputs must match bit for bit, except the float scatter
// reductions (to a few half ulps where storage rounds). Every case must run on the device
// (no CPU fallback note); bad inputs must fail on both backends.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "exec/opencl/opencl_runtime.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/text_form.h"
#include "tests/opencl/matches_cpu.h"

namespace ovfix::exec {
namespace {

using Dims = std::vector<int64_t>;

struct DataCase {
  std::string name;  // unique; letters, digits and '_'
  int opset = 13;
  std::vector<std::pair<std::string, Dims>> inputs;  // float graph inputs
  std::string outputs = "float y";
  std::string body;
  bool exact = true;
  bool fails = false;  // bad input: both backends return an error
};

DataCase Case(std::string name, std::vector<std::pair<std::string, Dims>> inputs, std::string body,
              int opset = 13) {
  DataCase c;
  c.name = std::move(name);
  c.inputs = std::move(inputs);
  c.body = std::move(body);
  c.opset = opset;
  return c;
}
DataCase Fails(DataCase c) {
  c.fails = true;
  return c;
}
DataCase Approximate(DataCase c) {
  c.exact = false;
  return c;
}

// x of `dims`, and `lines` reading it.
DataCase Unary(std::string name, Dims dims, std::string lines, int opset = 13) {
  return Case(std::move(name), {{"x", std::move(dims)}}, std::move(lines), opset);
}

std::string Ints(const std::vector<int64_t>& v) { return absl::StrJoin(v, ", "); }
// "name = Constant<value = int64[n] {...}>()".
std::string IntConstant(const std::string& name, const std::vector<int64_t>& v) {
  return absl::StrCat(name, " = Constant<value = int64[", v.size(), "] {", Ints(v), "}>()\n");
}

void AddStridedCopies(std::vector<DataCase>& cases) {
  // Transpose: the Swin window partition, NCHW <-> NHWC, the default reversal, a 2-D swap,
  // and one where only unit dims move (a view).
  cases.push_back(Unary("Transpose_window_partition", {1, 2, 4, 3, 4, 5},
                        "y = Transpose<perm = [0, 1, 3, 2, 4, 5]>(x)"));
  cases.push_back(
      Unary("Transpose_nchw_to_nhwc", {2, 3, 4, 5}, "y = Transpose<perm = [0, 2, 3, 1]>(x)"));
  cases.push_back(Unary("Transpose_default_reverses", {2, 3, 5}, "y = Transpose(x)"));
  cases.push_back(Unary("Transpose_2d", {13, 7}, "y = Transpose<perm = [1, 0]>(x)"));
  cases.push_back(
      Unary("Transpose_unit_dims_only", {1, 3, 1, 5}, "y = Transpose<perm = [2, 1, 0, 3]>(x)"));
  cases.push_back(Unary("Transpose_long_rows", {3, 130}, "y = Transpose(x)"));
  cases.push_back(Unary("Transpose_rank7", {2, 1, 2, 3, 1, 2, 3},
                        "y = Transpose<perm = [6, 5, 4, 3, 2, 1, 0]>(x)"));
  cases.push_back(Fails(Unary("Transpose_bad_perm", {2, 3}, "y = Transpose<perm = [0, 0]>(x)")));
  // Bool on the device (from a comparison): one-byte elements.
  cases.push_back(Case("Transpose_bool", {{"a", {2, 3, 4}}, {"b", {2, 3, 4}}},
                       "c = Greater(a, b)\ny = Transpose<perm = [2, 0, 1]>(c)"));
  cases.back().outputs = "bool y";

  // Slice: opset 9 attributes, inputs with axes and steps, negative steps, clamped and huge
  // ends, steps longer than the axis, an empty result, the whole tensor (a view).
  cases.push_back(Unary("Slice_opset9_attributes", {4, 5, 6},
                        "y = Slice<starts = [1, -3], ends = [3, 100], axes = [0, 2]>(x)", 9));
  cases.push_back(Unary("Slice_axes_steps", {4, 7, 6},
                        IntConstant("s", {1, 0}) + IntConstant("e", {7, 5}) +
                            IntConstant("a", {1, -1}) + IntConstant("p", {2, 3}) +
                            "y = Slice(x, s, e, a, p)"));
  cases.push_back(Unary("Slice_negative_step", {5, 6},
                        IntConstant("s", {-1, 4}) + IntConstant("e", {-100, 0}) +
                            IntConstant("a", {0, 1}) + IntConstant("p", {-1, -2}) +
                            "y = Slice(x, s, e, a, p)"));
  cases.push_back(Unary("Slice_int64_max_end", {3, 8},
                        IntConstant("s", {2}) + IntConstant("e", {9223372036854775807}) +
                            IntConstant("a", {1}) + "y = Slice(x, s, e, a)"));
  cases.push_back(Unary("Slice_step_beyond_axis", {3, 4},
                        IntConstant("s", {1}) + IntConstant("e", {4}) + IntConstant("a", {1}) +
                            IntConstant("p", {10}) + "y = Slice(x, s, e, a, p)"));
  cases.push_back(Unary("Slice_empty", {3, 4},
                        IntConstant("s", {3}) + IntConstant("e", {1}) + IntConstant("a", {1}) +
                            "y = Slice(x, s, e, a)"));
  cases.push_back(
      Unary("Slice_whole", {3, 4},
            IntConstant("s", {0}) + IntConstant("e", {4}) + "t = Slice(x, s, e)\n" + "y = Neg(t)"));
  cases.push_back(
      Fails(Unary("Slice_zero_step", {3, 4},
                  IntConstant("s", {0}) + IntConstant("e", {4}) + IntConstant("a", {1}) +
                      IntConstant("p", {0}) + "y = Slice(x, s, e, a, p)")));

  // Pad: each mode, a constant value, cropping pads, opset 2 attributes. (Opset 18 axes and
  // Split num_outputs are past the schemas the node checker knows.)
  const std::string value = "v = Constant<value = float {1.5}>()\n";
  cases.push_back(Unary("Pad_constant_value", {2, 3, 4},
                        IntConstant("p", {0, 1, 2, 1, 0, 3}) + value + "y = Pad(x, p, v)"));
  cases.push_back(Unary("Pad_constant_zero", {1, 2, 5, 5},
                        IntConstant("p", {0, 0, 1, 1, 0, 0, 1, 1}) + "y = Pad(x, p)"));
  cases.push_back(
      Unary("Pad_reflect", {2, 4, 5},
            IntConstant("p", {0, 3, 2, 0, 2, 4}) + "y = Pad<mode = \"reflect\">(x, p)"));
  cases.push_back(Unary("Pad_reflect_single_element", {2, 1},
                        IntConstant("p", {0, 2, 0, 3}) + "y = Pad<mode = \"reflect\">(x, p)"));
  cases.push_back(
      Unary("Pad_edge", {3, 4}, IntConstant("p", {2, 1, 1, 3}) + "y = Pad<mode = \"edge\">(x, p)"));
  cases.push_back(Unary("Pad_negative_crops", {4, 6},
                        IntConstant("p", {-1, 2, 1, -3}) + value + "y = Pad(x, p, v)"));
  cases.push_back(
      Unary("Pad_opset2_attributes", {3, 4}, "y = Pad<pads = [1, 0, 0, 2], value = -2.5>(x)", 2));
  cases.push_back(Fails(Unary("Pad_wrap_unsupported", {3, 4},
                              IntConstant("p", {0, 1, 0, 1}) + "y = Pad<mode = \"wrap\">(x, p)")));
  cases.push_back(
      Fails(Unary("Pad_wrong_length", {3, 4}, IntConstant("p", {0, 1, 0}) + "y = Pad(x, p)")));

  // Expand, Tile.
  cases.push_back(
      Unary("Expand_broadcast", {3, 1}, IntConstant("s", {2, 3, 4}) + "y = Expand(x, s)"));
  cases.push_back(
      Unary("Expand_shorter_shape", {2, 1, 5}, IntConstant("s", {3, 1}) + "y = Expand(x, s)"));
  cases.push_back(Unary("Expand_same_shape", {2, 3},
                        IntConstant("s", {2, 3}) + "t = Expand(x, s)\ny = Neg(t)"));
  cases.push_back(
      Fails(Unary("Expand_incompatible", {2, 3}, IntConstant("s", {4, 3}) + "y = Expand(x, s)")));
  cases.push_back(Unary("Tile_repeats", {2, 3, 2}, IntConstant("r", {2, 1, 3}) + "y = Tile(x, r)"));
  cases.push_back(Unary("Tile_zero_repeat", {2, 3}, IntConstant("r", {0, 2}) + "y = Tile(x, r)"));
  cases.push_back(
      Fails(Unary("Tile_wrong_length", {2, 3}, IntConstant("r", {2}) + "y = Tile(x, r)")));

  // Split: equal parts, sizes as an input, as an attribute (opset 11).
  auto split = [&](std::string name, Dims dims, std::string body, int opset, int parts) {
    DataCase c = Unary(std::move(name), std::move(dims), std::move(body), opset);
    std::vector<std::string> outs;
    for (int i = 0; i < parts; ++i) outs.push_back(absl::StrCat("float y", i));
    c.outputs = absl::StrJoin(outs, ", ");
    cases.push_back(std::move(c));
  };
  split("Split_equal", {2, 6, 3}, "y0, y1, y2 = Split<axis = 1>(x)", 13, 3);
  split("Split_sizes_input", {7, 2}, IntConstant("s", {2, 0, 5}) + "y0, y1, y2 = Split(x, s)", 13,
        3);
  split("Split_opset11_attribute", {2, 3, 5}, "y0, y1 = Split<axis = -1, split = [4, 1]>(x)", 11,
        2);
  cases.push_back(Fails(
      Unary("Split_sizes_do_not_sum", {5, 2}, IntConstant("s", {2, 2}) + "y0, y1 = Split(x, s)")));
  cases.back().outputs = "float y0, float y1";

  // DepthToSpace (both modes), SpaceToDepth.
  cases.push_back(Unary("DepthToSpace_DCR", {1, 8, 2, 3}, "y = DepthToSpace<blocksize = 2>(x)"));
  cases.push_back(Unary("DepthToSpace_CRD", {2, 8, 3, 2},
                        "y = DepthToSpace<blocksize = 2, mode = \"CRD\">(x)"));
  cases.push_back(Unary("SpaceToDepth", {1, 3, 4, 6}, "y = SpaceToDepth<blocksize = 2>(x)"));
}

void AddIndexed(std::vector<DataCase>& cases) {
  // GatherND: whole rows, single elements, batch_dims, negative indices.
  auto indices = [](const std::string& name, Dims dims, const std::vector<int64_t>& v) {
    return absl::StrCat(name, " = Constant<value = int64[", absl::StrJoin(dims, ","), "] {",
                        Ints(v), "}>()\n");
  };
  cases.push_back(
      Unary("GatherND_rows", {4, 3, 5}, indices("i", {2, 1}, {3, -4}) + "y = GatherND(x, i)"));
  cases.push_back(Unary("GatherND_elements", {4, 3},
                        indices("i", {2, 2, 2}, {0, 0, 3, 2, -1, 1, 2, 0}) + "y = GatherND(x, i)"));
  cases.push_back(
      Unary("GatherND_batch_dims", {2, 3, 4},
            indices("i", {2, 2, 1}, {2, 0, 1, -1}) + "y = GatherND<batch_dims = 1>(x, i)"));
  cases.push_back(Fails(
      Unary("GatherND_out_of_range", {4, 3}, indices("i", {1, 2}, {4, 0}) + "y = GatherND(x, i)")));
  // GatherElements.
  cases.push_back(
      Unary("GatherElements_axis1", {3, 4},
            indices("i", {3, 2}, {0, 3, -1, 2, 1, 1}) + "y = GatherElements<axis = 1>(x, i)"));
  cases.push_back(Unary("GatherElements_axis0_smaller", {4, 3},
                        indices("i", {2, 2}, {3, 0, -4, 2}) + "y = GatherElements(x, i)"));

  // ScatterND: slices and elements, duplicates (the last wins), each reduction (opset 18).
  cases.push_back(Case("ScatterND_slices", {{"x", {4, 3}}, {"u", {2, 3}}},
                       indices("i", {2, 1}, {3, -4}) + "y = ScatterND(x, i, u)"));
  cases.push_back(Case("ScatterND_duplicates_last_wins", {{"x", {5}}, {"u", {4}}},
                       indices("i", {4, 1}, {1, 3, 1, -4}) + "y = ScatterND(x, i, u)"));
  for (const char* r : {"add", "mul", "max", "min"}) {
    DataCase c = Case(absl::StrCat("ScatterND_", r, "_duplicates"), {{"x", {4, 3}}, {"u", {4, 3}}},
                      indices("i", {4, 1}, {2, 0, 2, 2}) +
                          absl::StrCat("y = ScatterND<reduction = \"", r, "\">(x, i, u)"),
                      18);
    if (std::string(r) == "add" || std::string(r) == "mul") c = Approximate(c);
    cases.push_back(std::move(c));
  }
  cases.push_back(Fails(Case("ScatterND_updates_shape", {{"x", {4, 3}}, {"u", {2, 2}}},
                             indices("i", {2, 1}, {0, 1}) + "y = ScatterND(x, i, u)")));
  // ScatterElements and the older Scatter.
  cases.push_back(
      Case("ScatterElements_axis1", {{"x", {3, 5}}, {"u", {3, 2}}},
           indices("i", {3, 2}, {4, 0, -1, 1, 2, 2}) + "y = ScatterElements<axis = 1>(x, i, u)"));
  cases.push_back(Approximate(Case("ScatterElements_add", {{"x", {3, 4}}, {"u", {2, 4}}},
                                   indices("i", {2, 4}, {1, 1, 0, 2, 1, 2, 0, 2}) +
                                       "y = ScatterElements<reduction = \"add\">(x, i, u)",
                                   16)));
  cases.push_back(Case("Scatter_opset10", {{"x", {3, 3}}, {"u", {2, 3}}},
                       indices("i", {2, 3}, {1, 0, 2, 0, 2, 1}) + "y = Scatter(x, i, u)", 10));
  cases.push_back(Fails(Case("ScatterElements_out_of_range", {{"x", {3, 3}}, {"u", {1, 1}}},
                             indices("i", {1, 1}, {3}) + "y = ScatterElements(x, i, u)")));
}

void AddSelections(std::vector<DataCase>& cases) {
  cases.push_back(Unary("Trilu_upper", {2, 4, 5}, "y = Trilu(x)", 14));
  cases.push_back(Unary("Trilu_lower_k", {4, 5},
                        "k = Constant<value = int64 {1}>()\ny = Trilu<upper = 0>(x, k)", 14));
  cases.push_back(Unary("Trilu_upper_negative_k", {3, 5, 4},
                        "k = Constant<value = int64 {-2}>()\ny = Trilu(x, k)", 14));
  cases.push_back(Unary("Trilu_k_beyond", {3, 4},
                        "k = Constant<value = int64 {100}>()\ny = Trilu<upper = 0>(x, k)", 14));
  cases.push_back(Fails(Unary("Trilu_rank1", {4}, "y = Trilu(x)", 14)));
  DataCase n = Case("Not", {{"a", {3, 5}}, {"b", {5}}}, "c = Less(a, b)\ny = Not(c)");
  n.outputs = "bool y";
  cases.push_back(std::move(n));
}

// Integers and bools on the device (a comparison's result, or Where choosing between integer
// constants on it) move as bytes and 8-byte words; integer scatter reductions wrap around.
void AddOtherElementTypes(std::vector<DataCase>& cases) {
  const std::vector<std::pair<std::string, Dims>> ab = {{"a", {3, 5}}, {"b", {5}}};
  const std::string int64_values =
      "c = Greater(a, b)\n"
      "i = Constant<value = int64[3, 1] {-3, 4000000000, 7}>()\n"
      "j = Constant<value = int64 {-9}>()\n"
      "w = Where(c, i, j)\n";
  auto typed = [&](std::string name, std::string body, std::string outputs, int opset = 13) {
    DataCase c = Case(std::move(name), ab, std::move(body), opset);
    c.outputs = std::move(outputs);
    cases.push_back(std::move(c));
  };
  typed("Where_int64_branches", int64_values + "y = Identity(w)", "int64 y");
  typed("Transpose_int64", int64_values + "y = Transpose(w)", "int64 y");
  typed("Slice_int64",
        int64_values + IntConstant("s", {1}) + IntConstant("e", {-1}) + IntConstant("x1", {1}) +
            "y = Slice(w, s, e, x1)",
        "int64 y");
  typed(
      "ScatterND_int64_add",
      int64_values + "k = Constant<value = int64[2, 1] {1, 1}>()\n" +
          "u = Constant<value = int64[2, 5] {1, 2, 3, 4, 5, 9223372036854775807, 1, 1, 1, 1}>()\n" +
          "y = ScatterND<reduction = \"add\">(w, k, u)",
      "int64 y", 16);
  typed("Concat_bool", "c = Greater(a, b)\nd = Less(a, b)\ny = Concat<axis = 1>(c, d)", "bool y");
  typed("Gather_bool",
        "c = Greater(a, b)\ni = Constant<value = int64[2] {4, -5}>()\ny = Gather<axis = 1>(c, i)",
        "bool y");
  typed("Pad_bool", "c = Greater(a, b)\n" + IntConstant("p", {1, 0, 0, 2}) + "y = Pad(c, p)",
        "bool y");
}

// Cast to and from integers and bool. Floats reach past the int32 and 64-bit ranges (and
// beyond half's, in fp16-storage), with +-inf and NaN: saturation, then wrapping to narrower
// types, NaN to 0 (true for bool).
void AddCasts(std::vector<DataCase>& cases) {
  const std::string wide_floats =
      "k = Constant<value = float[3] {1000.0, 3e9, 2e19}>()\n"
      "m = Mul(x, k)\n"
      "z = Constant<value = float {0.0}>()\n"
      "d = Div(x, z)\n"
      "n = Sub(d, d)\n"
      "f = Concat<axis = 0>(m, d, n)\n";
  const std::pair<int, std::string> to[] = {{3, "int8"},  {2, "uint8"},  {5, "int16"},
                                            {6, "int32"}, {7, "int64"},  {13, "uint64"},
                                            {9, "bool"},  {12, "uint32"}};
  for (const auto& [code, name] : to) {
    DataCase c = Unary(absl::StrCat("Cast_float_to_", name), {4, 3},
                       wide_floats + absl::StrCat("y = Cast<to = ", code, ">(f)"));
    c.outputs = name + " y";
    cases.push_back(std::move(c));
  }
  const std::string int64_values =
      "c = Greater(a, b)\n"
      "i = Constant<value = int64[3, 1] {-3, 4000000000, 70000}>()\n"
      "j = Constant<value = int64 {-9}>()\n"
      "w = Where(c, i, j)\n";
  const std::pair<int, std::string> from_int64[] = {
      {1, "float"}, {10, "float16"}, {6, "int32"}, {9, "bool"}, {2, "uint8"}};
  for (const auto& [code, name] : from_int64) {
    DataCase c = Case(absl::StrCat("Cast_int64_to_", name), {{"a", {3, 5}}, {"b", {5}}},
                      int64_values + absl::StrCat("y = Cast<to = ", code, ">(w)"));
    c.outputs = name + " y";
    cases.push_back(std::move(c));
  }
  // CastLike takes the type of its second input (float to float16 included).
  DataCase like_half =
      Unary("CastLike_float_to_float16", {3, 5}, "t = Cast<to = 10>(x)\ny = CastLike(x, t)", 15);
  like_half.outputs = "float16 y";
  cases.push_back(std::move(like_half));
  DataCase like_int = Unary("CastLike_float_to_int32", {3, 5},
                            "m = Constant<value = float {1000.0}>()\nf = Mul(x, m)\n"
                            "t = Constant<value = int32 {1}>()\ny = CastLike(f, t)",
                            15);
  like_int.outputs = "int32 y";
  cases.push_back(std::move(like_int));
  DataCase b = Case("Cast_bool_to_float", {{"a", {3, 5}}, {"b", {5}}},
                    "c = Greater(a, b)\ny = Cast<to = 1>(c)");
  cases.push_back(std::move(b));
}

// And, Or, Xor on device bools with broadcasting; Size; Range of floats (the element count
// and each start + i * delta as the CPU executor rounds them).
void AddLogicAndGenerators(std::vector<DataCase>& cases) {
  for (const char* op : {"And", "Or", "Xor"}) {
    DataCase c = Case(absl::StrCat(op, "_broadcast"), {{"a", {3, 1, 5}}, {"b", {4, 5}}},
                      absl::StrCat("c = Greater(a, b)\nd = Less(b, a)\ny = ", op, "(c, d)"));
    c.outputs = "bool y";
    cases.push_back(std::move(c));
  }
  DataCase size = Unary("Size", {3, 4, 5}, "t = Neg(x)\ny = Size(t)");
  size.outputs = "int64 y";
  cases.push_back(std::move(size));
  cases.push_back(Unary("Range_float", {1},
                        "s = Constant<value = float {0.5}>()\n"
                        "l = Constant<value = float {7.3}>()\n"
                        "d = Constant<value = float {0.7}>()\n"
                        "r = Range(s, l, d)\ny = Add(r, x)"));
  cases.push_back(Unary("Range_float_negative_delta", {1},
                        "s = Constant<value = float {3.0}>()\n"
                        "l = Constant<value = float {-2.1}>()\n"
                        "d = Constant<value = float {-0.3}>()\n"
                        "r = Range(s, l, d)\ny = Add(r, x)"));
  cases.push_back(Fails(Unary("Range_zero_delta", {1},
                              "s = Constant<value = float {0.0}>()\n"
                              "l = Constant<value = float {1.0}>()\n"
                              "d = Constant<value = float {0.0}>()\n"
                              "r = Range(s, l, d)\ny = Add(r, x)")));
}

std::vector<DataCase> AllCases() {
  return matches_cpu::CasesOf<DataCase>({AddStridedCopies, AddIndexed, AddSelections,
                                         AddOtherElementTypes, AddCasts, AddLogicAndGenerators});
}

using Param = matches_cpu::InPrecision<DataCase>;

// Half arithmetic (GPUs with it only; skipped elsewhere): one case per kernel.
std::vector<DataCase> HalfArithmeticCases() {
  std::vector<DataCase> out;
  for (const DataCase& c : AllCases()) {
    for (const char* name : {"Transpose_window_partition", "Pad_constant_value", "GatherND_rows",
                             "ScatterND_duplicates_last_wins", "ScatterND_add_duplicates",
                             "Trilu_upper", "Split_equal"}) {
      if (c.name == name) out.push_back(c);
    }
  }
  return out;
}

std::string ModelText(const DataCase& c) {
  std::vector<std::string> inputs;
  for (const auto& [name, dims] : c.inputs) {
    inputs.push_back(matches_cpu::Declaration(DataType::kFloat, dims, name));
  }
  return matches_cpu::ModelText(c.opset, inputs, c.outputs, c.body);
}

TensorMap RandomInputs(const DataCase& c) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name)));
  std::uniform_real_distribution<float> real(-2, 2);
  TensorMap out;
  for (const auto& [name, dims] : c.inputs) {
    Tensor t(DataType::kFloat, dims);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = real(rng);
    out[name] = std::move(t);
  }
  return out;
}

class DataKernelTest : public ::testing::TestWithParam<Param> {};

TEST_P(DataKernelTest, MatchesCpu) {
  const DataCase& c = GetParam().op;
  matches_cpu::Expectation expect;
  expect.where = c.fails ? matches_cpu::Placement::kError : matches_cpu::Placement::kDevice;
  expect.agreement = c.exact ? matches_cpu::Agreement::kExact : matches_cpu::Agreement::kRange;
  matches_cpu::ExpectBackendsAgree(ModelText(c), RandomInputs(c), GetParam().precision, expect);
}

INSTANTIATE_TEST_SUITE_P(Ops, DataKernelTest,
                         ::testing::ValuesIn(matches_cpu::InPrecisions(
                             AllCases(), {Precision::kFp32, Precision::kFp16Storage})),
                         matches_cpu::CaseName());
INSTANTIATE_TEST_SUITE_P(HalfArithmetic, DataKernelTest,
                         ::testing::ValuesIn(matches_cpu::InPrecisions(HalfArithmeticCases(),
                                                                       {Precision::kFp16})),
                         matches_cpu::CaseName());

// Hand-worked values, independent of the CPU executor: a reflect pad and a scatter-add with
// a repeated index.
TEST(OpenclDataKernels, HandWorkedPadAndScatterAdd) {
  if (!matches_cpu::HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  auto opencl = matches_cpu::OnOpencl(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    m (float[4] x, float[3] u) => (float pad, float scatter) {
      p = Constant<value = int64[2] {2, 3}>()
      pad = Pad<mode = "reflect">(x, p)
      i = Constant<value = int64[3, 1] {1, 3, 1}>()
      scatter = ScatterND<reduction = "add">(x, i, u)
    }
  )");
  ASSERT_TRUE(opencl.ok()) << opencl.status();
  Session* cl = opencl->session.get();
  const Tensor x = Tensor::FromVector<float>(DataType::kFloat, {4}, {1, 2, 3, 4});
  const Tensor u = Tensor::FromVector<float>(DataType::kFloat, {3}, {10, 20, 30});
  auto out = cl->Run({{"x", x}, {"u", u}});
  ASSERT_TRUE(out.ok()) << out.status();
  auto values = [](const Tensor& t) {
    const auto v = t.values<float>();
    return std::vector<float>(v.begin(), v.end());
  };
  EXPECT_EQ(values((*out)[0]), (std::vector<float>{3, 2, 1, 2, 3, 4, 3, 2, 1}));
  EXPECT_EQ(values((*out)[1]), (std::vector<float>{1, 42, 3, 24}));
  for (const std::string& note : cl->notes()) {
    EXPECT_FALSE(absl::StrContains(note, "runs on the CPU")) << note;
  }
}

// Shape arithmetic as exporters write it, on integer initializers (which also get a device
// copy): it stays on the host with the shape it came from, no fallback note, and the data
// ops around it run on the device.
TEST(OpenclDataKernels, ShapeArithmeticOnInitializersStaysOnTheHost) {
  if (!matches_cpu::HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  auto opencl = matches_cpu::OnOpencl(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    m (float[1, 6, 4, 2] x) => (float y) <int64 one = {1}, int64 three = {3},
                                         int64[1] zero = {0}, int64[1] lead = {1},
                                         int64[1] rest = {-1}> {
      s = Shape(x)
      g = Gather<axis = 0>(s, one)
      d = Div(g, three)
      u = Unsqueeze(d, zero)
      c = Concat<axis = 0>(lead, u, rest)
      r = Reshape(x, c)
      y = Transpose<perm = [0, 2, 1]>(r)
    }
  )");
  ASSERT_TRUE(opencl.ok()) << opencl.status();
  Session* cl = opencl->session.get();
  std::vector<float> values(48);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  auto out = cl->Run({{"x", Tensor::FromVector<float>(DataType::kFloat, {1, 6, 4, 2}, values)}});
  ASSERT_TRUE(out.ok()) << out.status();
  // r is [1, 2, 24]; y[0, j, i] = r[0, i, j] = 24 * i + j.
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 24, 2}));
  const auto y = (*out)[0].values<float>();
  EXPECT_EQ(y[1], 24.0f);
  EXPECT_EQ(y[2 * 5 + 1], 29.0f);
  for (const std::string& note : cl->notes()) {
    EXPECT_FALSE(absl::StrContains(note, "runs on the CPU")) << note;
  }
}

}  // namespace
}  // namespace ovfix::exec
