// Reading the ONNX backend node tests (OVFIX_SHARED_DIR/onnx-node-tests): the test names, a
// pass list (and writing one), each test's data sets, and its tensor files. Shared by the cpu
// session's conformance test and the OpenCL backend's sweep.
#pragma once

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
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
