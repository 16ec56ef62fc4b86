// A one-node (or few-node) model run on the OpenCL executor and on the CPU executor with the
// same random inputs, in one precision: the outputs must agree (to the precision's
// resolution, or exactly) and the node must run where the case says. The harness of every
// OpenCL kernel test: ExpectBackendsAgree is the comparison itself; OpCase/KernelCase and
// ExpectMatchesCpu the case description most of them share.
#pragma once

#include <cmath>
#include <functional>
#include <initializer_list>
#include <memory>
#include <ostream>
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

namespace ovfix::exec::matches_cpu {

using Dims = std::vector<int64_t>;

// A random graph input, uniform in [low, high]; integer types (and float inputs marked
// `integral`) get whole numbers, so orderings and comparisons see ties. With `specials` = 2
// or 3, every 5th value is inf, -inf (or NaN) in turn: what fp16 overflow feeds the layers
// after it.
struct Input {
  std::string name;
  DataType type = DataType::kFloat;
  Dims dims;
  double low = -2, high = 2;
  bool integral = false;
  int specials = 0;
};

inline Input Float(std::string name, Dims dims, double low = -2, double high = 2) {
  return {std::move(name), DataType::kFloat, std::move(dims), low, high};
}
inline Input Integral(std::string name, Dims dims, double low, double high,
                      DataType type = DataType::kFloat) {
  return {std::move(name), type, std::move(dims), low, high, true};
}
// Whole numbers in [-2, 2].
inline Input Integral(std::string name, Dims dims, DataType type = DataType::kFloat) {
  return Integral(std::move(name), std::move(dims), -2, 2, type);
}
inline Input Bool(std::string name, Dims dims) {
  return {std::move(name), DataType::kBool, std::move(dims), 0, 1, true};
}
inline Input WithSpecials(Input in, int kinds = 3) {
  in.specials = kinds;
  return in;
}

enum class Placement {
  kDevice,    // the kernels claim this configuration: no fallback note
  kFallback,  // the op's kernel declines it: one note naming the op, and the right answer
  kAnywhere,  // host-side integer arithmetic (or placement checked by the test): no claim
  kError,     // bad input: both backends return an error (and neither crashes)
};

struct OpCase {
  std::string name;  // unique; letters, digits and '_'
  int opset = 13;
  std::vector<Input> inputs;
  std::string outputs;  // declarations, e.g. "float y"
  std::string body;     // the nodes, ONNX text
  Placement where = Placement::kDevice;
  bool exact = false;  // data movement, indices: bit-exact
  // The same float operations in the same order as the CPU: bit-exact in fp32 and
  // fp16-storage (half arithmetic rounds differently).
  bool exact_in_float = false;
  std::string fallback_op;  // kFallback: the op type the note names
};

inline OpCase Op(std::string name, std::vector<Input> inputs, std::string outputs, std::string body,
                 int opset = 13) {
  OpCase c;
  c.name = std::move(name);
  c.opset = opset;
  c.inputs = std::move(inputs);
  c.outputs = std::move(outputs);
  c.body = std::move(body);
  return c;
}
inline OpCase Exact(OpCase c) {
  c.exact = true;
  return c;
}
inline OpCase ExactInFloat(OpCase c) {
  c.exact_in_float = true;
  return c;
}
// Integer data: the session computes it on the host; exact.
inline OpCase Host(OpCase c) {
  c.where = Placement::kAnywhere;
  c.exact = true;
  return c;
}
inline OpCase FallsBack(std::string op, OpCase c) {
  c.where = Placement::kFallback;
  c.fallback_op = std::move(op);
  return c;
}
inline OpCase Fails(OpCase c) {
  c.where = Placement::kError;
  return c;
}

// A case in one precision: the tests' parameter.
template <typename Case>
struct InPrecision {
  Case op;
  Precision precision;
  std::string name() const {
    const char* suffix[] = {"fp32", "fp16_storage", "fp16"};
    return absl::StrCat(op.name, "_", suffix[static_cast<int>(precision)]);
  }
};
using KernelCase = InPrecision<OpCase>;

// What gtest prints for the parameter.
template <typename Case>
void PrintTo(const InPrecision<Case>& c, std::ostream* os) {
  *os << c.name();
}

// Every case in each of `precisions`.
template <typename Case>
std::vector<InPrecision<Case>> InPrecisions(const std::vector<Case>& cases,
                                            std::initializer_list<Precision> precisions) {
  std::vector<InPrecision<Case>> out;
  for (const Case& c : cases) {
    for (Precision p : precisions) out.push_back({c, p});
  }
  return out;
}

// The cases that each of `adders` appends, in order: a test file's whole list.
template <typename Case>
std::vector<Case> CasesOf(std::initializer_list<void (*)(std::vector<Case>&)> adders) {
  std::vector<Case> cases;
  for (auto add : adders) add(cases);
  return cases;
}

// gtest's name for a parameter: the case's own, with its precision.
struct CaseName {
  template <typename Param>
  std::string operator()(const ::testing::TestParamInfo<Param>& info) const {
    return info.param.name();
  }
};

// The first case whose name starts with each prefix: the half-arithmetic runs (GPUs only).
inline std::vector<OpCase> FirstOfEach(const std::vector<OpCase>& all,
                                       std::initializer_list<const char*> prefixes) {
  std::vector<OpCase> out;
  for (const char* prefix : prefixes) {
    for (const OpCase& c : all) {
      if (absl::StartsWith(c.name, prefix)) {
        out.push_back(c);
        break;
      }
    }
  }
  return out;
}

// "float[2,3] x": a graph input's declaration in ONNX text.
inline std::string Declaration(DataType type, const Dims& dims, const std::string& name) {
  return absl::StrCat(std::string(DataTypeName(type)), "[", absl::StrJoin(dims, ","), "] ", name);
}

// A model of one graph `m` in ONNX text.
inline std::string ModelText(int opset, const std::vector<std::string>& input_declarations,
                             const std::string& outputs, const std::string& body) {
  return absl::StrCat("<ir_version: 8, opset_import: [\"\" : ", opset, "]>\nm (",
                      absl::StrJoin(input_declarations, ", "), ") => (", outputs, ") {\n", body,
                      "\n}\n");
}

inline std::string ModelText(const OpCase& c) {
  std::vector<std::string> inputs;
  for (const Input& in : c.inputs) inputs.push_back(Declaration(in.type, in.dims, in.name));
  return ModelText(c.opset, inputs, c.outputs, c.body);
}

// Element i of a random input: v in the tensor's type (a bool is v > 0).
inline void SetRandomElement(Tensor& t, int64_t i, double v) {
  t.SetFromDouble(i, t.type() == DataType::kBool ? static_cast<double>(v > 0) : v);
}

inline TensorMap RandomInputs(const OpCase& c) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name)));
  TensorMap out;
  for (const Input& in : c.inputs) {
    Tensor t(in.type, in.dims);
    std::uniform_real_distribution<double> real(in.low, in.high);
    std::uniform_int_distribution<int64_t> whole(static_cast<int64_t>(in.low),
                                                 static_cast<int64_t>(in.high));
    const bool integer = in.integral || !IsFloatingPoint(in.type);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = integer ? static_cast<double>(whole(rng)) : real(rng);
      if (in.specials > 0 && i % 5 == 2) {
        const double specials[] = {INFINITY, -INFINITY, NAN};
        v = specials[(i / 5) % in.specials];
      }
      SetRandomElement(t, i, v);
    }
    out[in.name] = std::move(t);
  }
  return out;
}

// Max abs error relative to the reference's range, or to its magnitude where that is larger
// (a sum of squares lands in a narrow band far from 0: float rounding scales with the values,
// not with their spread).
inline double RangeError(const Comparison& c) {
  const double range = std::max(c.expected_max - c.expected_min,
                                std::max(std::abs(c.expected_max), std::abs(c.expected_min)));
  return c.max_abs_error / std::max(range, 1e-30);
}

inline double Tolerance(Precision precision) {
  constexpr double kHalfUlp = 1.0 / 1024;  // relative spacing of halfs in [1, 2)
  switch (precision) {
    case Precision::kFp32:
      return 1e-5;
    case Precision::kFp16Storage:
      return 3 * kHalfUlp;  // both round the same float results; ties may land apart
    case Precision::kFp16:
      return 16 * kHalfUlp;  // half arithmetic rounds every step, not just stored tensors
  }
  return 0;
}

inline bool HaveOpencl() {
  static const bool have = [] {
    auto devices = opencl::ListDevices();
    return devices.ok() && !devices->empty();
  }();
  return have;
}

// How the OpenCL outputs must agree with the CPU's.
enum class Agreement {
  kExact,     // bit-exact
  kRange,     // RangeError within Tolerance(precision)
  kRelative,  // RelativeError (exec/compare.h) within Tolerance(precision)
};

struct Expectation {
  Placement where = Placement::kDevice;
  std::string fallback_op;  // kFallback: the op type the one fallback note names
  Agreement agreement = Agreement::kRange;
  bool integer_outputs_exact = true;  // non-float outputs bit-exact whatever `agreement`
};

// Runs the model `text` on the CPU and OpenCL executors with `inputs` in `precision` and
// checks `expect`. Skips without an OpenCL device, and in fp16 without half arithmetic.
// Where `opencl_session` is given it receives the OpenCL session, for the caller's further
// checks (after testing HasFatalFailure() and IsSkipped()).
inline void ExpectBackendsAgree(const std::string& text, const TensorMap& inputs,
                                Precision precision, const Expectation& expect,
                                std::unique_ptr<Session>* opencl_session = nullptr) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  SCOPED_TRACE(text);
  auto model = ParseModelText(text);
  ASSERT_TRUE(model.ok()) << model.status();
  SessionOptions cpu_options;
  cpu_options.precision = precision;
  cpu_options.threads = 1;
  SessionOptions cl_options = cpu_options;
  cl_options.backend = "opencl";
  auto cl = CreateSession(**model, cl_options);
  if (precision == Precision::kFp16 && !cl.ok() &&
      absl::StrContains(cl.status().message(), "cl_khr_fp16")) {
    GTEST_SKIP() << "the device has no half arithmetic";
  }
  ASSERT_TRUE(cl.ok()) << cl.status();
  auto cpu = CreateSession(**model, cpu_options);
  ASSERT_TRUE(cpu.ok()) << cpu.status();

  auto expected = (*cpu)->Run(inputs);
  auto actual = (*cl)->Run(inputs);
  const std::vector<std::string> notes = (*cl)->notes();
  if (opencl_session != nullptr) *opencl_session = std::move(*cl);
  if (expect.where == Placement::kError) {
    EXPECT_FALSE(expected.ok()) << "the CPU executor accepted a bad input";
    EXPECT_FALSE(actual.ok()) << "the OpenCL executor accepted a bad input";
    return;
  }
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_TRUE(actual.ok()) << actual.status();
  ASSERT_EQ(actual->size(), expected->size());
  for (size_t i = 0; i < actual->size(); ++i) {
    const Tensor& a = (*actual)[i];
    const Tensor& e = (*expected)[i];
    ASSERT_EQ(a.type(), e.type()) << "output " << i;
    ASSERT_EQ(a.dims(), e.dims()) << "output " << i;
    const Comparison cmp = CompareTensors(a, e, {0, 0});
    EXPECT_EQ(cmp.non_finite_differences, 0) << "output " << i << ": " << cmp.message;
    if (expect.agreement == Agreement::kExact ||
        (expect.integer_outputs_exact && !IsFloatingPoint(e.type()))) {
      EXPECT_TRUE(cmp.ok) << "output " << i << ": " << cmp.message;
    } else if (expect.agreement == Agreement::kRelative) {
      EXPECT_LE(RelativeError(a, e), Tolerance(precision))
          << "output " << i << ": " << DescribeComparison(cmp);
    } else {
      EXPECT_LE(RangeError(cmp), Tolerance(precision))
          << "output " << i << ": " << DescribeComparison(cmp) << ", reference in ["
          << cmp.expected_min << ", " << cmp.expected_max << "]";
    }
  }

  std::vector<std::string> fallbacks;
  for (const std::string& note : notes) {
    if (absl::StrContains(note, "runs on the CPU")) fallbacks.push_back(note);
  }
  if (expect.where == Placement::kDevice) {
    EXPECT_TRUE(fallbacks.empty()) << absl::StrJoin(fallbacks, "\n");
  } else if (expect.where == Placement::kFallback) {
    ASSERT_EQ(fallbacks.size(), 1u) << absl::StrJoin(fallbacks, "\n");
    EXPECT_TRUE(absl::StrContains(fallbacks[0], expect.fallback_op)) << fallbacks[0];
  }
}

// A model from ONNX text and its session on the OpenCL executor (the session reads the model,
// so they go together): for tests that check hand-worked values on the device alone.
struct OpenclModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Session> session;
};
inline absl::StatusOr<OpenclModel> OnOpencl(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(text);
  if (!model.ok()) return model.status();
  SessionOptions options;
  options.backend = "opencl";
  absl::StatusOr<std::unique_ptr<Session>> session = CreateSession(**model, options);
  if (!session.ok()) return session.status();
  return OpenclModel{std::move(*model), std::move(*session)};
}

// The test body of an OpCase: both executors on the case's random inputs.
inline void ExpectMatchesCpu(const KernelCase& param) {
  const OpCase& c = param.op;
  Expectation expect;
  expect.where = c.where;
  expect.fallback_op = c.fallback_op;
  const bool exact = c.exact || (c.exact_in_float && param.precision != Precision::kFp16);
  expect.agreement = exact ? Agreement::kExact : Agreement::kRange;
  ExpectBackendsAgree(ModelText(c), RandomInputs(c), param.precision, expect);
}

// The test of a group of kernels: SUITE.MatchesCpu runs ExpectMatchesCpu on `cases` in fp32
// and fp16 storage (instance Ops) and on `half_cases` in half arithmetic (HalfArithmetic).
#define OVFIX_MATCHES_CPU_TEST(SUITE, cases, half_cases)                                      \
  class SUITE : public ::testing::TestWithParam<KernelCase> {};                               \
  TEST_P(SUITE, MatchesCpu) { ExpectMatchesCpu(GetParam()); }                                 \
  INSTANTIATE_TEST_SUITE_P(                                                                   \
      Ops, SUITE,                                                                             \
      ::testing::ValuesIn(InPrecisions(cases, {Precision::kFp32, Precision::kFp16Storage})),  \
      CaseName());                                                                            \
  INSTANTIATE_TEST_SUITE_P(HalfArithmetic, SUITE,                                             \
                           ::testing::ValuesIn(InPrecisions(half_cases, {Precision::kFp16})), \
                           CaseName())

}  // namespace ovfix::exec::matches_cpu
