// The ONNX backend node tests (OVFIX_SHARED_DIR/onnx-node-tests) on the OpenCL backend: every
// test whose nodes all have OpenCL kernels (tensor inputs and outputs only) runs in fp32 on
// the device, and must match output_K.pb as on the cpu session (rtol 1e-3, atol 1e-5) with
// every node on the device: no CPU fallback, no node computed on the host.
//
//   OpenclConformance.ShardK       the names in tests/opencl_conformance_pass.txt, split over
//                                  kShards tests (ctest runs them side by side): these must
//                                  pass (the list only ever grows)
//   OpenclConformanceSummary.All   runs every eligible test, prints counts by outcome and each
//                                  failure; with OVFIX_WRITE_OPENCL_PASS_LIST=FILE writes the
//                                  passing names there (refused if a listed test now fails)
//
// PoCL builds programs slowly; sessions of one process share the runtime's program cache
// only per session, so each test builds its own (PoCL's on-disk cache makes rebuilds quick).
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
#include "exec/executor.h"
#include "exec/opencl/control_flow.h"
#include "exec/opencl/op_context.h"
#include "exec/opencl/opencl_runtime.h"
#include "exec/opencl/opencl_session.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "tests/support/node_tests.h"

namespace ovfix::exec {
namespace {

namespace fs = std::filesystem;

const char kTestRoot[] = OVFIX_SHARED_DIR "/onnx-node-tests";
const char kPassList[] = OVFIX_SOURCE_DIR "/tests/opencl_conformance_pass.txt";
constexpr int kShards = 4;

bool HaveOpencl() {
  static const bool have = [] {
    auto devices = opencl::ListDevices();
    return devices.ok() && !devices->empty();
  }();
  return have;
}

std::vector<std::string> AllTestNames() { return node_tests::TestNames(kTestRoot); }

std::vector<std::string> ListedTestNames() { return node_tests::ReadNameList(kPassList); }

using node_tests::IsNondeterministic;

enum class Outcome { kPass, kNotEligible, kLoadError, kRunError, kMismatch, kFallback, kHost };

const char* OutcomeName(Outcome o) {
  static constexpr const char* kNames[] = {"pass",
                                           "no OpenCL kernel for every node",
                                           "load error",
                                           "run error",
                                           "wrong result",
                                           "ran nodes on the CPU",
                                           "computed nodes on the host"};
  return kNames[static_cast<size_t>(o)];
}

struct Result {
  Outcome outcome = Outcome::kPass;
  std::string message;
};

// The first node of `graph` (or its subgraphs) without an OpenCL kernel, or "".
std::string MissingKernel(const Graph& graph, const Model& model) {
  for (const Node* node : graph.nodes()) {
    const bool onnx = node->domain().empty() || node->domain() == "ai.onnx";
    const int opset = static_cast<int>(model.OpsetVersion(node->domain()));
    if (!onnx || (opencl::FindOp(node->op_type(), opset) == nullptr &&
                  !opencl::IsControlFlowOp(node->op_type()))) {
      return absl::StrCat(node->op_type(), "-", opset);
    }
    for (const Subgraph& sub : node->subgraphs()) {
      std::string missing = MissingKernel(*sub.graph, model);
      if (!missing.empty()) return missing;
    }
  }
  return "";
}

// A tensor file for `value`.
absl::StatusOr<Tensor> ReadValueFile(const std::string& path, const Value& value) {
  return node_tests::ReadTensor(path, value.elem_type() == DataType::kBfloat16);
}

Result RunOne(const std::string& name) {
  const fs::path dir = fs::path(kTestRoot) / name;
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel((dir / "model.onnx").string());
  if (!model.ok()) return {Outcome::kLoadError, std::string(model.status().message())};
  const Graph& graph = (*model)->graph();
  if (std::string missing = MissingKernel(graph, **model); !missing.empty()) {
    return {Outcome::kNotEligible, missing};
  }
  for (const std::vector<Value*>* values : {&graph.inputs(), &graph.outputs()}) {
    for (const Value* v : *values) {
      if (!v->is_tensor()) return {Outcome::kNotEligible, "a sequence or optional value"};
    }
  }
  SessionOptions options;
  options.backend = "opencl";
  absl::StatusOr<std::unique_ptr<Session>> session = CreateSession(**model, options);
  if (!session.ok()) return {Outcome::kLoadError, std::string(session.status().message())};
  const node_tests::DataSetProblem problem = node_tests::RunDataSets<Tensor>(
      dir, graph, ReadValueFile, [&](const TensorMap& feeds) { return (*session)->Run(feeds); },
      [](const Tensor& actual, const Tensor& expected) {
        const Comparison c = CompareTensors(actual, expected);
        return c.ok ? std::string() : c.message;
      });
  static constexpr Outcome kOutcomes[] = {Outcome::kPass, Outcome::kLoadError, Outcome::kRunError,
                                          Outcome::kMismatch};
  if (problem.kind != node_tests::DataSetProblem::kNone) {
    return {kOutcomes[problem.kind], problem.message};
  }
  const auto placement = opencl::DevicePlacementOf(**session);
  if (!placement) return {Outcome::kRunError, "not an opencl session"};
  if (!placement->cpu.empty()) return {Outcome::kFallback, placement->Summary()};
  if (placement->host > 0) {
    return {Outcome::kHost, absl::StrCat(placement->host, " of ", placement->nodes, " nodes")};
  }
  return {};
}

class OpenclConformance : public ::testing::TestWithParam<int> {};

TEST_P(OpenclConformance, ListedTestsPass) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  if (!fs::exists(kTestRoot)) GTEST_SKIP() << "no " << kTestRoot;
  const std::vector<std::string> listed = ListedTestNames();
  ASSERT_FALSE(listed.empty()) << "no names in " << kPassList;
  for (size_t i = static_cast<size_t>(GetParam()); i < listed.size(); i += kShards) {
    const std::string& name = listed[i];
    if (!fs::exists(fs::path(kTestRoot) / name)) {
      ADD_FAILURE() << name << " is listed in " << kPassList << " but missing from " << kTestRoot;
      continue;
    }
    const Result r = RunOne(name);
    EXPECT_EQ(r.outcome, Outcome::kPass)
        << name << ": " << OutcomeName(r.outcome) << ": " << r.message;
  }
}

INSTANTIATE_TEST_SUITE_P(Shard, OpenclConformance, ::testing::Range(0, kShards));

// Runs every test (not a ctest test of its own: ovfix_opencl_tests
// --gtest_filter='OpenclConformanceSummary.*' --gtest_also_run_disabled_tests).
TEST(OpenclConformanceSummary, DISABLED_All) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  if (!fs::exists(kTestRoot)) GTEST_SKIP() << "no " << kTestRoot;
  const char* filter = std::getenv("OVFIX_CONFORMANCE_FILTER");
  const std::vector<std::string> listed = ListedTestNames();
  const std::set<std::string> listed_set(listed.begin(), listed.end());
  std::map<Outcome, int> counts;
  std::vector<std::string> passing;
  int total = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& name : AllTestNames()) {
    if (filter != nullptr && !absl::StrContains(name, filter)) continue;
    ++total;
    const Result r = RunOne(name);
    ++counts[r.outcome];
    if (r.outcome == Outcome::kPass) {
      if (!IsNondeterministic(name)) passing.push_back(name);
    } else if (r.outcome != Outcome::kNotEligible || listed_set.contains(name)) {
      std::printf("FAIL %s [%s]%s: %s\n", name.c_str(), OutcomeName(r.outcome),
                  listed_set.contains(name) ? " (LISTED)" : "", r.message.substr(0, 300).c_str());
    }
  }
  std::printf("opencl conformance: %d of %d pass", counts[Outcome::kPass], total);
  for (const auto& [outcome, count] : counts) {
    if (outcome != Outcome::kPass) std::printf(", %d %s", count, OutcomeName(outcome));
  }
  std::printf(" (%zu listed; %.1f s)\n", listed.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (const char* path = std::getenv("OVFIX_WRITE_OPENCL_PASS_LIST"); path != nullptr && *path) {
    ASSERT_EQ(filter, nullptr) << "refusing to write a pass list from a filtered run";
    node_tests::WritePassList(path, listed, passing);
  }
}

}  // namespace
}  // namespace ovfix::exec
