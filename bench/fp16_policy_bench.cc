// How much of a model the gpu-fp16 conversion keeps in fp32, beside the policy of ModelOpt's
// AutoCast (fp32 for nodes whose outputs calibration saw above 512, and for what the spec
// requires; nothing structural), on every shared model with test data, calibrated on it.
// ovfix's conversion repairs to its tolerance (1e-2 of each output's range); the peer
// policy is measured as it comes. Target: ovfix keeps no larger fp32 fraction for the same
// accuracy (where the peer policy is within the tolerance too).
//
//   build/bench/ovfix_bench_fp16_policy [MODEL ...]
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "converter/pipeline.h"
#include "converter/report.h"
#include "ir/model_io.h"

namespace ovfix::bench {
namespace {

namespace fs = std::filesystem;

struct Result {
  bool ok = false;
  double error = 0;
  converter::FloatNodeCounts nodes;
};

Result Convert(const std::string& dir, bool peer_policy) {
  Result r;
  auto model = LoadModel(dir + "/model.onnx");
  if (!model.ok()) return r;
  converter::PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.calibration_data = {dir + "/test_data_set_0"};
  if (peer_policy) {
    options.convert.fp16_islands = rules::ConvertOptions::Fp16Islands::kMagnitude;
    options.convert.fp16_magnitude_threshold = 512;
    options.set_by_user = {"fp16_islands", "fp16_magnitude_threshold"};
    options.repair = false;
  }
  auto report = converter::ConvertModel(**model, options);
  if (!report.ok() || !report->end_to_end) {
    std::fprintf(stderr, "%s: %s\n", dir.c_str(),
                 report.ok() ? "not validated" : std::string(report.status().message()).c_str());
    return r;
  }
  r.ok = true;
  r.error = report->end_to_end->max_error;
  r.nodes = converter::CountFloatNodes(**model);
  return r;
}

}  // namespace
}  // namespace ovfix::bench

int main(int argc, char** argv) {
  using namespace ovfix::bench;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) names.push_back(argv[i]);
  if (names.empty()) {
    names = {"gfpgan_modconv",     "hand_softmax",  "resnet18",
             "mobilenet_v3_small", "deep_residual", "silero_vad",
             "ddff_squeeze",       "trt_broadcast", "conv3d_991"};
  }
  constexpr double kTolerance = 1e-2;
  std::printf("%-20s %28s %28s  %s\n", "model", "ovfix gpu-fp16 (repaired)",
              "fp32 where |out| > 512", "");
  std::printf("%-20s %12s %15s %12s %15s\n", "", "fp32 share", "error", "fp32 share", "error");
  int comparable = 0, met = 0;
  for (const std::string& name : names) {
    const std::string dir = std::string(OVFIX_SHARED_DIR) + "/models/" + name;
    if (!fs::exists(dir + "/test_data_set_0")) continue;
    const Result ours = Convert(dir, false);
    const Result peer = Convert(dir, true);
    if (!ours.ok || !peer.ok) continue;
    const bool same_accuracy = peer.error <= kTolerance;
    const bool ok = !same_accuracy || ours.nodes.Float32Share() <= peer.nodes.Float32Share();
    comparable += same_accuracy;
    met += same_accuracy && ok;
    std::printf("%-20s %5d/%-5d %4.0f%% %9.3g %5d/%-5d %4.0f%% %9.3g  %s\n", name.c_str(),
                ours.nodes.float32, ours.nodes.float16 + ours.nodes.float32,
                100 * ours.nodes.Float32Share(), ours.error, peer.nodes.float32,
                peer.nodes.float16 + peer.nodes.float32, 100 * peer.nodes.Float32Share(),
                peer.error,
                !same_accuracy ? "peer policy beyond tolerance"
                : ok           ? "ok (no larger fp32 share)"
                               : "MISSED (larger fp32 share)");
  }
  std::printf("where both are within tolerance %.0e: %d of %d with no larger fp32 share\n",
              kTolerance, met, comparable);
  return 0;
}
