// Load+save of resnet18 and of a generated model over 1 GB whose weights are external data,
// beside the peer: a plain protobuf parse + serialize of the same file (for the external
// model, plus reading and writing its data file, the least any tool must do).
// Targets: time <= 1.3x the peer; peak memory <= 2.5x the file (resnet18) and <= 1.5x the
// weights (external data: mapped, not copied).
//
//   build/bench/ovfix_bench_load_save            (OVFIX_BENCH_BIG_MB=1100 sets the big model)
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

#include "bench/bench_util.h"
#include "bench/collecting_reporter.h"
#include "benchmark/benchmark.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "ir/model_io.h"
#include "onnx/onnx_pb.h"

namespace fs = std::filesystem;

namespace ovfix::bench {
namespace {

fs::path g_dir;
std::string g_resnet;
std::string g_big;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "bench: %s failed\n", what);
    std::exit(1);
  }
}

// The peer: protobuf parse of the file, serialize to another file.
void ProtobufRoundTrip(const std::string& in, const std::string& out) {
  onnx::ModelProto proto;
  const int fd = ::open(in.c_str(), O_RDONLY);
  {
    google::protobuf::io::FileInputStream stream(fd);
    Check(proto.ParseFromZeroCopyStream(&stream), "parse");
  }
  ::close(fd);
  const int ofd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Check(proto.SerializeToFileDescriptor(ofd), "serialize");
  ::close(ofd);
}

// The peer for external data: protobuf round trip of the model file plus reading the data
// file into memory and writing it out again.
void ProtobufRoundTripWithData(const std::string& in, const std::string& out) {
  ProtobufRoundTrip(in, out);
  std::string data;
  {
    std::ifstream f(in + ".data", std::ios::binary);
    data.resize(fs::file_size(in + ".data"));
    f.read(data.data(), static_cast<std::streamsize>(data.size()));
    Check(static_cast<bool>(f), "read data");
  }
  std::ofstream o(out + ".data", std::ios::binary);
  o.write(data.data(), static_cast<std::streamsize>(data.size()));
  Check(static_cast<bool>(o), "write data");
}

void OvfixLoadSave(const std::string& in, const std::string& out, bool external) {
  auto model = LoadModel(in);
  Check(model.ok(), "ovfix load");
  SaveOptions options;
  if (external) options.external_data = ExternalDataMode::kAlways;
  Check(SaveModel(**model, out, options).ok(), "ovfix save");
}

// A model of `megabytes` MB of float weights in 64 MB tensors, saved with external data.
void GenerateBigModel(const std::string& path, int megabytes) {
  Model model;
  model.extras().set_ir_version(8);
  model.SetOpsetVersion("", 17);
  Graph& g = model.graph();
  g.set_name("big");
  Value* x = g.CreateValue("x");
  x->set_elem_type(DataType::kFloat);
  x->set_shape(std::vector<int64_t>{16 << 20});
  g.AddInput(x);
  Value* acc = x;
  const int tensors = (megabytes + 63) / 64;
  for (int i = 0; i < tensors; ++i) {
    Tensor w(DataType::kFloat, {16 << 20});
    float* p = w.data<float>();
    for (int64_t k = 0; k < w.numel(); ++k) p[k] = static_cast<float>((k + i) % 1000) * 1e-3f;
    Value* wv = g.AddInitializer("w" + std::to_string(i), std::move(w));
    Node* add = g.AddNode("Add", {acc, wv}, {"sum" + std::to_string(i)});
    acc = add->output(0);
  }
  g.AddOutput(acc);
  SaveOptions options;
  options.external_data = ExternalDataMode::kAlways;
  Check(SaveModel(model, path, options).ok(), "generate big model");
}

void BM_ProtobufResnet18(benchmark::State& state) {
  for (auto _ : state) ProtobufRoundTrip(g_resnet, (g_dir / "pb_resnet.onnx").string());
}
void BM_OvfixResnet18(benchmark::State& state) {
  for (auto _ : state) OvfixLoadSave(g_resnet, (g_dir / "ovfix_resnet.onnx").string(), false);
}
void BM_ProtobufExternal(benchmark::State& state) {
  for (auto _ : state) ProtobufRoundTripWithData(g_big, (g_dir / "pb_big.onnx").string());
}
void BM_OvfixExternal(benchmark::State& state) {
  for (auto _ : state) OvfixLoadSave(g_big, (g_dir / "ovfix_big.onnx").string(), true);
}

}  // namespace
}  // namespace ovfix::bench

int main(int argc, char** argv) {
  using namespace ovfix::bench;
  // Child mode for memory: one operation, then exit.
  if (argc == 5 && std::strcmp(argv[1], "--measure") == 0) {
    const std::string mode = argv[2], in = argv[3], out = argv[4];
    if (mode == "protobuf") ProtobufRoundTrip(in, out);
    if (mode == "protobuf-data") ProtobufRoundTripWithData(in, out);
    if (mode == "ovfix") OvfixLoadSave(in, out, false);
    if (mode == "ovfix-external") OvfixLoadSave(in, out, true);
    std::printf("peak_rss_bytes %lld\n", SelfPeakRss());
    return 0;
  }
  g_resnet = std::string(OVFIX_SHARED_DIR) + "/models/resnet18/model.onnx";
  if (!fs::exists(g_resnet)) {
    std::fprintf(stderr, "bench: %s not found\n", g_resnet.c_str());
    return 1;
  }
  g_dir = fs::temp_directory_path() / ("ovfix_bench_" + std::to_string(::getpid()));
  fs::create_directories(g_dir);
  const char* mb_env = std::getenv("OVFIX_BENCH_BIG_MB");
  const int megabytes = mb_env != nullptr ? std::atoi(mb_env) : 1100;
  g_big = (g_dir / "big.onnx").string();
  std::printf("generating a %d MB external-data model in %s ...\n", megabytes, g_dir.c_str());
  GenerateBigModel(g_big, megabytes);

  using Bench = void (*)(benchmark::State&);
  // resnet18 in memory for at least 2 s each; the large external-data model 3 times each.
  const std::pair<const char*, Bench> resnet18[] = {
      {"protobuf_roundtrip/resnet18", BM_ProtobufResnet18},
      {"ovfix_load_save/resnet18", BM_OvfixResnet18}};
  const std::pair<const char*, Bench> external[] = {
      {"protobuf_roundtrip_with_data/external", BM_ProtobufExternal},
      {"ovfix_load_save/external", BM_OvfixExternal}};
  for (const auto& [name, fn] : resnet18) {
    benchmark::RegisterBenchmark(name, fn)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->MinTime(2.0);
  }
  for (const auto& [name, fn] : external) {
    benchmark::RegisterBenchmark(name, fn)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(3);
  }
  benchmark::Initialize(&argc, argv);
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  const double resnet_bytes = static_cast<double>(fs::file_size(g_resnet));
  const double weight_bytes = static_cast<double>(fs::file_size(g_big + ".data"));
  const double mb = 1 << 20;
  const auto out = [&](const char* name) { return (g_dir / name).string(); };
  const double rss_pb = ChildPeakRss({"--measure", "protobuf", g_resnet, out("m1.onnx")}) / mb;
  const double rss_ov = ChildPeakRss({"--measure", "ovfix", g_resnet, out("m2.onnx")}) / mb;
  const double rss_pb_big =
      ChildPeakRss({"--measure", "protobuf-data", g_big, out("m3.onnx")}) / mb;
  const double rss_ov_big =
      ChildPeakRss({"--measure", "ovfix-external", g_big, out("m4.onnx")}) / mb;

  PrintRatios("load+save time, ovfix vs protobuf (same run)",
              {{"resnet18 (ms)", reporter.TimeOf("ovfix_load_save/resnet18"),
                reporter.TimeOf("protobuf_roundtrip/resnet18"), "", 1.3},
               {"external-data model (ms)", reporter.TimeOf("ovfix_load_save/external"),
                reporter.TimeOf("protobuf_roundtrip_with_data/external"), "", 1.3}});
  PrintRatios(
      "peak memory (MB) vs the data it holds (peer column: file / weights size)",
      {{"resnet18: ovfix vs file size", rss_ov, resnet_bytes / mb, "", 2.5},
       {"resnet18: protobuf vs file size", rss_pb, resnet_bytes / mb, "", 2.5},
       {"external: ovfix vs weights size", rss_ov_big, weight_bytes / mb, "", 1.5},
       {"external: protobuf+data vs weights size", rss_pb_big, weight_bytes / mb, "", 2.5}});
  fs::remove_all(g_dir);
  return 0;
}
