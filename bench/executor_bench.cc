// CPU executor latency against onnxruntime (the peer, run through ../shared/tools/ort/run.js
// in a child process with the same thread count) on resnet18, mobilenet_v3_small and
// conv3d_991, in the same run. Target: <= 3x onnxruntime's latency on resnet18 and
// mobilenet_v3_small.
//
//   npm install --prefix build/ort --ignore-scripts onnxruntime-node@1.30.0   (once)
//   build/bench/ovfix_bench_executor [--threads 2] [--repeat 20]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/collecting_reporter.h"
#include "bench/ort_peer.h"
#include "benchmark/benchmark.h"
#include "exec/executor.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"

namespace fs = std::filesystem;

namespace ovfix::bench {
namespace {

struct Loaded {
  std::string name;
  std::string dir;
  std::unique_ptr<Model> model;
  std::unique_ptr<exec::Session> session;
  exec::TensorMap inputs;
  std::vector<std::string> input_files;
};

std::vector<Loaded>* g_models = nullptr;

void BM_Ovfix(benchmark::State& state, Loaded* m) {
  for (auto _ : state) {
    auto out = m->session->Run(m->inputs);
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
  }
}

}  // namespace
}  // namespace ovfix::bench

int main(int argc, char** argv) {
  using namespace ovfix;
  using namespace ovfix::bench;
  const int threads = IntFlag(argc, argv, "--threads", 2);
  const int repeat = IntFlag(argc, argv, "--repeat", 20);
  std::vector<Loaded> models;
  for (const char* name : {"resnet18", "mobilenet_v3_small", "conv3d_991"}) {
    Loaded m;
    m.name = name;
    m.dir = std::string(OVFIX_SHARED_DIR) + "/models/" + name;
    auto model = LoadModel(m.dir + "/model.onnx");
    if (!model.ok()) {
      std::fprintf(stderr, "bench: %s\n", std::string(model.status().message()).c_str());
      return 1;
    }
    m.model = *std::move(model);
    int k = 0;
    for (const Value* v : m.model->graph().inputs()) {
      if (v->is_initializer()) continue;
      const std::string file = m.dir + "/test_data_set_0/input_" + std::to_string(k++) + ".pb";
      auto t = ReadTensorFile(file);
      if (!t.ok()) return 1;
      m.inputs[v->name()] = *t;
      m.input_files.push_back(file);
    }
    exec::SessionOptions options;
    options.threads = threads;
    auto session = exec::CreateSession(*m.model, options);
    if (!session.ok()) {
      std::fprintf(stderr, "bench: %s\n", std::string(session.status().message()).c_str());
      return 1;
    }
    m.session = *std::move(session);
    models.push_back(std::move(m));
  }
  for (auto& m : models) {
    benchmark::RegisterBenchmark(("ovfix_cpu/" + m.name).c_str(), BM_Ovfix, &m)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(repeat);
  }
  benchmark::Initialize(&argc, argv);
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  const std::string ort_modules = OrtModules();
  if (ort_modules.empty()) return 0;
  std::vector<Row> rows;
  for (auto& m : models) {
    const double ours = reporter.TimeOf("ovfix_cpu/" + m.name + "/");
    const double peer =
        RunOrt(ort_modules, m.dir + "/model.onnx", m.input_files, threads, repeat).median_ms;
    const double target = m.name == "conv3d_991" ? 99 : 3.0;  // conv3d: reported, no target
    rows.push_back({m.name + " latency (ms, " + std::to_string(threads) + " threads)", ours, peer,
                    "", target});
  }
  PrintRatios("CPU executor vs onnxruntime (same run, same threads)", rows);
  return 0;
}
