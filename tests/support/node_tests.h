// Reading the ONNX backend node tests (OVFIX_SHARED_DIR/onnx-node-tests): the test names, a
// pass list (and writing one), each test's data sets, and its tensor files. Shared by the cpu
// session's conformance test and the OpenCL backend's sweep.
#pragma once

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"

namespace ovfix::node_tests {

// The names of the directories under `root` that hold a model.onnx, sorted.
inline std::vector<std::string> TestNames(const std::string& root) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(root, error)) {
    if (std::filesystem::exists(entry.path() / "model.onnx")) {
      names.push_back(entry.path().filename());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The names in a pass list: one a line; blank lines and '#' comments skipped.
inline std::vector<std::string> ReadNameList(const std::string& path) {
  std::vector<std::string> names;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') names.push_back(line);
  }
  return names;
}

// Tests whose expected outputs come from numpy's random generator: a pass would be luck, so
// they never enter a pass list.
inline bool IsNondeterministic(const std::string& name) {
  return absl::StrContains(name, "bernoulli") || (absl::StartsWith(name, "test_training_dropout") &&
                                                  !absl::StrContains(name, "zero_ratio"));
}

// A test's test_data_set_* directories, in order.
inline std::vector<std::filesystem::path> DataSets(const std::filesystem::path& test_dir) {
  std::vector<std::filesystem::path> data_sets;
  for (const auto& entry : std::filesystem::directory_iterator(test_dir)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_")) {
      data_sets.push_back(entry.path());
    }
  }
  std::sort(data_sets.begin(), data_sets.end());
  return data_sets;
}

// A tensor file of a value declared bfloat16 or not: onnx 1.12's generators store bfloat16
// data as uint16 (same bits, other type).
inline absl::StatusOr<Tensor> ReadTensor(const std::string& path, bool declared_bfloat16) {
  absl::StatusOr<Tensor> t = ReadTensorFile(path);
  if (t.ok() && declared_bfloat16 && t->type() == DataType::kUint16) {
    return Tensor(DataType::kBfloat16, t->dims(), t->buffer());
  }
  return t;
}

// What running a node test's data sets found: nothing wrong (kNone), a file that does not
// read, a run that fails, or an output that differs; `message` says which and where.
struct DataSetProblem {
  enum Kind { kNone, kLoad, kRun, kMismatch } kind = kNone;
  std::string message;
};

// Runs each data set of the node test in `dir` on one executor and compares its outputs with
// the set's output_K.pb: input_K.pb feeds the K-th graph input that is not an initializer (a
// missing one is an optional input the test leaves out). The executor's value type V comes
// in through `read(path, const Value&) -> StatusOr<V>`, `run(std::map<std::string, V>) ->
// StatusOr<std::vector<V>>` and `differ(actual, expected) -> ""` or what differs.
template <typename V, typename Read, typename Run, typename Differ>
DataSetProblem RunDataSets(const std::filesystem::path& dir, const Graph& graph, Read read, Run run,
                           Differ differ) {
  std::vector<const Value*> inputs;
  for (const Value* v : graph.inputs()) {
    if (!v->is_initializer()) inputs.push_back(v);
  }
  for (const std::filesystem::path& data : DataSets(dir)) {
    const std::string set = data.filename().string();
    std::map<std::string, V> feeds;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const std::filesystem::path file = data / absl::StrCat("input_", k, ".pb");
      if (!std::filesystem::exists(file)) continue;
      absl::StatusOr<V> v = read(file.string(), *inputs[k]);
      if (!v.ok())
        return {DataSetProblem::kLoad, absl::StrCat(file.string(), ": ", v.status().message())};
      feeds[inputs[k]->name()] = *std::move(v);
    }
    absl::StatusOr<std::vector<V>> out = run(feeds);
    if (!out.ok()) return {DataSetProblem::kRun, absl::StrCat(set, ": ", out.status().message())};
    for (size_t k = 0; k < graph.outputs().size(); ++k) {
      const std::filesystem::path file = data / absl::StrCat("output_", k, ".pb");
      absl::StatusOr<V> expected = read(file.string(), *graph.outputs()[k]);
      if (!expected.ok()) {
        return {DataSetProblem::kLoad,
                absl::StrCat(file.string(), ": ", expected.status().message())};
      }
      if (k >= out->size()) return {DataSetProblem::kMismatch, "too few outputs"};
      const std::string diff = differ((*out)[k], *expected);
      if (!diff.empty()) {
        return {DataSetProblem::kMismatch,
                absl::StrCat(set, " output ", k, " '", graph.outputs()[k]->name(), "': ", diff)};
      }
    }
  }
  return {};
}

// Writes `passing` to the pass list at `path`, one name a line. The list only grows: a listed
// test that fails now is a regression to fix, not a line to drop, so that fails the test
// and writes nothing.
inline void WritePassList(const char* path, const std::vector<std::string>& listed,
                          const std::vector<std::string>& passing) {
  const std::set<std::string> now(passing.begin(), passing.end());
  std::vector<std::string> dropped;
  for (const std::string& name : listed) {
    if (!now.contains(name)) dropped.push_back(name);
  }
  ASSERT_TRUE(dropped.empty()) << "refusing to write " << path << ": " << dropped.size()
                               << " listed test(s) no longer pass: "
                               << absl::StrJoin(dropped, ", ");
  std::ofstream out(path);
  for (const std::string& name : passing) out << name << "\n";
  ASSERT_TRUE(out.good()) << "cannot write " << path;
  std::printf("wrote %zu names to %s\n", passing.size(), path);
}

}  // namespace ovfix::node_tests
