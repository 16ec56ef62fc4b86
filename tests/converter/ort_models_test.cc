// The shared real models (../shared/models), converted for each target on their test inputs,
// run in onnxruntime (graph as written, all in one node process: tests/support/ort_batch.js):
// every written model loads there and gives what onnxruntime gives for the original, within
// the tolerance the conversion itself held (fp16 targets: their fp16 error). A float16 model
// that onnxruntime's CPU cannot run for want of a float16 kernel is counted and named, not
// failed: that is a limit of the peer, not of the file.
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "tests/support/ort_peer.h"
#include "tests/support/target_test_name.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

struct Converted {
  std::string name;
  fs::path out;  // converted.onnx, original/ and converted/ (onnxruntime's outputs)
  double tolerance = 0;
};

class OrtModels : public ::testing::TestWithParam<std::string> {};

TEST_P(OrtModels, WrittenModelsMatchOnnxruntime) {
  const fs::path root = fs::path(OVFIX_SHARED_DIR) / "models";
  if (!fs::exists(root)) GTEST_SKIP() << "no " << root;
  OVFIX_REQUIRE_ORT(modules);
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (fs::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  const fs::path work =
      fs::temp_directory_path() / absl::StrCat("ovfix_ort_models_", ::getpid(), "_", GetParam());
  std::vector<Converted> converted;
  fs::create_directories(work);
  std::ofstream jobs(work / "jobs.txt");
  for (const fs::path& dir : dirs) {
    auto model = LoadModel((dir / "model.onnx").string());
    ASSERT_TRUE(model.ok()) << model.status();
    PipelineOptions options;
    options.convert.target = GetParam();
    if (GetParam() == "openvino-gpu") options.convert.batch = 1;
    std::vector<std::string> inputs;
    for (const Value* v : (*model)->graph().inputs()) {
      if (v->is_initializer()) continue;
      const fs::path file = dir / "test_data_set_0" / absl::StrCat("input_", inputs.size(), ".pb");
      inputs.push_back(file.string());
      options.convert.input_files[v->name()] = file.string();
    }
    auto report = ConvertModel(**model, options);
    ASSERT_TRUE(report.ok()) << dir.filename() << ": " << report.status();
    // Where the backend ignores fp32 islands, the conversion is judged with every tensor in
    // fp16, which can miss the criteria without any overflow (deep_residual: rounding over 638
    // blocks, 0.021 of the range): reported, and the file still computes in fp32 below.
    EXPECT_TRUE(report->outputs_match || report->islands_ignored) << dir.filename() << "\n"
                                                                  << SummaryTable(*report);
    const fs::path out = work / dir.filename();
    fs::create_directories(out);
    const std::string file = (out / "converted.onnx").string();
    ASSERT_TRUE(SaveModel(**model, file).ok()) << dir.filename();
    // The error measured with every tensor in fp16 says nothing of the fp32 file's.
    const double tolerance = report->end_to_end && !report->islands_ignored
                                 ? std::max(report->end_to_end->max_error, 1e-5)
                                 : 1e-5;
    converted.push_back({dir.filename().string(), out, tolerance});
    jobs << (out / "original").string() << '\t' << (dir / "model.onnx").string();
    for (const std::string& in : inputs) jobs << '\t' << in;
    jobs << '\n' << (out / "converted").string() << '\t' << file;
    for (const std::string& in : testing_support::AsDeclared(file, inputs, out)) jobs << '\t' << in;
    jobs << '\n';
  }
  jobs.close();
  testing_support::RunOrtBatch(modules, (work / "jobs.txt").string());

  int matched = 0;
  std::vector<std::string> no_kernel;
  for (const Converted& c : converted) {
    std::string error;
    if (std::ifstream e(c.out / "converted" / "error.txt"); e) std::getline(e, error);
    if (absl::StrContains(error, "Could not find an implementation")) {
      no_kernel.push_back(c.name);
      continue;
    }
    EXPECT_EQ(error, "") << c.name << ": onnxruntime refuses the written model";
    if (!error.empty()) continue;
    bool all = true;
    for (int k = 0; fs::exists(c.out / "original" / absl::StrCat("output_", k, ".pb")); ++k) {
      const std::string name = absl::StrCat("output_", k, ".pb");
      absl::StatusOr<Tensor> expected = ReadTensorFile((c.out / "original" / name).string());
      absl::StatusOr<Tensor> actual = ReadTensorFile((c.out / "converted" / name).string());
      ASSERT_TRUE(expected.ok() && actual.ok()) << c.name << ": " << name;
      Tensor a = *actual;
      if (a.type() != expected->type()) a = ConvertTensor(a, expected->type());
      EXPECT_EQ(a.dims(), expected->dims()) << c.name << ": " << name;
      if (a.dims() != expected->dims()) continue;
      // Twice the conversion's own end-to-end error: onnxruntime rounds its float16 arithmetic
      // its own way; ovfix's fp16 storage is not bit-exact with it.
      const double error_k = exec::RelativeError(a, *expected);
      const bool ok = error_k <= 2 * c.tolerance + 1e-5;
      all = all && ok;
      EXPECT_TRUE(ok) << c.name << ": " << name << " differs by " << error_k
                      << " of the range (the conversion measured " << c.tolerance << ")";
    }
    matched += all ? 1 : 0;
  }
  std::printf("%s: %d of %zu written models match onnxruntime; no float16 CPU kernel: %s\n",
              GetParam().c_str(), matched, converted.size(),
              no_kernel.empty() ? "none" : absl::StrJoin(no_kernel, ", ").c_str());
  fs::remove_all(work);
}

INSTANTIATE_TEST_SUITE_P(Targets, OrtModels,
                         ::testing::Values("tensorrt", "openvino-gpu", "gpu-fp16"),
                         test_support::TargetTestName);

}  // namespace
}  // namespace ovfix::converter
