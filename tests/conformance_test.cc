// The ONNX backend node tests (OVFIX_SHARED_DIR/onnx-node-tests, 922 of them) on the cpu
// session: each test's model.onnx runs on every test_data_set_* and its outputs must match
// output_K.pb within rtol 1e-3, atol 1e-5 (NaN equals NaN, integers and bools exact).
//
//   Listed/Conformance.Passes/<test>   one per name in tests/conformance_pass.txt: these must
//                                      pass (the list only ever grows)
//   Summary.AllTests                   runs all 922, prints pass/fail counts by category and
//                                      every failure with its reason; fails only when asked
//                                      to write a list that would drop a listed test
//
// Running a subset quickly:
//   ovfix_conformance --gtest_filter='Listed/*gather*'            listed tests only
//   OVFIX_CONFORMANCE_ALL=1 ovfix_conformance --gtest_filter='*gather*'
//                                      every test whose name matches, listed or not
//   OVFIX_CONFORMANCE_FILTER=gather ovfix_conformance --gtest_filter='Summary.*'
//                                      the summary over names containing "gather"
// Growing the list (run the full summary, then review the diff of the list):
//   export OVFIX_WRITE_PASS_LIST=$PWD/tests/conformance_pass.txt   (from the checkout)
//   ovfix_conformance --gtest_filter='Summary.*'
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/compare.h"
#include "exec/cpu_session.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"
#include "onnx/onnx-data_pb.h"
#include "tests/support/node_tests.h"

namespace ovfix::exec {
namespace {

namespace fs = std::filesystem;

const char kTestRoot[] = OVFIX_SHARED_DIR "/onnx-node-tests";
const char kPassList[] = OVFIX_SOURCE_DIR "/tests/conformance_pass.txt";

std::vector<std::string> AllTestNames() { return node_tests::TestNames(kTestRoot); }

std::vector<std::string> ListedTestNames() { return node_tests::ReadNameList(kPassList); }

using node_tests::IsNondeterministic;

// ---- reading test data: TensorProto, SequenceProto or OptionalProto files ----

absl::StatusOr<RuntimeValue> ValueFromSequence(const onnx::SequenceProto& proto) {
  RuntimeValue::Sequence items;
  for (const onnx::TensorProto& t : proto.tensor_values()) {
    OVFIX_ASSIGN_OR_RETURN(Tensor tensor, TensorFromProto(t));
    items.push_back(std::move(tensor));
  }
  return RuntimeValue::FromSequence(std::move(items));
}

absl::StatusOr<RuntimeValue> ReadValueFile(const std::string& path, const onnx::TypeProto& type) {
  if (type.has_sequence_type() || type.has_optional_type()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
    if (type.has_sequence_type()) {
      onnx::SequenceProto proto;
      if (!proto.ParseFromIstream(&in)) return absl::DataLossError("bad SequenceProto");
      return ValueFromSequence(proto);
    }
    onnx::OptionalProto proto;
    if (!proto.ParseFromIstream(&in)) return absl::DataLossError("bad OptionalProto");
    if (proto.has_tensor_value()) {
      OVFIX_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(proto.tensor_value()));
      return RuntimeValue(std::move(t));
    }
    if (proto.has_sequence_value()) return ValueFromSequence(proto.sequence_value());
    return RuntimeValue::None();
  }
  OVFIX_ASSIGN_OR_RETURN(Tensor t, node_tests::ReadTensor(path, type.tensor_type().elem_type() ==
                                                                    onnx::TensorProto::BFLOAT16));
  return RuntimeValue(std::move(t));
}

// ---- one test ----

enum class Outcome { kPass, kLoadError, kUnsupported, kRunError, kMismatch };

const char* OutcomeName(Outcome o) {
  static constexpr const char* kNames[] = {"pass", "load error", "unsupported op", "run error",
                                           "wrong result"};
  return kNames[static_cast<size_t>(o)];
}

struct Result {
  Result() = default;
  Result(Outcome o, std::string m) : outcome(o), message(std::move(m)) {}
  Outcome outcome = Outcome::kPass;
  std::string message;
  double seconds = 0;
};

std::string CompareValues(const RuntimeValue& actual, const RuntimeValue& expected) {
  if (actual.kind != expected.kind) {
    return absl::StrCat("got ", DescribeRuntimeValue(actual), ", expected ",
                        DescribeRuntimeValue(expected));
  }
  if (actual.is_tensor()) {
    Comparison c = CompareTensors(actual.tensor, expected.tensor);
    return c.ok ? "" : c.message;
  }
  if (actual.is_sequence()) {
    if (actual.sequence->size() != expected.sequence->size()) {
      return absl::StrCat("sequence of ", actual.sequence->size(), ", expected ",
                          expected.sequence->size());
    }
    for (size_t i = 0; i < actual.sequence->size(); ++i) {
      Comparison c = CompareTensors((*actual.sequence)[i], (*expected.sequence)[i]);
      if (!c.ok) return absl::StrCat("sequence element ", i, ": ", c.message);
    }
  }
  return "";
}

Result RunOne(const std::string& name) {
  const fs::path dir = fs::path(kTestRoot) / name;
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel((dir / "model.onnx").string());
  if (!model.ok()) return {Outcome::kLoadError, std::string(model.status().message())};
  SessionOptions options;
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<CpuSession>> session = CpuSession::Create(**model, options);
  if (!session.ok()) {
    const std::string message(session.status().message());
    const bool unsupported = absl::StrContains(message, "no cpu kernel") ||
                             absl::StrContains(message, "model-local function");
    return {unsupported ? Outcome::kUnsupported : Outcome::kLoadError, message};
  }
  const node_tests::DataSetProblem problem = node_tests::RunDataSets<RuntimeValue>(
      dir, (*model)->graph(),
      [](const std::string& path, const Value& v) { return ReadValueFile(path, v.type()); },
      [&](const ValueMap& feeds) { return (*session)->RunValues(feeds); }, CompareValues);
  static constexpr Outcome kOutcomes[] = {Outcome::kPass, Outcome::kLoadError, Outcome::kRunError,
                                          Outcome::kMismatch};
  if (problem.kind != node_tests::DataSetProblem::kNone) {
    return {kOutcomes[problem.kind], problem.message};
  }
  return {};
}

Result TimedRun(const std::string& name) {
  const auto start = std::chrono::steady_clock::now();
  Result r = RunOne(name);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// ---- the tests ----

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, Passes) {
  if (!fs::exists(kTestRoot)) GTEST_SKIP() << "no " << kTestRoot;
  if (!fs::exists(fs::path(kTestRoot) / GetParam())) {
    FAIL() << GetParam() << " is listed in " << kPassList << " but missing from " << kTestRoot;
  }
  Result r = RunOne(GetParam());
  EXPECT_EQ(r.outcome, Outcome::kPass) << OutcomeName(r.outcome) << ": " << r.message;
}

std::vector<std::string> ParameterNames() {
  if (const char* all = std::getenv("OVFIX_CONFORMANCE_ALL"); all != nullptr && *all != '0') {
    return AllTestNames();
  }
  return ListedTestNames();
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Listed, Conformance, ::testing::ValuesIn(ParameterNames()), ParamName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conformance);

TEST(Summary, AllTests) {
  if (!fs::exists(kTestRoot)) GTEST_SKIP() << "no " << kTestRoot;
  const char* filter = std::getenv("OVFIX_CONFORMANCE_FILTER");
  std::map<Outcome, int> counts;
  std::vector<std::string> passing;
  std::vector<std::pair<double, std::string>> times;
  const std::vector<std::string> listed = ListedTestNames();
  const std::set<std::string> listed_set(listed.begin(), listed.end());
  int total = 0;
  for (const std::string& name : AllTestNames()) {
    if (filter != nullptr && !absl::StrContains(name, filter)) continue;
    ++total;
    Result r = TimedRun(name);
    ++counts[r.outcome];
    times.emplace_back(r.seconds, name);
    if (r.outcome == Outcome::kPass) {
      if (!IsNondeterministic(name)) passing.push_back(name);
    } else {
      std::printf("FAIL %s [%s]%s: %s\n", name.c_str(), OutcomeName(r.outcome),
                  listed_set.contains(name) ? " (LISTED)" : "", r.message.substr(0, 300).c_str());
    }
  }
  std::sort(times.rbegin(), times.rend());
  std::printf("slowest:");
  for (size_t i = 0; i < times.size() && i < 5; ++i) {
    std::printf(" %s %.2fs", times[i].second.c_str(), times[i].first);
  }
  std::printf("\nconformance: %d of %d pass", counts[Outcome::kPass], total);
  for (const auto& [outcome, count] : counts) {
    if (outcome != Outcome::kPass) std::printf(", %d %s", count, OutcomeName(outcome));
  }
  std::printf(" (%zu listed)\n", listed.size());
  if (const char* path = std::getenv("OVFIX_WRITE_PASS_LIST"); path != nullptr && *path) {
    ASSERT_EQ(filter, nullptr) << "refusing to write a pass list from a filtered run";
    node_tests::WritePassList(path, listed, passing);
  }
}

}  // namespace
}  // namespace ovfix::exec
