// Every model of the ONNX node tests through `convert` for each built-in target, with their
// test inputs: a conversion either succeeds or refuses with a one-line InvalidArgument (an
// op the executor lacks, inputs it cannot make); it never fails with an internal error (a
// converted model onnx's checker rejects), and the converted model keeps its outputs within
// the conversion's tolerance (fp16 targets included: their islands are there for that;
// targets whose backend ignores islands are validated with every tensor in fp16, and a test
// fp16 cannot compute is counted, not failed: the conversion says so and writes nothing).
// Beyond what the conversion reports, the file it wrote is run as `ovfix run` runs it and
// compared with the test's own output_K.pb (the ONNX generators' results, not ovfix's), for
// every test the executor reproduces (tests/conformance_pass.txt): within the conversion's
// tolerance of the range, on top of the conformance test's own 1e-3. The same written files
// run in onnxruntime too (all in one node process, tests/support/ort_batch.js): wherever
// onnxruntime reproduces output_K.pb from the original model, the written one loads there and
// reproduces it within the same tolerance (skipped without onnxruntime, unless
// $OVFIX_REQUIRE_ORT is set: tests/support/ort_peer.h).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "converter/model_run.h"
#include "converter/pipeline.h"
#include "exec/compare.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "tests/support/ort_peer.h"
#include "tests/support/target_test_name.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

class NodeTestsSweep : public ::testing::TestWithParam<std::string> {};

std::set<std::string> ReproducedTests() {
  std::set<std::string> names;
  std::ifstream in(OVFIX_SOURCE_DIR "/tests/conformance_pass.txt");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') names.insert(line);
  }
  return names;
}

// The largest error of the written model's outputs against `dir`'s output_K.pb, relative to
// each reference's range; nullopt when an output is not a tensor file (sequences, optionals).
std::optional<double> ErrorAgainstReference(const Model& converted, const fs::path& dir,
                                            const std::map<std::string, std::string>& inputs) {
  absl::StatusOr<std::unique_ptr<Model>> written = SerializedCopy(converted);
  EXPECT_TRUE(written.ok()) << dir.filename() << ": " << written.status();
  if (!written.ok()) return INFINITY;
  const Graph& g = (*written)->graph();
  for (const Value* out : g.outputs()) {
    if (!out->is_tensor()) return std::nullopt;
  }
  exec::TensorMap feeds;
  for (const auto& [name, file] : inputs) {
    absl::StatusOr<Tensor> t = ReadTensorFile(file);
    if (!t.ok()) return std::nullopt;
    feeds.emplace(name, *std::move(t));
  }
  absl::StatusOr<std::vector<Tensor>> outputs =
      RunAsTyped(**written, MatchInputTypes(g, feeds), exec::kValidationSeed);
  EXPECT_TRUE(outputs.ok()) << dir.filename()
                            << ": the written model does not run: " << outputs.status();
  if (!outputs.ok()) return INFINITY;
  double worst = 0;
  for (size_t k = 0; k < outputs->size(); ++k) {
    absl::StatusOr<Tensor> expected =
        ReadTensorFile((dir / "test_data_set_0" / absl::StrCat("output_", k, ".pb")).string());
    if (!expected.ok()) return std::nullopt;
    Tensor actual = (*outputs)[k];
    if (actual.type() == DataType::kFloat16) actual = ConvertTensor(actual, DataType::kFloat);
    // Relative to the range, and never to less than 1e-3 of the largest magnitude: what
    // the conformance test allows an independent implementation (a flat output, all
    // 0.999999..1, is not compared against a range of 1e-6).
    worst = std::max(worst, exec::RelativeError(actual, *expected, 1e-3));
  }
  return worst;
}

// onnxruntime's CPU provider has no float16 kernel for some ops (and a cast it inserts for
// them is itself rejected): a written float16 model it cannot run for that reason is a limit
// of the peer, counted, not a failure of the file.
bool OrtLacksKernel(const std::string& error) {
  return absl::StrContains(error, "InsertedPrecisionFreeCast") ||
         absl::StrContains(error, "MLFloat16 data type is not supported") ||
         absl::StrContains(error, "Could not find an implementation");
}

// Written models onnxruntime refuses because of a bug of ovfix's not fixed yet ("TARGET TEST"):
// the fp16 conversion of a Loop body leaves an Add of float and float16 (onnxruntime:
// "Type parameter (T) of Optype (Add) bound to different types"; ovfix's executor runs it).
const std::set<std::string> kOrtKnownFailures = {
    "gpu-fp16 test_range_float_type_positive_delta_expanded",
    "ncnn-vulkan test_range_float_type_positive_delta_expanded",
};

// A written model for onnxruntime to run, beside the original.
struct OrtCheck {
  fs::path test;  // the node test's folder
  fs::path out;   // onnxruntime's outputs: out/original, out/converted
  double tolerance = 0;
};

// The largest error of the output files in `out` against `test`'s output_K.pb (relative to
// the range, at least 1e-3 of the largest magnitude), or nullopt when onnxruntime gave none.
std::optional<double> OrtError(const fs::path& out, const fs::path& test) {
  if (fs::exists(out / "error.txt") || !fs::exists(out / "output_0.pb")) return std::nullopt;
  double worst = 0;
  for (int k = 0;; ++k) {
    const fs::path expected_file = test / "test_data_set_0" / absl::StrCat("output_", k, ".pb");
    if (!fs::exists(expected_file)) break;
    absl::StatusOr<Tensor> expected = ReadTensorFile(expected_file.string());
    absl::StatusOr<Tensor> actual =
        ReadTensorFile((out / absl::StrCat("output_", k, ".pb")).string());
    if (!expected.ok() || !actual.ok()) return std::nullopt;
    Tensor a = *actual;
    if (a.type() != expected->type() && IsFloatingPoint(a.type()))
      a = ConvertTensor(a, expected->type());
    if (a.dims() != expected->dims()) return INFINITY;
    worst = std::max(worst, exec::RelativeError(a, *expected, 1e-3));
  }
  return worst;
}

// Runs every check's original and written model in onnxruntime; counts those onnxruntime
// reproduces from the original, and expects the written ones to load and match there.
void CheckInOnnxruntime(const std::vector<OrtCheck>& checks, const fs::path& work,
                        const std::string& target) {
  const std::string modules = testing_support::OrtModules();
  if (modules.empty()) {
    if (testing_support::OrtRequired()) ADD_FAILURE() << "OVFIX_REQUIRE_ORT: no onnxruntime-node";
    return;
  }
  const fs::path jobs = work / "jobs.txt";
  {
    std::ofstream out(jobs);
    for (const OrtCheck& c : checks) {
      std::vector<std::string> inputs;
      for (int k = 0;; ++k) {
        const fs::path in = c.test / "test_data_set_0" / absl::StrCat("input_", k, ".pb");
        if (!fs::exists(in)) break;
        inputs.push_back(in.string());
      }
      const std::string converted = (c.out / "converted.onnx").string();
      out << (c.out / "original").string() << '\t' << (c.test / "model.onnx").string();
      for (const std::string& in : inputs) out << '\t' << in;
      out << '\n' << (c.out / "converted").string() << '\t' << converted;
      for (const std::string& in : testing_support::AsDeclared(converted, inputs, c.out)) {
        out << '\t' << in;
      }
      out << '\n';
    }
  }
  testing_support::RunOrtBatch(modules, jobs.string());
  int reproduced = 0, matched = 0;
  std::vector<std::string> peer_limits, known;
  for (const OrtCheck& c : checks) {
    const std::optional<double> original = OrtError(c.out / "original", c.test);
    if (!original || *original > 1e-3) continue;  // onnxruntime's own answer differs
    ++reproduced;
    const std::optional<double> converted = OrtError(c.out / "converted", c.test);
    std::string why;
    if (std::ifstream error(c.out / "converted" / "error.txt"); error) {
      std::getline(error, why);
    }
    const std::string name = c.test.filename().string();
    if (!converted && OrtLacksKernel(why)) {
      peer_limits.push_back(name);
    } else if (kOrtKnownFailures.contains(absl::StrCat(target, " ", name))) {
      known.push_back(name);
      EXPECT_FALSE(converted && *converted <= c.tolerance + 1e-3)
          << name << " now matches in onnxruntime: take it off kOrtKnownFailures";
    } else if (!converted) {
      ADD_FAILURE() << c.test.filename() << ": onnxruntime does not run the written model: " << why;
    } else if (*converted > c.tolerance + 1e-3) {
      ADD_FAILURE() << c.test.filename() << ": in onnxruntime the written model is " << *converted
                    << " of the range from output_K.pb (tolerance " << c.tolerance << ")";
    } else {
      ++matched;
    }
  }
  std::printf(
      "%s: onnxruntime reproduces %d of %zu written models' tests; %d match it written, %zu "
      "need a float16 kernel onnxruntime's CPU lacks (%s), %zu known failures (%s)\n",
      target.c_str(), reproduced, checks.size(), matched, peer_limits.size(),
      absl::StrJoin(peer_limits, ", ").c_str(), known.size(), absl::StrJoin(known, ", ").c_str());
}

TEST_P(NodeTestsSweep, ConvertsOrRefusesCleanly) {
  const fs::path root = fs::path(OVFIX_SHARED_DIR) / "onnx-node-tests";
  if (!fs::exists(root)) GTEST_SKIP() << "no " << root;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (fs::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  const std::set<std::string> reproduced = ReproducedTests();
  int converted = 0, refused = 0, changed = 0, checked = 0, only_fp32 = 0, beyond_fp16 = 0;
  const fs::path work =
      fs::temp_directory_path() / absl::StrCat("ovfix_node_sweep_", ::getpid(), "_", GetParam());
  std::vector<OrtCheck> ort_checks;
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
    if (report->repair && report->repair->only_fp32) {
      ++only_fp32;  // fp16 cannot compute it: said in one line, nothing written (exit 1)
      continue;
    }
    if (!report->outputs_match && report->islands_ignored) {
      ++beyond_fp16;  // the backend runs every tensor in fp16, and fp16 cannot compute it
      continue;
    }
    ++converted;
    if (!report->outputs_match) {
      ++changed;
      ADD_FAILURE() << dir.filename() << ": outputs changed beyond tolerance ("
                    << (report->end_to_end ? report->end_to_end->max_error : -1.0) << ")";
    }
    if (!reproduced.contains(dir.filename().string())) continue;
    const std::optional<double> error =
        ErrorAgainstReference(**model, dir, options.convert.input_files);
    if (!error) continue;
    ++checked;
    const fs::path out = work / dir.filename();
    fs::create_directories(out);
    if (SaveModel(**model, (out / "converted.onnx").string()).ok()) {
      ort_checks.push_back({dir, out, report->end_to_end_tolerance});
    }
    EXPECT_LE(*error, report->end_to_end_tolerance + 1e-3)
        << dir.filename() << ": the written model is " << *error
        << " of the range from output_K.pb (tolerance " << report->end_to_end_tolerance << ")";
  }
  std::printf(
      "%s: %d converted (%d beyond tolerance, %d checked against output_K.pb), "
      "%d refused, %d only in fp32, %d not computable with every tensor in fp16, of %zu\n",
      GetParam().c_str(), converted, changed, checked, refused, only_fp32, beyond_fp16,
      dirs.size());
  // Most node tests run on the CPU executor: a sweep that converts few says something broke.
  EXPECT_GT(converted, static_cast<int>(dirs.size()) * 2 / 3);
  CheckInOnnxruntime(ort_checks, work, GetParam());
  fs::remove_all(work);
}

INSTANTIATE_TEST_SUITE_P(Targets, NodeTestsSweep,
                         ::testing::Values("generic", "tensorrt", "openvino-gpu", "gpu-fp16",
                                           "ncnn-vulkan"),
                         test_support::TargetTestName);

}  // namespace
}  // namespace ovfix::converter
