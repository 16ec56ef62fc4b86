// resnet18 latency on the OpenCL backend (PoCL's CPU device on machines without a GPU) beside
// the CPU executor, same model, same inputs, same run. The issue sets no target: the ratio is
// reported. Outputs of the two are compared once before timing, so a fast wrong kernel
// cannot pass for a fast one.
//
//   build/bench/ovfix_bench_opencl [--threads N] [--repeat N] [--precision fp32|fp16-storage]
//                                  [--models resnet18,mobilenet_v3_small]
//
// --threads sets the CPU executor's threads (default 0: one per core); PoCL uses every core
// by itself. The OpenCL device is $OVFIX_OPENCL_DEVICE, else the first GPU, else PoCL.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "bench/collecting_reporter.h"
#include "benchmark/benchmark.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"

namespace fs = std::filesystem;

namespace ovfix::bench {
namespace {

struct Loaded {
  std::string name;
  std::unique_ptr<Model> model;
  exec::TensorMap inputs;
  std::unique_ptr<exec::Session> cpu, opencl;
};

void Fail(const std::string& what) {
  std::fprintf(stderr, "bench: %s\n", what.c_str());
  std::exit(1);
}

void BM_Run(benchmark::State& state, exec::Session* session, const exec::TensorMap* inputs) {
  for (auto _ : state) {
    auto out = session->Run(*inputs);
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
  }
}

// Max abs difference relative to the reference's range.
double RangeError(const Tensor& actual, const Tensor& expected) {
  if (actual.type() != expected.type() || actual.dims() != expected.dims()) return 1e9;
  const exec::Comparison c = exec::CompareTensors(actual, expected, {0, 0});
  const double range = std::max(c.expected_max - c.expected_min, 1e-12);
  return c.max_abs_error / range;
}

Loaded Load(const std::string& name, const exec::SessionOptions& cpu_options,
            const exec::SessionOptions& opencl_options) {
  Loaded m;
  m.name = name;
  const std::string dir = std::string(OVFIX_SHARED_DIR) + "/models/" + name;
  auto model = LoadModel(dir + "/model.onnx");
  if (!model.ok()) Fail(std::string(model.status().message()));
  m.model = *std::move(model);
  int k = 0;
  for (const Value* v : m.model->graph().inputs()) {
    if (v->is_initializer()) continue;
    auto t = ReadTensorFile(dir + "/test_data_set_0/input_" + std::to_string(k++) + ".pb");
    if (!t.ok()) Fail(std::string(t.status().message()));
    m.inputs[v->name()] = *t;
  }
  auto cpu = exec::CreateSession(*m.model, cpu_options);
  if (!cpu.ok()) Fail(std::string(cpu.status().message()));
  m.cpu = *std::move(cpu);
  auto opencl = exec::CreateSession(*m.model, opencl_options);
  if (!opencl.ok()) Fail(std::string(opencl.status().message()));
  m.opencl = *std::move(opencl);
  // One run each: checks the outputs agree and keeps program builds and weight uploads (done
  // once per session) out of the timings.
  auto expected = m.cpu->Run(m.inputs);
  auto actual = m.opencl->Run(m.inputs);
  if (!expected.ok()) Fail(std::string(expected.status().message()));
  if (!actual.ok()) Fail(std::string(actual.status().message()));
  for (size_t i = 0; i < actual->size(); ++i) {
    const double error = RangeError((*actual)[i], (*expected)[i]);
    std::printf("%s output %zu: OpenCL vs CPU max error %.2e of the output range\n", name.c_str(),
                i, error);
    if (error > (opencl_options.precision == exec::Precision::kFp32 ? 1e-4 : 1e-2)) {
      Fail(name + ": the OpenCL output does not match the CPU executor's");
    }
  }
  for (const std::string& note : m.opencl->notes()) std::printf("  %s\n", note.c_str());
  return m;
}

}  // namespace
}  // namespace ovfix::bench

int main(int argc, char** argv) {
  using namespace ovfix;
  using namespace ovfix::bench;
  int threads = 0, repeat = 10;
  std::string precision = "fp32", models = "resnet18";
  std::vector<char*> rest = {argv[0]};  // what Google Benchmark gets
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--threads" && has_value) {
      threads = std::atoi(argv[++i]);
    } else if (arg == "--repeat" && has_value) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--precision" && has_value) {
      precision = argv[++i];
    } else if (arg == "--models" && has_value) {
      models = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  exec::SessionOptions cpu_options;
  cpu_options.threads = threads;
  auto parsed = exec::ParsePrecision(precision);
  if (!parsed.ok()) Fail(std::string(parsed.status().message()));
  cpu_options.precision = *parsed;
  exec::SessionOptions opencl_options = cpu_options;
  opencl_options.backend = "opencl";

  std::vector<Loaded> loaded;
  const std::vector<std::string> names = absl::StrSplit(models, ',', absl::SkipEmpty());
  for (const std::string& name : names) {
    if (!fs::exists(std::string(OVFIX_SHARED_DIR) + "/models/" + name + "/model.onnx")) {
      std::fprintf(stderr, "bench: model %s not found, skipped\n", name.c_str());
      continue;
    }
    loaded.push_back(Load(name, cpu_options, opencl_options));
  }
  for (Loaded& m : loaded) {
    benchmark::RegisterBenchmark(("cpu/" + m.name).c_str(), BM_Run, m.cpu.get(), &m.inputs)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(repeat);
    benchmark::RegisterBenchmark(("opencl/" + m.name).c_str(), BM_Run, m.opencl.get(), &m.inputs)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(repeat);
  }
  int bench_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&bench_argc, rest.data());
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  std::printf("\nOpenCL (%s, %s) vs the CPU executor (%s threads), latency per run\n",
              loaded.empty() ? "-" : loaded[0].opencl->notes()[0].c_str(), precision.c_str(),
              threads == 0 ? "all" : std::to_string(threads).c_str());
  std::printf("%-24s %12s %12s %10s\n", "model", "opencl (ms)", "cpu (ms)", "ratio");
  for (const Loaded& m : loaded) {
    const double cl = reporter.TimeOf("opencl/" + m.name + "/");
    const double cpu = reporter.TimeOf("cpu/" + m.name + "/");
    std::printf("%-24s %12.1f %12.1f %9.2fx\n", m.name.c_str(), cl, cpu, cl / cpu);
  }
  return 0;
}
