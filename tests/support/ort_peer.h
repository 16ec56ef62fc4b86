// onnxruntime as the independent peer of the tests: ../shared/tools/ort/run.js under node,
// with onnxruntime-node from build/ort/node_modules (scripts/test.sh installs it there) or
// $OVFIX_ORT_MODULES. Where it is missing a peer test skips, unless $OVFIX_REQUIRE_ORT is
// set (scripts/test.sh sets it): then it fails, so that a CI run never passes by skipping.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"

namespace ovfix::testing_support {

// The node_modules folder holding onnxruntime-node, or "" when node or it is missing.
inline std::string OrtModules() {
  if (std::system("node --version > /dev/null 2>&1") != 0) return "";
  const char* env = std::getenv("OVFIX_ORT_MODULES");
  const std::string modules =
      env != nullptr
          ? env
          : (std::filesystem::path(OVFIX_BINARY).parent_path() / "ort/node_modules").string();
  return std::filesystem::exists(std::filesystem::path(modules) / "onnxruntime-node") ? modules
                                                                                      : "";
}

inline bool OrtRequired() { return std::getenv("OVFIX_REQUIRE_ORT") != nullptr; }

// Runs `model` with onnxruntime as written (no graph optimizations) on the input files, in
// the model's input order; returns its outputs, or none (with a test failure) when
// onnxruntime refuses the model or an input.
inline std::vector<Tensor> RunOrt(const std::string& modules, const std::string& model,
                                  const std::vector<std::string>& inputs,
                                  const std::filesystem::path& out) {
  std::string command = "NODE_PATH='" + modules + "' node '" OVFIX_SHARED_DIR +
                        std::string("/tools/ort/run.js' '") + model + "' '" + out.string() + "'";
  for (const std::string& in : inputs) absl::StrAppend(&command, " '", in, "'");
  absl::StrAppend(&command, " --opt-level disabled > /dev/null");
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<Tensor> outputs;
  for (int k = 0;; ++k) {
    const std::filesystem::path file = out / absl::StrCat("output_", k, ".pb");
    if (!std::filesystem::exists(file)) break;
    absl::StatusOr<Tensor> t = ReadTensorFile(file.string());
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) outputs.push_back(*std::move(t));
  }
  return outputs;
}

// Runs the jobs of `jobs_file` (tests/support/ort_batch.js) in one node process.
inline void RunOrtBatch(const std::string& modules, const std::string& jobs_file) {
  const std::string command = "NODE_PATH='" + modules + "' node '" OVFIX_SOURCE_DIR +
                              std::string("/tests/support/ort_batch.js' '") + jobs_file + "'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

// The input files as the model in `file` declares them: float inputs of a model that
// became float16 get float16 files in `dir` (onnxruntime takes only the declared type).
inline std::vector<std::string> AsDeclared(const std::string& file,
                                           const std::vector<std::string>& inputs,
                                           const std::filesystem::path& dir) {
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel(file);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return inputs;
  std::vector<std::string> out;
  size_t k = 0;
  for (const Value* v : (*model)->graph().inputs()) {
    if (v->is_initializer() || k >= inputs.size()) continue;
    absl::StatusOr<Tensor> t = ReadTensorFile(inputs[k]);
    if (t.ok() && IsFloatingPoint(t->type()) && IsFloatingPoint(v->elem_type()) &&
        t->type() != v->elem_type()) {
      const std::string typed = (dir / absl::StrCat("typed_input_", k, ".pb")).string();
      EXPECT_TRUE(WriteTensorFile(typed, ConvertTensor(*t, v->elem_type()), v->name()).ok());
      out.push_back(typed);
    } else {
      out.push_back(inputs[k]);
    }
    ++k;
  }
  return out;
}

}  // namespace ovfix::testing_support

// In a test body: the node_modules folder of onnxruntime-node into `var`, or skip (fail where
// $OVFIX_REQUIRE_ORT is set).
#define OVFIX_REQUIRE_ORT(var)                                                               \
  const std::string var = ::ovfix::testing_support::OrtModules();                            \
  if (var.empty()) {                                                                         \
    if (::ovfix::testing_support::OrtRequired()) {                                           \
      FAIL() << "OVFIX_REQUIRE_ORT is set, but node or onnxruntime-node is not installed "   \
                "(npm install --prefix build/ort --ignore-scripts onnxruntime-node@1.30.0)"; \
    }                                                                                        \
    GTEST_SKIP() << "node or onnxruntime-node not installed";                                \
  }
