// The session graph's tests (converter/session_graph.h): a model's optimized copy, checked
// against the graph as written on the same random inputs, and the op counts the tests read
// to see which fusions happened.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "converter/session_graph.h"
#include "exec/compare.h"
#include "exec/cpu/gemm.h"
#include "exec/executor.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "tests/support/run_both.h"

namespace ovfix::test_support {

// How often each op occurs, keyed "domain.Op" outside the default domain.
inline std::map<std::string, int> OpCounts(const Model& model) {
  std::map<std::string, int> counts;
  for (const Node* n : model.graph().nodes()) {
    ++counts[n->domain().empty() ? n->op_type() : n->domain() + "." + n->op_type()];
  }
  return counts;
}

// Selects the AVX2 GEMM kernel for the scope of a test whose counts are worked out for its
// tile (which convolutions the session graph keeps channels-last depends on the tile);
// selected() is false where the CPU has no AVX2.
class Avx2Kernel {
 public:
  Avx2Kernel() : before_(exec::CurrentGemmGeometry().name) {
    selected_ = exec::SelectGemmKernelForTesting("avx2");
  }
  ~Avx2Kernel() { exec::SelectGemmKernelForTesting(before_); }
  bool selected() const { return selected_; }

 private:
  std::string before_;
  bool selected_ = false;
};

// The op counts of the session graph a run of `proto` on random inputs makes with
// `precision` (a session that rounds to half leaves out the steps that hide values).
inline std::map<std::string, int> SessionOpCounts(onnx::ModelProto proto,
                                                  exec::Precision precision) {
  absl::StatusOr<std::unique_ptr<Model>> model = ModelFromProto(std::move(proto), "", "model");
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  absl::StatusOr<exec::TensorMap> inputs = exec::RandomInputs((*model)->graph());
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  if (!inputs.ok()) return {};
  exec::SessionOptions options;
  options.precision = precision;
  absl::StatusOr<converter::RunSession> run =
      converter::CreateRunSession(**model, *inputs, options, false);
  EXPECT_TRUE(run.ok()) << run.status();
  if (!run.ok() || run->graph == nullptr) return {};
  return OpCounts(*run->graph);
}

struct Optimized {
  std::unique_ptr<Model> as_written, optimized;  // both null when a step failed the test
};

// The optimized copy of `proto` for random inputs drawn from `ranges`, after expecting that
// it gives the outputs of the graph as written within `relative` of each output's range
// (0: bit for bit), both run by the CPU executor with 2 threads.
inline Optimized OptimizeExpectingSameOutputs(onnx::ModelProto proto, double relative,
                                              const exec::RandomRanges& ranges) {
  absl::StatusOr<std::unique_ptr<Model>> model = ModelFromProto(std::move(proto), "", "model");
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  exec::RandomInputOptions random;
  random.ranges = ranges;
  absl::StatusOr<exec::TensorMap> inputs = exec::RandomInputs((*model)->graph(), random);
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  if (!inputs.ok()) return {};
  absl::StatusOr<std::unique_ptr<Model>> optimized = converter::OptimizeForRun(**model, *inputs);
  EXPECT_TRUE(optimized.ok()) << optimized.status();
  if (!optimized.ok()) return {};
  exec::SessionOptions options;
  options.threads = 2;
  auto as_written = exec::CreateSession(**model, options);
  auto fused = exec::CreateSession(**optimized, options);
  EXPECT_TRUE(as_written.ok()) << as_written.status();
  EXPECT_TRUE(fused.ok()) << fused.status();
  if (!as_written.ok() || !fused.ok()) return {};
  const BothRuns runs = RunBoth(**as_written, **fused, *inputs);
  if (!runs.ok) return {};
  for (size_t i = 0; i < runs.actual.size(); ++i) {
    const exec::Comparison range = exec::CompareTensors(runs.actual[i], runs.expected[i]);
    const double scale = std::max(range.expected_max - range.expected_min, 1e-30);
    const exec::Comparison c =
        exec::CompareTensors(runs.actual[i], runs.expected[i], {0.0, relative * scale});
    EXPECT_TRUE(c.ok) << "output " << i << ": " << c.message;
  }
  return {*std::move(model), *std::move(optimized)};
}

}  // namespace ovfix::test_support
