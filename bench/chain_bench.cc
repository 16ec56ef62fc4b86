// Conversion time against graph size: `ovfix convert --no-validate` for every built-in
// target of an Add chain where every Add broadcasts a rank-1 constant (one
// explicit_broadcast rewrite per node), at 20k and 200k nodes, and of one Sum with 10^6
// inputs; each beside a load+save of the same file in the same run. A driver and passes
// linear in the graph keep the ratio to load+save flat as the graph grows (200k nodes "in
// seconds").
//
//   build/bench/ovfix_bench_chain     (OVFIX_BENCH_REPEATS=3 sets the repeats;
//                                      OVFIX_BENCH_CHAIN=20000,200000 the chain lengths;
//                                      OVFIX_BENCH_SUM=1000000 the Sum's inputs;
//                                      OVFIX_BENCH_TARGETS=tensorrt,gpu-fp16 the targets)
//   build/bench/ovfix_bench_chain --write-models DIR   only writes the models (for
//                                      `ovfix convert` under perf)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/bench_util.h"
#include "converter/pipeline.h"
#include "ir/model_io.h"
#include "rules/embedded_files.h"

namespace fs = std::filesystem;

namespace ovfix::bench {
namespace {

std::unique_ptr<Model> NewModel() {
  auto m = std::make_unique<Model>();
  m->graph().set_name("bench");
  m->extras().set_ir_version(8);
  m->SetOpsetVersion("", 17);
  return m;
}

Value* FloatInput(Graph& g, const std::string& name, std::vector<int64_t> dims) {
  Value* x = g.CreateValue(name);
  x->set_elem_type(DataType::kFloat);
  x->set_shape(dims);
  g.AddInput(x);
  return x;
}

// y = (((x + c0) + c1) + ...) with x [2, 3] and each c [3]: every Add broadcasts.
void WriteChain(int64_t n, const std::string& path) {
  auto m = NewModel();
  Graph& g = m->graph();
  Value* v = FloatInput(g, "x", {2, 3});
  for (int64_t i = 0; i < n; ++i) {
    Value* c = g.AddInitializer(absl::StrCat("c", i),
                                Tensor::FromVector<float>(DataType::kFloat, {3}, {1, 2, 3}));
    v = g.AddNode("Add", {v, c}, {absl::StrCat("t", i)})->output(0);
  }
  v->set_elem_type(DataType::kFloat);
  v->set_shape(std::vector<int64_t>{2, 3});
  g.AddOutput(v);
  Check(SaveModel(*m, path).ok(), "save " + path);
}

// y = Sum(x, c0, c1, ...) with x [2, 3] and each c [2, 3]: ranks already equal, so the cost
// is that of looking at one very wide node.
void WriteSum(int64_t n, const std::string& path) {
  auto m = NewModel();
  Graph& g = m->graph();
  std::vector<Value*> inputs = {FloatInput(g, "x", {2, 3})};
  for (int64_t i = 0; i < n; ++i) {
    inputs.push_back(
        g.AddInitializer(absl::StrCat("c", i),
                         Tensor::FromVector<float>(DataType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6})));
  }
  Value* y = g.AddNode("Sum", inputs, {"y"})->output(0);
  y->set_elem_type(DataType::kFloat);
  y->set_shape(std::vector<int64_t>{2, 3});
  g.AddOutput(y);
  Check(SaveModel(*m, path).ok(), "save " + path);
}

void LoadSave(const std::string& in, const std::string& out) {
  auto model = LoadModel(in);
  Check(model.ok(), "load");
  Check(SaveModel(**model, out).ok(), "save");
}

void Convert(const std::string& in, const std::string& out, const std::string& target) {
  auto model = LoadModel(in);
  Check(model.ok(), "load");
  converter::PipelineOptions options;
  options.convert.target = target;
  options.convert.validate = false;
  auto report = converter::ConvertModel(**model, options);
  Check(report.ok(), absl::StrCat("convert ", in, " ",
                                  report.ok() ? "" : std::string(report.status().message())));
  Check(SaveModel(**model, out).ok(), "save");
}

std::vector<std::string> List(const char* env, const std::string& fallback) {
  const char* text = std::getenv(env);
  return absl::StrSplit(text != nullptr ? text : fallback.c_str(), ',', absl::SkipEmpty());
}

std::vector<int64_t> Sizes(const char* env, const std::string& fallback) {
  std::vector<int64_t> out;
  for (const std::string& part : List(env, fallback)) {
    int64_t n = 0;
    if (absl::SimpleAtoi(part, &n) && n > 0) out.push_back(n);
  }
  return out;
}

}  // namespace
}  // namespace ovfix::bench

int main(int argc, char** argv) {
  using namespace ovfix::bench;
  const char* repeats_env = std::getenv("OVFIX_BENCH_REPEATS");
  const int repeats = repeats_env != nullptr ? std::max(1, std::atoi(repeats_env)) : 3;
  const bool write_only = argc == 3 && std::string(argv[1]) == "--write-models";
  const fs::path tmp =
      write_only ? fs::path(argv[2])
                 : fs::temp_directory_path() / ("ovfix_bench_chain_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::vector<std::pair<std::string, std::string>> models;  // label, file
  for (int64_t n : Sizes("OVFIX_BENCH_CHAIN", "20000,200000")) {
    models.emplace_back(absl::StrCat("Add chain of ", n),
                        (tmp / absl::StrCat("chain_", n, ".onnx")).string());
    WriteChain(n, models.back().second);
  }
  for (int64_t n : Sizes("OVFIX_BENCH_SUM", "1000000")) {
    models.emplace_back(absl::StrCat("Sum of ", n, " inputs"),
                        (tmp / absl::StrCat("sum_", n, ".onnx")).string());
    WriteSum(n, models.back().second);
  }
  if (write_only) {
    for (const auto& [label, file] : models) std::printf("%s: %s\n", label.c_str(), file.c_str());
    return 0;
  }
  // Every built-in target unless told (a new target file is measured without a change here).
  const std::vector<std::string> targets =
      List("OVFIX_BENCH_TARGETS", absl::StrJoin(ovfix::rules::BuiltinTargetNames(), ","));
  const std::string out = (tmp / "out.onnx").string();
  std::vector<Row> rows;
  for (const auto& [label, in] : models) {
    std::printf("%s: measuring (%d rounds) ...\n", label.c_str(), repeats);
    std::fflush(stdout);
    std::vector<std::function<void()>> measures = {[&] { LoadSave(in, out); }};
    for (const std::string& target : targets) {
      measures.push_back([&, target] { Convert(in, out, target); });
    }
    const std::vector<double> ms = InterleavedMedianMs(repeats, measures);
    std::printf("  load+save %.1f ms\n", ms[0]);
    for (size_t t = 0; t < targets.size(); ++t) {
      std::printf("  convert --target %s --no-validate %.1f ms\n", targets[t].c_str(), ms[t + 1]);
      // A linear driver costs a bounded multiple of reading and writing the graph.
      rows.push_back({absl::StrCat(label, ", ", targets[t], ": convert vs load+save (ms)"),
                      ms[t + 1], ms[0], "", 30.0});
    }
  }
  PrintRatios("convert --no-validate, vs load+save of the same file", rows);
  fs::remove_all(tmp);
  return 0;
}
