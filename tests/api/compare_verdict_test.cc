// CompareModels and CompareBackends give the verdict `ovfix compare` prints (issue 38 point 5,
// issue 42 point 4): errors of float16 outputs measured on their values, convert's default
// criteria for the candidate's precision, NaN counted. The references are the two runs' raw
// output tensors, decoded and measured here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "onnx/defs/parser.h"
#include "ovfix/onnx.h"

namespace {

onnx::ModelProto Parse(const std::string& text) {
  onnx::ModelProto model;
  const onnx::Status status = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  return model;
}

// y = tanh(x @ w) with 128 outputs: converted to fp16, y moves by a few 1e-4 of its range.
onnx::ModelProto MatMulTanh() {
  std::vector<std::string> w;
  for (int i = 0; i < 16 * 128; ++i) w.push_back(absl::StrCat(0.4 * std::sin(0.37 * i + 0.1)));
  return Parse(absl::StrCat(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,16] x) => (float[1,128] y) <float[16,128] w = {)",
                            absl::StrJoin(w, ","), R"(}> {
      m = MatMul(x, w)
      y = Tanh(m)
    })"));
}

onnx::TensorProto FloatTensor(const std::string& name, std::vector<int64_t> dims,
                              const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

// IEEE half precision bits as a float, written out here rather than taken from ovfix.
float HalfToFloat(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity()
                              : std::numeric_limits<float>::quiet_NaN();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

// The values of a float or float16 output of ovfix::Run.
std::vector<double> Values(const onnx::TensorProto& t) {
  std::vector<double> out;
  if (t.data_type() == onnx::TensorProto::FLOAT16) {
    const std::string& raw = t.raw_data();
    if (!raw.empty()) {
      for (size_t i = 0; i + 1 < raw.size(); i += 2) {
        uint16_t bits;
        std::memcpy(&bits, raw.data() + i, 2);
        out.push_back(HalfToFloat(bits));
      }
    } else {
      for (int32_t bits : t.int32_data()) out.push_back(HalfToFloat(static_cast<uint16_t>(bits)));
    }
  } else {
    EXPECT_EQ(t.data_type(), onnx::TensorProto::FLOAT);
    if (!t.raw_data().empty()) {
      std::vector<float> f(t.raw_data().size() / 4);
      std::memcpy(f.data(), t.raw_data().data(), f.size() * 4);
      out.assign(f.begin(), f.end());
    } else {
      out.assign(t.float_data().begin(), t.float_data().end());
    }
  }
  return out;
}

struct Measured {
  double max_abs = 0, range = 0, mean_abs = 0;
  double p99_abs = 0;  // nearest rank: the smallest difference 99% of the elements do not exceed
};

Measured Measure(const std::vector<double>& reference, const std::vector<double>& candidate) {
  EXPECT_EQ(reference.size(), candidate.size());
  Measured m;
  double sum = 0;
  std::vector<double> differences;
  for (size_t i = 0; i < reference.size() && i < candidate.size(); ++i) {
    const double d = std::abs(candidate[i] - reference[i]);
    m.max_abs = std::max(m.max_abs, d);
    sum += d;
    differences.push_back(d);
  }
  m.mean_abs = sum / static_cast<double>(reference.size());
  std::sort(differences.begin(), differences.end());
  m.p99_abs = differences[static_cast<size_t>(std::ceil(0.99 * differences.size())) - 1];
  const auto [lo, hi] = std::minmax_element(reference.begin(), reference.end());
  m.range = *hi - *lo;
  return m;
}

struct Conversion {
  onnx::ModelProto original, converted;
  ovfix::NamedTensorProtos inputs;
  Measured measured;
};

// MatMulTanh and its gpu-fp16 conversion with float16 inputs and outputs, on one input, with
// the difference of their outputs measured here.
Conversion Float16Conversion() {
  Conversion c;
  c.original = MatMulTanh();
  std::vector<float> x;
  for (int i = 0; i < 16; ++i) x.push_back(0.3f * std::cos(1.3f * i));
  c.inputs = {{"x", FloatTensor("x", {1, 16}, x)}};
  ovfix::ConversionOptions options;
  options.target = "gpu-fp16";
  options.keep_io_types = false;
  ovfix::NamedTensors set;
  for (const auto& [name, proto] : c.inputs) set[name] = *ovfix::ToOnnxTensor(proto);
  options.calibration_sets = {set};
  absl::StatusOr<ovfix::ConvertedModelProto> converted = ovfix::Convert(c.original, options);
  EXPECT_TRUE(converted.ok()) << converted.status();
  if (!converted.ok()) return c;
  c.converted = converted->model;
  EXPECT_EQ(c.converted.graph().output(0).type().tensor_type().elem_type(),
            onnx::TensorProto::FLOAT16);
  absl::StatusOr<std::vector<onnx::TensorProto>> a = ovfix::Run(c.original, c.inputs);
  absl::StatusOr<std::vector<onnx::TensorProto>> b = ovfix::Run(c.converted, c.inputs);
  EXPECT_TRUE(a.ok() && b.ok());
  if (!a.ok() || !b.ok()) return c;
  if (a->empty() || b->empty()) return c;
  EXPECT_EQ((*b)[0].name(), "y");
  EXPECT_EQ((*b)[0].data_type(), onnx::TensorProto::FLOAT16);
  c.measured = Measure(Values((*a)[0]), Values((*b)[0]));
  return c;
}

TEST(CompareVerdict, Float16OutputErrorsAreThoseOfTheirValues) {
  const Conversion c = Float16Conversion();
  ASSERT_GT(c.measured.max_abs, 0);
  absl::StatusOr<ovfix::Comparison> result =
      ovfix::CompareModels(c.original, c.converted, c.inputs);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->outputs.size(), 1u);
  const ovfix::OutputComparison& y = result->outputs[0];
  EXPECT_NEAR(y.max_abs_error, c.measured.max_abs, 1e-6 * c.measured.max_abs);
  EXPECT_NEAR(y.relative_error, c.measured.max_abs / c.measured.range,
              1e-5 * c.measured.max_abs / c.measured.range);
}

TEST(CompareVerdict, DefaultsAreConvertsForTheCandidatesPrecision) {
  const Conversion c = Float16Conversion();
  const double relative = c.measured.max_abs / c.measured.range;
  // Beyond the fp32 default (max:1e-4), within every bound of the fp16 one for 128 elements
  // (max:0.1,p99:0.01,mean:0.002).
  ASSERT_GT(relative, 1e-4);
  ASSERT_LT(relative, 0.01);
  absl::StatusOr<ovfix::Comparison> result =
      ovfix::CompareModels(c.original, c.converted, c.inputs);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->outputs_match);
  EXPECT_TRUE(result->outputs[0].within_tolerance);
  // Each criterion with its measure, worked out here for the worst element and the mean.
  const ovfix::OutputComparison& y = result->outputs[0];
  EXPECT_TRUE(y.meets);
  EXPECT_EQ(y.criteria, "max:0.1,p99:0.01,mean:0.002");
  ASSERT_EQ(y.checks.size(), 3u);
  EXPECT_EQ(y.checks[0].criterion, "max:0.1");
  EXPECT_NEAR(y.checks[0].measured, relative, 1e-5 * relative);
  EXPECT_EQ(y.checks[0].bound, 0.1);
  EXPECT_EQ(y.checks[2].criterion, "mean:0.002");
  EXPECT_NEAR(y.checks[2].measured, c.measured.mean_abs / c.measured.range, 1e-5 * relative);
  EXPECT_NEAR(y.mean_error, c.measured.mean_abs / c.measured.range, 1e-5 * relative);
  EXPECT_TRUE(y.checks[0].meets && y.checks[1].meets && y.checks[2].meets);
  const double p99 = c.measured.p99_abs / c.measured.range;
  EXPECT_NEAR(y.checks[1].measured, p99, 1e-5 * p99);
  EXPECT_NEAR(y.p99_error, p99, 1e-5 * p99);
  const double score = std::max({relative / 0.1, p99 / 0.01, y.mean_error / 0.002});
  EXPECT_NEAR(y.score, score, 1e-5 * score);
  EXPECT_EQ(y.elements, 128);
  EXPECT_EQ(y.non_finite, 0);
  EXPECT_EQ(y.statistics.rfind("max ", 0), 0u) << y.statistics;
  // --accuracy's syntax judges as convert's option does.
  absl::StatusOr<ovfix::Comparison> judged = ovfix::CompareModels(
      c.original, c.converted, c.inputs, std::nullopt, {}, {"y=max:1e-5,top1:0"});
  ASSERT_TRUE(judged.ok()) << judged.status();
  EXPECT_EQ(judged->outputs[0].criteria, "max:1e-05,top1:0");
  EXPECT_FALSE(judged->outputs[0].checks[0].meets);
  EXPECT_FALSE(judged->outputs_match);
  absl::StatusOr<ovfix::Comparison> unknown =
      ovfix::CompareModels(c.original, c.converted, c.inputs, std::nullopt, {}, {"nope=max:1"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("has no output 'nope'"), std::string::npos)
      << unknown.status();
  // A tolerance given is the worst element's bound, as convert's --tolerance.
  absl::StatusOr<ovfix::Comparison> strict =
      ovfix::CompareModels(c.original, c.converted, c.inputs, 1e-4);
  ASSERT_TRUE(strict.ok()) << strict.status();
  EXPECT_FALSE(strict->outputs_match);
  // fp16 storage of one model: the fp16 defaults too.
  ovfix::RunOptions fp32, fp16_storage;
  fp16_storage.precision = "fp16-storage";
  absl::StatusOr<ovfix::Comparison> backends =
      ovfix::CompareBackends(c.original, fp32, fp16_storage, c.inputs);
  ASSERT_TRUE(backends.ok()) << backends.status();
  EXPECT_TRUE(backends->outputs_match);
  EXPECT_GT(backends->outputs[0].relative_error, 1e-4);
}

TEST(CompareVerdict, NonFiniteValuesAreCountedNeverAnErrorOfZero) {
  const onnx::ModelProto reference = Parse(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2,3] y) { a = Abs(x)
      y = Sqrt(a) })");
  const onnx::ModelProto candidate = Parse(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2,3] y) { y = Sqrt(x) })");
  const ovfix::NamedTensorProtos inputs = {
      {"x", FloatTensor("x", {2, 3}, {-1, -4, -9, -0.25f, -2, -3})}};
  absl::StatusOr<ovfix::Comparison> result = ovfix::CompareModels(reference, candidate, inputs);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->outputs_match);
  const ovfix::OutputComparison& y = result->outputs[0];
  EXPECT_TRUE(std::isinf(y.max_abs_error)) << y.max_abs_error;
  EXPECT_TRUE(std::isinf(y.relative_error)) << y.relative_error;
  EXPECT_EQ(y.non_finite, 6);
  EXPECT_TRUE(std::isinf(y.mean_error)) << y.mean_error;
  EXPECT_FALSE(y.meets);
  EXPECT_NE(y.statistics.find("6 NaN/inf"), std::string::npos) << y.statistics;
}

}  // namespace
