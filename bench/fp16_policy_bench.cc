// How much of a model the gpu-fp16 conversion keeps in fp32, beside the magnitude policy of
// ModelOpt AutoCast (fp32 only for nodes whose outputs calibration saw above 512, for
// constants fp16 cannot hold and for what the spec requires; nothing structural), on the
// shared models with test data (calibrated on it) and on the five fp16 test models of
// tests/support/fp16_models.h (trained-looking weights, fed real photographs). ovfix's
// conversion repairs to its criterion; the policy is measured as it comes.
//
// Per model and policy: the fp32 share of float nodes and of multiply-adds (counted from the
// converted model, tests/support/precision_share.h), the float Casts, the error under each
// criterion computed here from a run of the converted model against the original (worst
// element, 99th percentile and mean of |error|, each rel. to the range; the share of a mask's
// pixels that change side of the threshold, top-k agreement of a classifier), full model runs and
// wall time of the conversion. Target (issue "gpu-fp16 that is actually fp16"): ovfix's fp32
// share at most the policy's + 5 points (10 % where the policy keeps nothing) where the
// policy meets the criterion, at most 15 % elsewhere.
//
//   build/bench/ovfix_bench_fp16_policy [--scale N] [--mlp-blocks N] [MODEL ...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/exporter_models.h"
#include "converter/accuracy.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "ir/float16.h"
#include "ir/model_io.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"
#include "tests/support/fp16_models.h"
#include "tests/support/precision_share.h"

namespace ovfix::bench {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name;
  std::unique_ptr<Model> model;
  exec::TensorMap inputs;
  std::vector<std::string> input_files;  // in the order of the model's inputs
  std::vector<std::string> criteria;     // per output: "mask@0.3:0.001", "top5:0", "" (default)
  std::vector<std::string> accuracy;     // --accuracy NAME=CRITERIA, as the tests judge them
};

struct Result {
  bool ok = false;
  std::string why;
  test_models::PrecisionShare share;
  double max_error = 0, mean_error = 0, p99_error = 0;
  double mask_changed = -1, topk_agreement = -1;  // -1: no such output
  double report_error = 0;
  bool meets = false;  // the conversion's verdict under the case's accuracy criteria
  int model_runs = 0;
  double seconds = 0;
};

// The 99th percentile of |a - e| relative to e's range.
double P99Error(const Tensor& a, const Tensor& e) {
  if (a.type() != DataType::kFloat || e.type() != DataType::kFloat || a.numel() != e.numel() ||
      e.numel() == 0) {
    return INFINITY;
  }
  const float* x = a.data<float>();
  const float* y = e.data<float>();
  const auto [lo, hi] = std::minmax_element(y, y + e.numel());
  const double range = *hi > *lo ? *hi - *lo : std::max(1.0, std::abs(static_cast<double>(*hi)));
  std::vector<double> d(e.numel());
  for (int64_t i = 0; i < e.numel(); ++i) {
    d[i] = std::abs(static_cast<double>(x[i]) - y[i]);
    if (!std::isfinite(d[i])) return INFINITY;
  }
  const size_t k = static_cast<size_t>(0.99 * static_cast<double>(d.size() - 1));
  std::nth_element(d.begin(), d.begin() + k, d.end());
  return d[k] / range;
}

// Mean |a - e| relative to e's range.
double MeanError(const Tensor& a, const Tensor& e) {
  if (a.type() != DataType::kFloat || e.type() != DataType::kFloat || a.numel() != e.numel()) {
    return INFINITY;
  }
  const float* x = a.data<float>();
  const float* y = e.data<float>();
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    lo = std::min<double>(lo, y[i]);
    hi = std::max<double>(hi, y[i]);
    sum += std::abs(static_cast<double>(x[i]) - y[i]);
  }
  const double range = hi > lo ? hi - lo : std::max(1.0, std::abs(hi));
  if (!std::isfinite(sum)) return INFINITY;  // a NaN or inf the original does not have
  return sum / std::max<int64_t>(1, e.numel()) / range;
}

double MaskChanged(const Tensor& a, const Tensor& e, double threshold) {
  int64_t changed = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    changed += (a.data<float>()[i] > threshold) != (e.data<float>()[i] > threshold);
  }
  return static_cast<double>(changed) / std::max<int64_t>(1, e.numel());
}

// Share of rows (along the last axis) whose top-k classes, as a set, are the same.
double TopkAgreement(const Tensor& a, const Tensor& e, int k) {
  const int64_t n = e.dims().back(), rows = e.numel() / std::max<int64_t>(1, n);
  int64_t same = 0;
  auto top = [&](const float* row) {
    std::vector<int64_t> idx(n);
    for (int64_t i = 0; i < n; ++i) idx[i] = i;
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int64_t p, int64_t q) { return row[p] > row[q]; });
    idx.resize(k);
    std::sort(idx.begin(), idx.end());
    return idx;
  };
  for (int64_t r = 0; r < rows; ++r) {
    same += top(a.data<float>() + r * n) == top(e.data<float>() + r * n);
  }
  return static_cast<double>(same) / std::max<int64_t>(1, rows);
}

absl::StatusOr<std::vector<Tensor>> RunAsFloat(const Model& model, const exec::TensorMap& in) {
  exec::SessionOptions options;
  options.threads = 2;
  OVFIX_ASSIGN_OR_RETURN(auto session, exec::CreateSession(model, options));
  exec::TensorMap typed = in;  // float inputs the converted graph declares float16
  for (const Value* v : model.graph().inputs()) {
    auto it = typed.find(v->name());
    if (it == typed.end() || v->elem_type() != DataType::kFloat16 ||
        it->second.type() != DataType::kFloat) {
      continue;
    }
    Tensor half(DataType::kFloat16, it->second.dims());
    for (int64_t i = 0; i < half.numel(); ++i) {
      half.data<uint16_t>()[i] = FloatToHalfBits(it->second.data<float>()[i]);
    }
    it->second = std::move(half);
  }
  OVFIX_ASSIGN_OR_RETURN(std::vector<Tensor> out, session->Run(typed));
  for (Tensor& t : out) {  // float16 outputs compared as float
    if (t.type() == DataType::kFloat16) {
      Tensor f(DataType::kFloat, t.dims());
      Float16TensorToFloats(t, f.data<float>());
      t = std::move(f);
    }
  }
  return out;
}

// --certify on|off: the island certificate of ovfix's rows (the conversion without it is the
// one before the certificate existed, to compare runs and wall time with).
bool g_certify = true;

Result Convert(const Case& c, const std::vector<Tensor>& expected, bool magnitude_policy) {
  Result r;
  auto model = CopyModel(*c.model);
  if (!model.ok()) return r;
  converter::PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.convert.certify = g_certify;
  const auto& graph_inputs = (*model)->graph().inputs();
  for (size_t i = 0, k = 0; i < graph_inputs.size() && k < c.input_files.size(); ++i) {
    if (graph_inputs[i]->is_initializer()) continue;
    options.convert.input_files[graph_inputs[i]->name()] = c.input_files[k++];
  }
  for (const std::string& a : c.accuracy) {
    if (absl::Status s = converter::AddAccuracyOption(a, options.accuracy); !s.ok()) {
      r.why = std::string(s.message());
      return r;
    }
  }
  if (magnitude_policy) {
    options.convert.fp16_islands = rules::ConvertOptions::Fp16Islands::kMagnitude;
    options.convert.fp16_magnitude_threshold = 512;
    // AutoCast converts the graph as it is: no softmax shifted by its row's max first.
    options.convert.disabled.push_back("fp16_safe_softmax");
    options.set_by_user = {"fp16_islands", "fp16_magnitude_threshold"};
    options.repair = false;
  }
  const auto start = std::chrono::steady_clock::now();
  auto report = converter::ConvertModel(**model, options);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!report.ok() || !report->end_to_end) {
    r.why = report.ok() ? "not validated" : std::string(report.status().message());
    return r;
  }
  r.report_error = report->end_to_end->max_error;
  r.meets = report->end_to_end->meets();
  r.model_runs = report->model_runs;
  r.share = test_models::CountPrecision(**model);
  absl::StatusOr<std::vector<Tensor>> actual = RunAsFloat(**model, c.inputs);
  if (!actual.ok() || actual->size() != expected.size()) {
    r.why = actual.ok() ? "output count" : std::string(actual.status().message());
    return r;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tensor& a = (*actual)[i];
    const Tensor& e = expected[i];
    r.max_error = std::max(r.max_error, exec::RelativeError(a, e));
    r.mean_error = std::max(r.mean_error, MeanError(a, e));
    r.p99_error = std::max(r.p99_error, P99Error(a, e));
    const std::string criterion = i < c.criteria.size() ? c.criteria[i] : "";
    absl::StatusOr<converter::Criteria> parsed = converter::ParseCriteria(criterion);
    for (const converter::Criterion& k : parsed.ok() ? *parsed : converter::Criteria{}) {
      if (k.kind == converter::CriterionKind::kMask) {
        r.mask_changed = std::max(r.mask_changed, MaskChanged(a, e, k.parameter));
      } else if (k.kind == converter::CriterionKind::kTopK) {
        const double agree = TopkAgreement(a, e, static_cast<int>(k.parameter));
        r.topk_agreement = r.topk_agreement < 0 ? agree : std::min(r.topk_agreement, agree);
      }
    }
  }
  r.ok = true;
  return r;
}

absl::StatusOr<Case> SharedCase(const std::string& name) {
  const std::string dir = std::string(OVFIX_SHARED_DIR) + "/models/" + name;
  Case c;
  c.name = name;
  OVFIX_ASSIGN_OR_RETURN(c.model, LoadModel(dir + "/model.onnx"));
  std::vector<std::string> names;
  for (const Value* v : c.model->graph().inputs()) {
    if (!v->is_initializer()) names.push_back(v->name());
  }
  for (size_t k = 0; k < names.size(); ++k) {
    const std::string file = absl::StrCat(dir, "/test_data_set_0/input_", k, ".pb");
    OVFIX_ASSIGN_OR_RETURN(Tensor t, ReadTensorFile(file));
    c.inputs[names[k]] = std::move(t);
    c.input_files.push_back(file);
  }
  return c;
}

// convnext_t: ConvNeXt-T's shape as PyTorch exports it (224x224, widths 96-768, depths
// 3/3/9/3, decomposed LayerNorm, Erf GELU; 28M weights, 110 MB: past the 64 MB where a run of
// the model counts as costly) on the cat photograph, judged by top1:0,max:0.02 as the issue's
// held-back ConvNeXt-T was.
absl::StatusOr<Case> ConvNextTCase(const fs::path& dir) {
  Case c;
  c.name = "convnext_t";
  onnx::ModelProto proto = ExportedConvNextModelSized(224, {96, 192, 384, 768}, {3, 3, 9, 3});
  OVFIX_ASSIGN_OR_RETURN(c.model, ModelFromProto(std::move(proto), "", c.name));
  OVFIX_ASSIGN_OR_RETURN(Tensor image, test_models::ResizedPhoto("chelsea_96.pb", 224, 1 / 255.0f));
  static const float kMean[3] = {0.485f, 0.456f, 0.406f}, kStd[3] = {0.229f, 0.224f, 0.225f};
  for (int64_t i = 0; i < image.numel(); ++i) {
    const int64_t ch = i / (224 * 224);
    image.data<float>()[i] = (image.data<float>()[i] - kMean[ch]) / kStd[ch];
  }
  const std::string input = c.model->graph().inputs().front()->name();
  const std::string file = (dir / "convnext_t_input.pb").string();
  OVFIX_RETURN_IF_ERROR(WriteTensorFile(file, image, input));
  c.input_files = {file};
  c.inputs[input] = std::move(image);
  c.criteria = {"top1:0"};
  c.accuracy = {"top1:0,max:0.02"};
  return c;
}

absl::StatusOr<Case> TestModelCase(test_models::Fp16TestModel m, const fs::path& dir) {
  Case c;
  c.name = m.name;
  const std::string file = (dir / (m.name + "_input.pb")).string();
  OVFIX_RETURN_IF_ERROR(WriteTensorFile(file, m.input, m.input_name));
  c.input_files = {file};
  c.inputs[m.input_name] = m.input;
  for (const std::string& a : m.accuracy) {
    std::vector<std::string> parts = absl::StrSplit(a, absl::MaxSplits('=', 1));
    c.criteria.push_back(parts.size() == 2 ? parts[1] : "");
  }
  c.accuracy = m.accuracy;
  c.model = std::move(m.model);
  return c;
}

std::string Share(double share) { return absl::StrFormat("%5.1f%%", 100 * share); }
std::string Optional(double v, double scale, const absl::FormatSpec<double>& format) {
  return v < 0 ? "-" : absl::StrFormat(format, scale * v);
}

void PrintRow(const std::string& model, const char* policy, const Result& r) {
  if (!r.ok) {
    std::printf("| %s | %s | failed: %s |||||||||||\n", model.c_str(), policy, r.why.c_str());
    return;
  }
  absl::PrintF("| %s | %s | %d/%d %s | %s | %d | %.3g | %.2g | %.2g | %s | %s | %s | %d | %.1f |\n",
               model, policy, r.share.fp32_nodes, r.share.fp16_nodes + r.share.fp32_nodes,
               Share(r.share.NodeShare()), Share(r.share.MacShare()), r.share.casts, r.max_error,
               r.p99_error, r.mean_error, Optional(r.mask_changed, 100, "%.3f%%"),
               Optional(r.topk_agreement, 100, "%.0f%%"), r.meets ? "yes" : "no", r.model_runs,
               r.seconds);
}

}  // namespace
}  // namespace ovfix::bench

int main(int argc, char** argv) {
  using namespace ovfix;
  using namespace ovfix::bench;
  int scale = 1, mlp_blocks = 640;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--scale" && i + 1 < argc) {
      scale = std::atoi(argv[++i]);
    } else if (arg == "--mlp-blocks" && i + 1 < argc) {
      mlp_blocks = std::atoi(argv[++i]);
    } else if (arg == "--certify" && i + 1 < argc) {
      g_certify = std::string(argv[++i]) != "off";
    } else {
      names.push_back(arg);
    }
  }
  const std::vector<std::string> shared = {"gfpgan_modconv",     "hand_softmax",  "resnet18",
                                           "mobilenet_v3_small", "deep_residual", "silero_vad",
                                           "ddff_squeeze",       "trt_broadcast", "conv3d_991"};
  const std::vector<std::string> ours = {"ocr_detector", "ctc_recognizer", "classifier",
                                         "residual_mlp", "segmentation"};
  if (names.empty()) {
    names = ours;
    names.insert(names.end(), shared.begin(), shared.end());
  }
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("ovfix_fp16_bench_", ::getpid());
  fs::create_directories(dir);
  std::printf(
      "| model | policy | fp32 nodes | fp32 MACs | Casts | max err (range) | p99 err | mean err | "
      "mask changed | top-k agree | meets criteria | model runs | wall s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int comparable = 0, met = 0;
  for (const std::string& name : names) {
    absl::StatusOr<Case> c;
    if (name == "convnext_t") {
      c = ConvNextTCase(dir);
    } else if (name == "ocr_detector" || name == "ctc_recognizer" || name == "classifier" ||
               name == "segmentation" || name == "residual_mlp") {
      absl::StatusOr<test_models::Fp16TestModel> m =
          name == "ocr_detector"     ? test_models::OcrDetector(scale)
          : name == "ctc_recognizer" ? test_models::CtcRecognizer(scale)
          : name == "classifier"     ? test_models::Classifier(scale)
          : name == "segmentation"   ? test_models::Segmentation(scale)
                                     : test_models::ResidualMlp(mlp_blocks);
      if (!m.ok()) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), std::string(m.status().message()).c_str());
        continue;
      }
      c = TestModelCase(*std::move(m), dir);
    } else {
      if (!fs::exists(std::string(OVFIX_SHARED_DIR) + "/models/" + name + "/test_data_set_0")) {
        continue;
      }
      c = SharedCase(name);
    }
    if (!c.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), std::string(c.status().message()).c_str());
      continue;
    }
    absl::StatusOr<std::vector<Tensor>> expected = RunAsFloat(*c->model, c->inputs);
    if (!expected.ok()) continue;
    const Result ovfix = Convert(*c, *expected, false);
    const Result policy = Convert(*c, *expected, true);
    PrintRow(name, "ovfix", ovfix);
    PrintRow(name, "magnitude", policy);
    if (ovfix.ok && policy.ok) {
      const bool policy_meets = policy.meets;
      auto bound = [&](double p) { return !policy_meets ? 0.15 : p == 0 ? 0.10 : p + 0.05; };
      const bool ok = ovfix.share.NodeShare() <= bound(policy.share.NodeShare()) &&
                      ovfix.share.MacShare() <= bound(policy.share.MacShare());
      ++comparable;
      met += ok;
      std::fflush(stdout);
    }
  }
  std::printf(
      "\nwithin the bound (policy + 5 points, 10 %% where it keeps nothing, 15 %% where it "
      "fails the criterion): %d of %d\n",
      met, comparable);
  fs::remove_all(dir);
  return 0;
}
