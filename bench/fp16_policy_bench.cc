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
#include "ir/graph_walk.h"
#include "ir/model_io.h"

namespace ovfix::bench {
namespace {

namespace fs = std::filesystem;

struct Result {
  bool ok = false;
  double error = 0;
  int float16 = 0, float32 = 0;
  double Fraction() const { return float32 / std::max(1.0, 1.0 * (float16 + float32)); }
};

// Nodes computing floats (Casts, Constants and control flow aside), by output type.
void CountFloatNodes(Graph& root, Result& r) {
  for (Graph* g : GraphsRecursive(root)) {
    for (const Node* n : g->nodes()) {
      if (n->op_type() == "Cast" || n->op_type() == "Constant" || !n->subgraphs().empty()) {
        continue;
      }
      bool half = false, single = false;
      for (const Value* v : n->outputs()) {
        if (v == nullptr || !v->is_tensor()) continue;
        half = half || v->elem_type() == DataType::kFloat16;
        single = single || v->elem_type() == DataType::kFloat;
      }
      r.float16 += half;
      r.float32 += single && !half;
    }
  }
}

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
  CountFloatNodes((*model)->graph(), r);
  return r;
}

}  // namespace
}  // namespace ovfix::bench

int main(int argc, char** argv) {
  using namespace ovfix::bench;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) names.push_back(argv[i]);
  if (names.empty()) {
    names = {"gfpgan_modconv", "hand_softmax", "resnet18",  "mobilenet_v3_small",
             "deep_residual",  "silero_vad",   "ddff_squeeze", "trt_broadcast", "conv3d_991"};
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
    const bool ok = !same_accuracy || ours.Fraction() <= peer.Fraction();
    comparable += same_accuracy;
    met += same_accuracy && ok;
    std::printf("%-20s %5d/%-5d %4.0f%% %9.3g %5d/%-5d %4.0f%% %9.3g  %s\n", name.c_str(),
                ours.float32, ours.float16 + ours.float32, 100 * ours.Fraction(), ours.error,
                peer.float32, peer.float16 + peer.float32, 100 * peer.Fraction(), peer.error,
                !same_accuracy ? "peer policy beyond tolerance"
                : ok           ? "ok (no larger fp32 share)"
                               : "MISSED (larger fp32 share)");
  }
  std::printf("where both are within tolerance %.0e: %d of %d with no larger fp32 share\n",
              kTolerance, met, comparable);
  return 0;
}
