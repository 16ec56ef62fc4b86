// The CPU executor against onnxruntime on a model set: resnet18, mobilenet_v3_small,
// deep_residual and silero_vad from ../shared, and models generated here (a UNet with
// bilinear Resize and Concat skips, a ViT-style encoder, a ConvNeXt-like and a
// MobileNetV3-like net, and that UNet quantized as onnxruntime's dynamic quantization
// (ConvInteger) and its static QDQ quantization write it), exporter-style models
// (bench/exporter_models.h: among them the model classes of issue 41, x_resnet50,
// x_deeplabv3_mbv3, x_ocr_rec and x_bert_masked, whose int64 token inputs are a padded
// sentence) and a chain of 7000 tiny Adds (the cost per node). Same thread
// count on both sides; measured in rounds that alternate a window of ovfix's runs with one
// of onnxruntime's, each side loaded once and kept (onnxruntime in a child process,
// bench/ort_serve.js), so both see the same machine load. Prints per model the best and
// median run of each, their ratios, the median over rounds of the ratio of the two windows'
// best runs, how far the outputs are apart, and the geometric means. Targets (issue 41,
// best runs): geometric mean of the ratios <= 0.9, no model above 1.15.
//
//   npm install --prefix build/ort --ignore-scripts onnxruntime-node@1.30.0   (once)
//   build/bench/ovfix_bench_cpu_vs_ort [--threads 2] [--repeat 5] [--rounds 10]
//       [--unet-size 512] [--models resnet18,unet,...] [--graph-as-written true]
//       [--concat-in-place false] [--settle-ms 250]
//   (short windows of runs alternated many times: bench/README.md says why)
//   build/bench/ovfix_bench_cpu_vs_ort --write-models DIR   (the generated models, for profiling)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "bench/exporter_models.h"
#include "bench/generated_models.h"
#include "bench/ort_peer.h"
#include "bench/quantized_models.h"
#include "converter/session_graph.h"
#include "exec/executor.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"

namespace fs = std::filesystem;

namespace ovfix::bench {
namespace {

struct Options {
  int threads = 2, repeat = 5, rounds = 10;
  // Idle time before each window of runs: onnxruntime's pool threads spin on after its last
  // run (the first 40-60 ms of ovfix's next window ran at half speed, x_convnext's first
  // two or three runs 14-30 ms against 9), as ovfix's do for half a millisecond.
  int settle_ms = 250;
  int64_t unet_size = 512;
  std::string write_models;       // only write the generated models (and inputs) there
  bool graph_as_written = false;  // run the graph exactly as written (no session graph)
  bool concat_in_place = true;    // SessionOptions::concat_in_place (off: the copying Concat)
  std::vector<std::string> models = {"resnet18",
                                     "mobilenet_v3_small",
                                     "deep_residual",
                                     "silero_vad",
                                     "unet",
                                     "vit_encoder",
                                     "convnext",
                                     "mobilenet_v3_det",
                                     "unet_dynamic_quant",
                                     "unet_dynamic_quant_u8",
                                     "unet_qdq",
                                     "x_convnext",
                                     "x_swin",
                                     "x_swin_t",
                                     "x_swin_deep",
                                     "add_chain_7000",
                                     "x_bert",
                                     "x_decoder",
                                     "x_densenet",
                                     "x_aspp",
                                     "x_resnet50",
                                     "x_deeplabv3_mbv3",
                                     "x_ocr_rec",
                                     "x_bert_masked"};
};

struct Case {
  std::string name, model_file;
  std::vector<std::string> input_files;
};

// Writes a generated model and a seeded random input for it into `dir`.
Case Generate(const std::string& name, const onnx::ModelProto& proto, const fs::path& dir) {
  fs::create_directories(dir);
  Case c{name, (dir / "model.onnx").string(), {}};
  std::ofstream(c.model_file, std::ios::binary) << proto.SerializeAsString();
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int i = 0; i < proto.graph().input_size(); ++i) {
    std::vector<int64_t> dims;
    for (const auto& d : proto.graph().input(i).type().tensor_type().shape().dim()) {
      dims.push_back(d.dim_value());
    }
    const std::string& input_name = proto.graph().input(i).name();
    Tensor t;
    if (proto.graph().input(i).type().tensor_type().elem_type() == onnx::TensorProto::INT64) {
      // A tokenized sentence as a BERT tokenizer pads it: [CLS], word ids, [SEP], then padding
      // (the last quarter) that attention_mask zeroes; token_type_ids all 0.
      t = Tensor(DataType::kInt64, dims);
      std::span<int64_t> v(t.data<int64_t>(), t.numel());
      const int64_t used = v.size() - v.size() / 4;
      std::uniform_int_distribution<int64_t> word(1000, 29999);
      for (int64_t k = 0; k < used; ++k) {
        if (input_name == "attention_mask") {
          v[k] = 1;
        } else if (input_name == "input_ids") {
          v[k] = k == 0 ? 101 : (k == used - 1 ? 102 : word(random));
        }
      }
    } else {
      t = Tensor::Uninitialized(DataType::kFloat, dims);
      for (float& v : std::span<float>(t.data<float>(), t.numel())) v = uniform(random);
    }
    const std::string file = (dir / ("input_" + std::to_string(i) + ".pb")).string();
    if (!WriteTensorFile(file, t, input_name).ok()) std::exit(1);
    c.input_files.push_back(file);
  }
  return c;
}

Case MakeCase(const std::string& name, const Options& o, const fs::path& scratch) {
  if (name == "unet") return Generate(name, UnetModel(o.unet_size), scratch / name);
  if (name == "unet_dynamic_quant" || name == "unet_dynamic_quant_u8") {
    return Generate(name, DynamicQuantizedUnetModel(o.unet_size, name.back() == '8'),
                    scratch / name);
  }
  if (name == "unet_qdq") return Generate(name, QdqUnetModel(o.unet_size), scratch / name);
  if (name == "vit_encoder") return Generate(name, VitEncoderModel(), scratch / name);
  if (name == "convnext") return Generate(name, ConvNextModel(), scratch / name);
  if (name == "mobilenet_v3_det") return Generate(name, MobileNetV3Model(), scratch / name);
  if (name == "add_chain_7000") return Generate(name, AddChainModel(7000), scratch / name);
  // Exporter-style models (bench/exporter_models.h).
  if (name == "x_convnext") return Generate(name, ExportedConvNextModel(), scratch / name);
  if (name == "x_swin") return Generate(name, ExportedSwinModel(), scratch / name);
  if (name == "x_swin_t") return Generate(name, ExportedSwinTModel(), scratch / name);
  if (name == "x_swin_deep") return Generate(name, ExportedDeepSwinModel(), scratch / name);
  if (name == "x_bert") return Generate(name, ExportedBertModel(), scratch / name);
  if (name == "x_decoder") return Generate(name, ExportedCausalDecoderModel(), scratch / name);
  if (name == "x_densenet") return Generate(name, ExportedDenseNetModel(), scratch / name);
  // Not in the default set: the torchvision form of x_densenet (--models x_densenet_tv).
  if (name == "x_densenet_tv") {
    return Generate(name, ExportedTorchvisionDenseNetModel(), scratch / name);
  }
  if (name == "x_aspp") return Generate(name, ExportedAtrousSegmentationModel(), scratch / name);
  if (name == "x_resnet50") return Generate(name, ExportedResNet50Model(), scratch / name);
  if (name == "x_deeplabv3_mbv3") {
    return Generate(name, ExportedDeepLabV3MobileNetV3Model(), scratch / name);
  }
  if (name == "x_ocr_rec") return Generate(name, ExportedOcrRecognizerModel(), scratch / name);
  if (name == "x_bert_masked") return Generate(name, ExportedMaskedBertModel(), scratch / name);
  const std::string dir = std::string(OVFIX_SHARED_DIR) + "/models/" + name;
  Case c{name, dir + "/model.onnx", {}};
  for (int k = 0; fs::exists(dir + "/test_data_set_0/input_" + std::to_string(k) + ".pb"); ++k) {
    c.input_files.push_back(dir + "/test_data_set_0/input_" + std::to_string(k) + ".pb");
  }
  return c;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Largest |ours - theirs| over every output, relative to the range of theirs.
double RelativeDifference(const std::vector<Tensor>& ours, const fs::path& peer_dir) {
  double worst = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    auto theirs = ReadTensorFile((peer_dir / ("output_" + std::to_string(i) + ".pb")).string());
    if (!theirs.ok() || theirs->numel() != ours[i].numel() || ours[i].type() != DataType::kFloat ||
        theirs->type() != DataType::kFloat) {
      return -1;
    }
    float lo = 0, hi = 0, diff = 0;
    for (int64_t k = 0; k < ours[i].numel(); ++k) {
      const float t = theirs->data<float>()[k];
      lo = std::min(lo, t);
      hi = std::max(hi, t);
      diff = std::max(diff, std::abs(t - ours[i].data<float>()[k]));
    }
    worst = std::max<double>(worst, diff / std::max(hi - lo, 1e-6f));
  }
  return worst;
}

int Run(const Options& o) {
  if (!o.write_models.empty()) {
    for (const std::string& name : o.models) MakeCase(name, o, o.write_models);
    return 0;
  }
  const std::string modules = OrtModules();
  if (modules.empty()) return 0;
  const fs::path scratch =
      fs::temp_directory_path() / ("ovfix_bench_cpu_vs_ort_" + std::to_string(::getpid()));
  std::printf("%-20s %10s %10s %10s %10s %7s %7s %7s %9s\n", "model (ms)", "ovfix", "ovfix-med",
              "ort", "ort-med", "ratio", "r-med", "r-round", "rel-diff");
  double log_sum = 0, log_sum_median = 0, log_sum_paired = 0, worst = 0;
  int count = 0;
  for (const std::string& name : o.models) {
    const Case c = MakeCase(name, o, scratch);
    auto model = LoadModel(c.model_file);
    if (!model.ok()) {
      std::fprintf(stderr, "bench: %s\n", std::string(model.status().message()).c_str());
      return 1;
    }
    exec::TensorMap inputs;
    size_t k = 0;
    for (const Value* v : (*model)->graph().inputs()) {
      if (v->is_initializer()) continue;
      auto t = ReadTensorFile(c.input_files.at(k++));
      if (!t.ok()) return 1;
      inputs[v->name()] = *std::move(t);
    }
    exec::SessionOptions session_options;
    session_options.threads = o.threads;
    session_options.concat_in_place = o.concat_in_place;
    // As `ovfix run` does: the optimized session graph unless --graph-as-written. The Add
    // chain always runs as written: it measures the executor's cost per node, and the session
    // graph would make its 7000 Adds one element-wise pass.
    const bool as_written = o.graph_as_written || name == "add_chain_7000";
    std::string note;
    auto run_session =
        converter::CreateRunSession(**model, inputs, session_options, as_written, &note);
    if (!run_session.ok()) {
      std::fprintf(stderr, "bench: %s\n", std::string(run_session.status().message()).c_str());
      return 1;
    }
    if (!note.empty()) std::fprintf(stderr, "bench: %s: %s\n", name.c_str(), note.c_str());
    auto& session = run_session->session;
    auto first = session->Run(inputs);  // untimed, as onnxruntime's first run
    if (!first.ok()) {
      std::fprintf(stderr, "bench: %s: %s\n", name.c_str(),
                   std::string(first.status().message()).c_str());
      return 1;
    }
    // onnxruntime stays loaded beside this session: rounds of `repeat` runs each alternate.
    std::vector<RawInput> raw_inputs;
    for (const auto& [input_name, t] : inputs) {
      raw_inputs.push_back({input_name, static_cast<int>(t.type()), t.dims(), t.raw(), t.nbytes()});
    }
    OrtServer peer(modules, c.model_file, raw_inputs, o.threads);
    const fs::path peer_outputs = scratch / (name + "_ort");
    if (!peer.ready() ||
        RunOrt(modules, c.model_file, c.input_files, o.threads, 0, peer_outputs.string()).min_ms <
            0) {
      std::fprintf(stderr, "bench: onnxruntime failed on %s\n", c.model_file.c_str());
      return 1;
    }
    std::vector<double> ours, theirs, round_ratios;
    for (int round = 0; round < o.rounds; ++round) {
      double round_best = 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(o.settle_ms));
      for (int i = 0; i < o.repeat; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto out = session->Run(inputs);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (!out.ok()) return 1;
        round_best = i == 0 ? ms : std::min(round_best, ms);
        ours.push_back(ms);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(o.settle_ms));
      const std::vector<double> peer_ms = peer.Time(o.repeat);
      if (peer_ms.empty()) {
        std::fprintf(stderr, "bench: onnxruntime failed on %s\n", c.model_file.c_str());
        return 1;
      }
      theirs.insert(theirs.end(), peer_ms.begin(), peer_ms.end());
      round_ratios.push_back(round_best / *std::min_element(peer_ms.begin(), peer_ms.end()));
    }
    const double best = *std::min_element(ours.begin(), ours.end()), median = Median(ours);
    const double peer_best = *std::min_element(theirs.begin(), theirs.end());
    const double peer_med = Median(theirs);
    const double ratio = best / peer_best, ratio_median = median / peer_med;
    const double ratio_paired = Median(round_ratios);
    std::printf("%-20s %10.2f %10.2f %10.2f %10.2f %6.2fx %6.2fx %6.2fx %9.2g\n", name.c_str(),
                best, median, peer_best, peer_med, ratio, ratio_median, ratio_paired,
                RelativeDifference(*first, peer_outputs));
    std::fflush(stdout);
    log_sum += std::log(ratio);
    log_sum_median += std::log(ratio_median);
    log_sum_paired += std::log(ratio_paired);
    worst = std::max(worst, ratio);
    ++count;
  }
  fs::remove_all(scratch);
  const double geomean = std::exp(log_sum / count);
  std::printf(
      "\ngeometric mean of ratios: best %.2fx (target <= 0.9x: %s), median %.2fx, per round "
      "%.2fx\n",
      geomean, geomean <= 0.9 ? "ok" : "MISSED", std::exp(log_sum_median / count),
      std::exp(log_sum_paired / count));
  std::printf("largest ratio (best): %.2fx (target <= 1.15x: %s)\n", worst,
              worst <= 1.15 ? "ok" : "MISSED");
  std::printf("(%d threads each; %d rounds of %d runs; unet at %lldx%lld)\n", o.threads, o.rounds,
              o.repeat, static_cast<long long>(o.unet_size), static_cast<long long>(o.unet_size));
  return 0;
}

}  // namespace
}  // namespace ovfix::bench

int main(int argc, char** argv) {
  ovfix::bench::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--threads")
      o.threads = std::atoi(value.c_str());
    else if (flag == "--repeat")
      o.repeat = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--rounds")
      o.rounds = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--settle-ms")
      o.settle_ms = std::max(0, std::atoi(value.c_str()));
    else if (flag == "--unet-size")
      o.unet_size = std::atoll(value.c_str());
    else if (flag == "--write-models")
      o.write_models = value;
    else if (flag == "--graph-as-written")
      o.graph_as_written = value == "true" || value == "1";
    else if (flag == "--concat-in-place")
      o.concat_in_place = value == "true" || value == "1";
    else if (flag == "--models")
      o.models = absl::StrSplit(value, ',');
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  return ovfix::bench::Run(o);
}
