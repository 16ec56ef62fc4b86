// Peak memory and wall time of `ovfix convert --target gpu-fp16 --calibration-data DIR` per
// model class, beside `ovfix run` of the same model on the same input, in the same run: each
// is a child process whose anonymous memory (RssAnon) is sampled every millisecond
// (tests/support/child_memory.h). The models: the shared ones with test data, and two built
// here in C++ as onnxruntime's quantization tool writes an ISNet-sized segmentation net
// (bench/quantized_models.h: a five-level UNet, 64..512 channels and a 1024-channel
// bottleneck, about 45 MB of int8 weights): `unet_dynamic_quant_large` (quantize_dynamic:
// DynamicQuantizeLinear + ConvInteger on every conv) and `unet_qdq_large` (quantize_static,
// QDQ around float Convs), fed a photograph scaled up to the input size; and two exporter-style
// classes whose run takes over 30 ms (bench/exporter_models.h): `x_resnet50` at 224x224 and
// `x_deeplabv3_mbv3` at 512x512, fed a photograph.
// Target (docs/memory.md): the conversion's peak RssAnon <= 768 MB + the largest tensor.
// A second table says where each conversion's time went, from its own `--verbose` time line
// (converter/conversion_time.h): the wall time over the time of the model runs it made, as the
// conversion measured them, and the largest parts beside the runs (issue 41 point 4).
//
//   build/bench/ovfix_bench_memory [--models resnet18,unet_qdq_large,...] [--size 320]
//                                  [--repeats 1] [--ovfix PATH (another build's binary)]
//                                  [--write-models DIR] (only writes the generated models
//                                  and their input, for profiling)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/exporter_models.h"
#include "bench/quantized_models.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "ir/tensor_proto.h"
#include "tests/support/child_memory.h"

namespace fs = std::filesystem;

namespace ovfix::bench {
namespace {

constexpr double kMB = 1 << 20;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "bench: %s failed\n", what.c_str());
    std::exit(1);
  }
}

// ISNet's size class: about 45 MB of int8 conv weights.
const UnetWidths kLargeWidths = {.levels = {64, 128, 256, 512, 512}, .bottleneck = 1024};

// tests/data/photos/chelsea_96.pb (uint8 [96, 96, 3]) scaled to [1, 3, size, size] by
// bilinear interpolation, in [-1, 1]: a smooth, image-like input that calibration sees.
Tensor PhotoInput(int64_t size) {
  absl::StatusOr<Tensor> photo =
      ReadTensorFile(std::string(OVFIX_SOURCE_DIR) + "/tests/data/photos/chelsea_96.pb");
  Check(photo.ok(), "reading the photograph");
  const int64_t h = photo->dims()[0], w = photo->dims()[1], c = photo->dims()[2];
  const uint8_t* pixels = photo->data<uint8_t>();
  Tensor t = Tensor::Uninitialized(DataType::kFloat, {1, 3, size, size});
  float* out = t.data<float>();
  for (int64_t y = 0; y < size; ++y) {
    const float sy = std::clamp((y + 0.5f) * h / size - 0.5f, 0.0f, h - 1.0f);
    const int64_t y0 = static_cast<int64_t>(sy), y1 = std::min(y0 + 1, h - 1);
    for (int64_t x = 0; x < size; ++x) {
      const float sx = std::clamp((x + 0.5f) * w / size - 0.5f, 0.0f, w - 1.0f);
      const int64_t x0 = static_cast<int64_t>(sx), x1 = std::min(x0 + 1, w - 1);
      const float fy = sy - y0, fx = sx - x0;
      for (int64_t k = 0; k < 3; ++k) {
        auto at = [&](int64_t yy, int64_t xx) { return pixels[(yy * w + xx) * c + k]; };
        const float v = (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
                        fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
        out[(k * size + y) * size + x] = v / 127.5f - 1.0f;
      }
    }
  }
  return t;
}

struct Case {
  std::string name;
  std::string dir;  // model.onnx and test_data_set_0/input_*.pb
};

Case WriteGenerated(const std::string& name, const onnx::ModelProto& proto, int64_t size,
                    const fs::path& root) {
  const fs::path dir = root / name;
  fs::create_directories(dir / "test_data_set_0");
  std::ofstream(dir / "model.onnx", std::ios::binary) << proto.SerializeAsString();
  Check(WriteTensorFile((dir / "test_data_set_0" / "input_0.pb").string(), PhotoInput(size),
                        proto.graph().input(0).name())
            .ok(),
        "writing the input of " + name);
  return {name, dir.string()};
}

Case MakeCase(const std::string& name, int64_t size, const fs::path& root) {
  if (name == "unet_dynamic_quant_large") {
    return WriteGenerated(name, DynamicQuantizedUnetModel(size, false, kLargeWidths), size, root);
  }
  if (name == "unet_qdq_large") {
    return WriteGenerated(name, QdqUnetModel(size, kLargeWidths), size, root);
  }
  // Exporter-style classes whose run takes over 30 ms (bench/exporter_models.h), fed a
  // photograph at their own input size.
  if (name == "x_resnet50") return WriteGenerated(name, ExportedResNet50Model(), 224, root);
  if (name == "x_deeplabv3_mbv3") {
    return WriteGenerated(name, ExportedDeepLabV3MobileNetV3Model(512), 512, root);
  }
  return {name, std::string(OVFIX_SHARED_DIR) + "/models/" + name};
}

// The largest tensor of the model on its test input: weights and every activation whose
// shape inference knows.
int64_t LargestTensorBytes(const std::string& model_file) {
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel(model_file);
  Check(model.ok(), "loading " + model_file);
  (void)InferShapes(**model);
  const Graph& graph = (*model)->graph();
  std::vector<const Value*> values(graph.initializers().begin(), graph.initializers().end());
  values.insert(values.end(), graph.inputs().begin(), graph.inputs().end());
  for (const Node* n : graph.nodes())
    values.insert(values.end(), n->outputs().begin(), n->outputs().end());
  int64_t largest = 0;
  for (const Value* v : values) {
    const std::optional<std::vector<int64_t>> dims = v->static_shape();
    if (!dims.has_value() || ElementSize(v->elem_type()) == 0) continue;
    int64_t n = static_cast<int64_t>(ElementSize(v->elem_type()));
    for (int64_t d : *dims) n *= d;
    largest = std::max(largest, n);
  }
  return largest;
}

int64_t WeightBytes(const std::string& model_file) {
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel(model_file);
  Check(model.ok(), "loading " + model_file);
  int64_t total = 0;
  for (const Value* v : (*model)->graph().initializers()) total += v->tensor().nbytes();
  return total;
}

// `ovfix run`'s arguments: one --input NAME=FILE per input of test_data_set_0.
std::vector<std::string> RunArguments(const std::string& binary, const Case& c) {
  std::vector<std::string> argv = {binary, "run", c.dir + "/model.onnx"};
  for (int k = 0;; ++k) {
    const std::string file = absl::StrCat(c.dir, "/test_data_set_0/input_", k, ".pb");
    if (!fs::exists(file)) break;
    std::string name;
    Check(ReadTensorFile(file, &name).ok(), "reading " + file);
    argv.insert(argv.end(), {"--input", name + "=" + file});
  }
  return argv;
}

struct Measure {
  int64_t peak_anonymous = 0;
  int64_t peak_resident = 0;
  std::vector<double> seconds;
  std::string output;  // of the last round
  void Add(const testing::ChildRun& run, const std::string& what) {
    Check(run.exit_code == 0 || run.exit_code == 1, what + ":\n" + run.output);
    peak_anonymous = std::max(peak_anonymous, run.peak_anonymous_bytes);
    peak_resident = std::max(peak_resident, run.peak_resident_bytes);
    seconds.push_back(run.seconds);
    output = run.output;
  }
  double Median() const {
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
};

// "(N model runs)" on the conversion summary's end-to-end line (the certificate's line counts
// its own).
std::string ModelRuns(const std::string& output) {
  std::smatch m;
  static const std::regex runs("end-to-end:[^\\n]*\\((\\d+) model runs?\\)");
  return std::regex_search(output, m, runs) ? m[1].str() : "?";
}

// The conversion's time line: "time: T s = model runs R s (N runs) + NAME S s + ...".
struct TimeParts {
  double total = 0;
  std::vector<std::pair<std::string, double>> parts;  // in the line's order
  double Part(const std::string& name) const {
    for (const auto& [n, s] : parts) {
      if (n == name) return s;
    }
    return 0;
  }
};

TimeParts ParseTimeLine(const std::string& output) {
  TimeParts t;
  std::smatch m;
  static const std::regex line("\\ntime: ([0-9.]+) s = ([^\\n]*)");
  if (!std::regex_search(output, m, line)) return t;
  t.total = std::atof(m[1].str().c_str());
  static const std::regex part("([a-z ]+) ([0-9.]+) s");
  const std::string parts = m[2].str();
  for (absl::string_view piece : absl::StrSplit(parts, " + ")) {
    const std::string text(piece);
    std::smatch pm;
    if (std::regex_search(text, pm, part)) {
      t.parts.emplace_back(pm[1], std::atof(pm[2].str().c_str()));
    }
  }
  return t;
}

// "rewrites 1.10 s, reconversions 0.90 s, graph copies 0.50 s": the largest parts that are not
// the model runs, each at least 5% of the total.
std::string LargestParts(const TimeParts& t) {
  std::vector<std::pair<std::string, double>> rest;
  for (const auto& [name, s] : t.parts) {
    if (name != "model runs" && name != "session builds" && s >= 0.05 * t.total) {
      rest.emplace_back(name, s);
    }
  }
  std::sort(rest.begin(), rest.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (size_t i = 0; i < rest.size() && i < 3; ++i) {
    absl::StrAppend(&out, i > 0 ? ", " : "", rest[i].first,
                    absl::StrFormat(" %.2f s", rest[i].second));
  }
  return out.empty() ? "-" : out;
}

}  // namespace
}  // namespace ovfix::bench

int main(int argc, char** argv) {
  using namespace ovfix::bench;
  std::vector<std::string> names = {"resnet18",
                                    "mobilenet_v3_small",
                                    "silero_vad",
                                    "gfpgan_modconv",
                                    "x_resnet50",
                                    "x_deeplabv3_mbv3",
                                    "unet_dynamic_quant_large",
                                    "unet_qdq_large"};
  int64_t size = 320;
  int repeats = 1;
  std::string write_dir;
  std::string binary = OVFIX_BINARY;  // --ovfix: another build's, for a before/after table
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--models") {
      names = absl::StrSplit(value, ',');
    } else if (flag == "--size") {
      size = std::atoll(value.c_str());
    } else if (flag == "--repeats") {
      repeats = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--write-models") {
      write_dir = value;
    } else if (flag == "--ovfix") {
      binary = value;
    } else {
      Check(false, "flag " + flag);
    }
  }
  if (!write_dir.empty()) {
    for (const char* name : {"unet_dynamic_quant_large", "unet_qdq_large"}) {
      std::printf("wrote %s\n", MakeCase(name, size, write_dir).dir.c_str());
    }
    return 0;
  }
  const fs::path scratch =
      fs::temp_directory_path() / ("ovfix_bench_memory_" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  std::vector<std::string> time_rows;
  std::printf(
      "| model | weights MB | largest tensor MB | run: RssAnon MB | VmHWM MB | s | convert: "
      "RssAnon MB | VmHWM MB | s | model runs | convert s / (runs x run s) | bound MB | within "
      "|\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& name : names) {
    const Case c = MakeCase(name, size, scratch);
    const std::string model = c.dir + "/model.onnx";
    const std::string out = (scratch / "out.onnx").string();
    Measure run, convert;
    for (int round = 0; round < repeats; ++round) {
      run.Add(ovfix::testing::RunWatchingMemory(RunArguments(binary, c)), "run " + name);
      convert.Add(
          ovfix::testing::RunWatchingMemory({binary, "convert", model, out, "--target", "gpu-fp16",
                                             "--calibration-data", c.dir, "--verbose"}),
          "convert " + name);
      fs::remove(out);
    }
    const int64_t largest = LargestTensorBytes(model);
    const double bound = 768 * kMB + static_cast<double>(largest);
    // What the conversion costs beyond the runs it makes (each taken as long as `ovfix run`).
    const std::string runs = ModelRuns(convert.output);
    const double made = std::atof(runs.c_str()) * run.Median();
    std::printf(
        "| %s | %.1f | %.1f | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %s | %s | %.0f | %s |\n",
        name.c_str(), WeightBytes(model) / kMB, largest / kMB, run.peak_anonymous / kMB,
        run.peak_resident / kMB, run.Median(), convert.peak_anonymous / kMB,
        convert.peak_resident / kMB, convert.Median(), runs.c_str(),
        made > 0 ? absl::StrFormat("%.2f", convert.Median() / made).c_str() : "-", bound / kMB,
        convert.peak_anonymous <= bound ? "yes" : "NO");
    std::fflush(stdout);
    const TimeParts t = ParseTimeLine(convert.output);
    const double run_seconds = t.Part("model runs") + t.Part("session builds");
    time_rows.push_back(absl::StrFormat(
        "| %s | %.2f | %s | %.2f | %.2f | %s | %s |", name, t.total, runs, t.Part("model runs"),
        t.Part("session builds"),
        run_seconds > 0 ? absl::StrFormat("%.1f", t.total / run_seconds) : "-", LargestParts(t)));
  }
  // Where the conversion's time went (its last round), from its own time line.
  std::printf(
      "\n| model | convert s | model runs | runs s | session builds s | convert s / runs s | "
      "largest other parts |\n|---|---|---|---|---|---|---|\n");
  for (const std::string& row : time_rows) std::printf("%s\n", row.c_str());
  fs::remove_all(scratch);
  return 0;
}
