// Every model of the ONNX node tests through `convert` for each built-in target, with their
// test inputs: a conversion either succeeds or refuses with a one-line InvalidArgument (an
// op the executor lacks, inputs it cannot make); it never fails with an internal error (a
// converted model onnx's checker rejects), and the converted model keeps its outputs within
// the conversion's tolerance (fp16 targets included: their islands are there for that).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "converter/pipeline.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

class NodeTestsSweep : public ::testing::TestWithParam<std::string> {};

TEST_P(NodeTestsSweep, ConvertsOrRefusesCleanly) {
  const fs::path root = fs::path(OVFIX_SHARED_DIR) / "onnx-node-tests";
  if (!fs::exists(root)) GTEST_SKIP() << "no " << root;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (fs::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  int converted = 0, refused = 0, changed = 0;
  for (const fs::path& dir : dirs) {
    absl::StatusOr<std::unique_ptr<Model>> model = LoadModel((dir / "model.onnx").string());
    if (!model.ok()) {
      ++refused;  // models the loader refuses are covered by the IR tests
      continue;
    }
    PipelineOptions options;
    options.convert.target = GetParam();
    int k = 0;
    for (const Value* v : (*model)->graph().inputs()) {
      if (v->is_initializer()) continue;
      const fs::path file = dir / "test_data_set_0" / absl::StrCat("input_", k++, ".pb");
      if (fs::exists(file)) options.convert.input_files[v->name()] = file.string();
    }
    absl::StatusOr<ConversionReport> report = ConvertModel(**model, options);
    if (!report.ok()) {
      EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument)
          << dir.filename() << ": " << report.status();
      EXPECT_EQ(std::string(report.status().message()).find('\n'), std::string::npos)
          << dir.filename() << ": not one line: " << report.status();
      ++refused;
      continue;
    }
    ++converted;
    if (!report->outputs_match) {
      ++changed;
      ADD_FAILURE() << dir.filename() << ": outputs changed beyond tolerance ("
                    << (report->end_to_end ? report->end_to_end->max_error : -1.0) << ")";
    }
  }
  std::printf("%s: %d converted (%d beyond tolerance), %d refused, of %zu\n", GetParam().c_str(),
              converted, changed, refused, dirs.size());
  // Most node tests run on the CPU executor: a sweep that converts few says something broke.
  EXPECT_GT(converted, static_cast<int>(dirs.size()) * 2 / 3);
}

INSTANTIATE_TEST_SUITE_P(Targets, NodeTestsSweep,
                         ::testing::Values("generic", "tensorrt", "openvino-gpu", "gpu-fp16",
                                           "ncnn-vulkan"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace ovfix::converter
