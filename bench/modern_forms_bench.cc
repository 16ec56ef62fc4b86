// The CPU executor on the opset-18+ forms of a model against the same model (same weights,
// same inputs) at opset 17, and onnxruntime on the opset-18+ form in the same run. Models
// built here in the style of bench/exporter_models.cc:
//   cnn       a small CNN (224x224) with squeeze-excitation and global pooling by ReduceMean over
//             H, W and channel-split blocks: at 17 axes as an attribute and Split by a `split`
//             input; at 18 axes as an input and Split<num_outputs = 2>;
//   encoder   two post-norm transformer encoder layers (hidden 256, 4 heads, 128 tokens, GELU MLP
//             of 1024): at 17 decomposed LayerNorm, Erf GELU, MatMul/Softmax/MatMul attention;
//             at 23 LayerNormalization, Gelu-20, Attention-23;
//   decoder   two pre-norm causal decoder layers with RMSNorm (hidden 256, 4 heads, 128 tokens,
//             SiLU-gated MLP of 768): at 17 decomposed RMSNorm (Pow/ReduceMean<axes>/Add/Sqrt/
//             Div/Mul) and attention with an additive -inf causal mask; at 23 RMSNormalization-23
//             and Attention-23<is_causal = 1>; "18-decomposed" is the opset-18 export of the same
//             (what an exporter writes between opset 18 and 22: RMSNorm decomposed with
//             ReduceMean's axes an input);
// and single ops, the decomposed pattern that the session graph fuses into an ovfix.fused node
// against the standard op: op_gelu ([4, 128, 1024]), op_layernorm and op_rmsnorm
// ([16, 128, 256]), op_attention and op_attention_causal (Q, K, V [4, 4, 128, 64]).
// Each form runs as `ovfix run` runs it (the optimized session graph); the forms of one model
// are measured in rounds, round-major, so that a busy spell of the shared machine slows all of
// them. Reports per form the best and median time per run, the ratio to the opset-17 form,
// onnxruntime's best time on the opset-18+ form and ovfix's ratio to it, and how far each
// form's outputs are from the opset-17 form's.
//
//   npm install --prefix build/ort --ignore-scripts onnxruntime-node@1.30.0   (once, optional)
//   build/bench/ovfix_bench_modern_forms [--threads 2] [--rounds 3] [--ort-repeat 10]
//       [--models cnn,encoder,...] [--benchmark_min_time 0.2]
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "bench/model_builder.h"
#include "bench/ort_peer.h"
#include "benchmark/benchmark.h"
#include "converter/session_graph.h"
#include "exec/executor.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"

namespace fs = std::filesystem;

namespace ovfix::bench {
namespace {

using B = ModelBuilder;

// The forms of a model.
enum class Form { kOpset17, kModern, kOpset18Decomposed };

// A ModelBuilder whose weights are drawn from a generator of their own, so that two forms of a
// model that ask for the same weights in the same order get the same values whatever else
// (literals, masks) each form adds.
class Net {
 public:
  Net(Form form, int modern_opset)
      : form_(form),
        b_(form == Form::kOpset17 ? 17 : (form == Form::kModern ? modern_opset : 18)) {}

  B& b() { return b_; }
  Form form() const { return form_; }
  bool modern() const { return form_ == Form::kModern; }
  bool axes_as_input() const { return form_ != Form::kOpset17; }

  std::string Weight(const std::vector<int64_t>& dims, float scale) {
    const std::string name = b_.Weight(dims, 0.0f);
    weights_.push_back({name, scale});
    return name;
  }

  // ReduceMean over `axes`: an attribute at 17, an input from 18.
  std::string ReduceMean(const std::string& x, const std::vector<int64_t>& axes, bool keepdims) {
    if (axes_as_input()) {
      return b_.Op("ReduceMean", {x, b_.Int64s(axes)}, {B::Int("keepdims", keepdims ? 1 : 0)});
    }
    return b_.Op("ReduceMean", {x}, {B::Ints("axes", axes), B::Int("keepdims", keepdims ? 1 : 0)});
  }

  // The model with every weight filled from a generator seeded with `seed`.
  onnx::ModelProto Finish(uint32_t seed) const {
    onnx::ModelProto m = b_.model();
    std::map<std::string, float> scale;
    for (const auto& [name, s] : weights_) scale[name] = s;
    std::mt19937 random(seed);
    std::map<std::string, onnx::TensorProto*> by_name;
    for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) by_name[t.name()] = &t;
    for (const auto& [name, s] : weights_) {
      onnx::TensorProto* t = by_name.at(name);
      std::uniform_real_distribution<float> uniform(-s, s);
      float* v = reinterpret_cast<float*>(t->mutable_raw_data()->data());
      for (size_t i = 0; i < t->raw_data().size() / sizeof(float); ++i) v[i] = uniform(random);
    }
    return m;
  }

 private:
  Form form_;
  B b_;
  std::vector<std::pair<std::string, float>> weights_;
};

// --- building blocks, each in the form of the net ---

std::string Linear(Net& n, const std::string& x, int64_t in, int64_t out, bool bias = true) {
  const std::string y = n.b().Op("MatMul", {x, n.Weight({in, out}, std::sqrt(3.0f / in))});
  return bias ? n.b().Op("Add", {y, n.Weight({out}, 0.02f)}) : y;
}

std::string Conv(Net& n, const std::string& x, int64_t in, int64_t out, int64_t kernel,
                 int64_t stride = 1, int64_t group = 1) {
  const std::string w =
      n.Weight({out, in / group, kernel, kernel}, std::sqrt(3.0f / (in / group * kernel * kernel)));
  const std::string bias = n.Weight({out}, 0.05f);
  const int64_t pad = kernel / 2;
  return n.b().Op("Conv", {x, w, bias},
                  {B::Ints("kernel_shape", {kernel, kernel}), B::Ints("strides", {stride, stride}),
                   B::Ints("pads", {pad, pad, pad, pad}), B::Int("group", group)});
}

// torch.nn.LayerNorm over the last axis: decomposed at 17 (as exporters below 17 write it; the
// session graph fuses it), LayerNormalization in the modern form.
std::string LayerNorm(Net& n, const std::string& x, int64_t width) {
  B& b = n.b();
  const std::string scale = b.Fill({width}, 1.0f), bias = n.Weight({width}, 0.02f);
  if (n.modern()) {
    return b.Op("LayerNormalization", {x, scale, bias},
                {B::Int("axis", -1), B::Float("epsilon", 1e-5f)});
  }
  const std::string centered = b.Op("Sub", {x, n.ReduceMean(x, {-1}, true)});
  const std::string square = b.Op("Pow", {centered, b.Fill({}, 2.0f)});
  const std::string variance = n.ReduceMean(square, {-1}, true);
  const std::string deviation = b.Op("Sqrt", {b.Op("Add", {variance, b.Fill({}, 1e-5f)})});
  return b.Op("Add", {b.Op("Mul", {b.Op("Div", {centered, deviation}), scale}), bias});
}

// RMSNorm as LLaMA-style code writes it: decomposed below opset 23, RMSNormalization-23 after.
std::string RmsNorm(Net& n, const std::string& x, int64_t width) {
  B& b = n.b();
  const std::string scale = n.Weight({width}, 1.0f);
  if (n.modern()) {
    return b.Op("RMSNormalization", {x, scale}, {B::Int("axis", -1), B::Float("epsilon", 1e-6f)});
  }
  const std::string mean = n.ReduceMean(b.Op("Pow", {x, b.Fill({}, 2.0f)}), {-1}, true);
  const std::string root = b.Op("Sqrt", {b.Op("Add", {mean, b.Fill({}, 1e-6f)})});
  return b.Op("Mul", {b.Op("Div", {x, root}), scale});
}

// nn.GELU(): x * 0.5 * (1 + erf(x / sqrt 2)) below opset 20, Gelu-20 after.
std::string Gelu(Net& n, const std::string& x) {
  B& b = n.b();
  if (n.modern()) return b.Op("Gelu", {x});
  const std::string erf = b.Op("Erf", {b.Op("Div", {x, b.Fill({}, std::sqrt(2.0f))})});
  const std::string half = b.Op("Mul", {x, b.Fill({}, 0.5f)});
  return b.Op("Mul", {half, b.Op("Add", {erf, b.Fill({}, 1.0f)})});
}

// Scaled dot-product attention on q, k, v [batch, heads, tokens, head width]: MatMul, Mul by
// 1/sqrt(d), an additive causal mask of -inf when `causal`, Softmax, MatMul below opset 23;
// Attention-23 (is_causal) after.
std::string Attention(Net& n, const std::string& q, const std::string& k, const std::string& v,
                      int64_t tokens, int64_t head_width, bool causal) {
  B& b = n.b();
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_width));
  if (n.modern()) {
    return b.Op("Attention", {q, k, v},
                {B::Float("scale", scale), B::Int("is_causal", causal ? 1 : 0)});
  }
  const std::string kt = b.Op("Transpose", {k}, {B::Ints("perm", {0, 1, 3, 2})});
  std::string scores = b.Op("Mul", {b.Op("MatMul", {q, kt}), b.Fill({}, scale)});
  if (causal) {
    std::vector<float> mask(tokens * tokens, 0.0f);
    for (int64_t i = 0; i < tokens; ++i) {
      for (int64_t j = i + 1; j < tokens; ++j) {
        mask[i * tokens + j] = -std::numeric_limits<float>::infinity();
      }
    }
    const std::string square = b.Op("Reshape", {b.Floats(mask), b.Int64s({1, 1, tokens, tokens})});
    scores = b.Op("Add", {scores, square});
  }
  return b.Op("MatMul", {b.Op("Softmax", {scores}, {B::Int("axis", -1)}), v});
}

// [batch, tokens, width] -> [batch, heads, tokens, width / heads] and back.
std::string SplitHeads(Net& n, const std::string& x, int64_t batch, int64_t tokens, int64_t heads,
                       int64_t head_width) {
  B& b = n.b();
  const std::string r = b.Op("Reshape", {x, b.Int64s({batch, tokens, heads, head_width})});
  return b.Op("Transpose", {r}, {B::Ints("perm", {0, 2, 1, 3})});
}
std::string MergeHeads(Net& n, const std::string& x, int64_t batch, int64_t tokens, int64_t width) {
  B& b = n.b();
  const std::string t = b.Op("Transpose", {x}, {B::Ints("perm", {0, 2, 1, 3})});
  return b.Op("Reshape", {t, b.Int64s({batch, tokens, width})});
}

std::string SelfAttention(Net& n, const std::string& x, int64_t batch, int64_t tokens,
                          int64_t width, int64_t heads, bool causal) {
  const int64_t d = width / heads;
  const std::string q = SplitHeads(n, Linear(n, x, width, width), batch, tokens, heads, d);
  const std::string k = SplitHeads(n, Linear(n, x, width, width), batch, tokens, heads, d);
  const std::string v = SplitHeads(n, Linear(n, x, width, width), batch, tokens, heads, d);
  const std::string a = Attention(n, q, k, v, tokens, d, causal);
  return Linear(n, MergeHeads(n, a, batch, tokens, width), width, width);
}

// --- the models ---

constexpr int64_t kTokens = 128, kWidth = 256, kHeads = 4;

onnx::ModelProto Encoder(Form form) {
  Net n(form, 23);
  B& b = n.b();
  std::string x = b.Input("x", {1, kTokens, kWidth});
  for (int layer = 0; layer < 2; ++layer) {
    x = LayerNorm(n, b.Op("Add", {x, SelfAttention(n, x, 1, kTokens, kWidth, kHeads, false)}),
                  kWidth);
    const std::string mlp =
        Linear(n, Gelu(n, Linear(n, x, kWidth, 4 * kWidth)), 4 * kWidth, kWidth);
    x = LayerNorm(n, b.Op("Add", {x, mlp}), kWidth);
  }
  b.Output(x);
  return n.Finish(11);
}

onnx::ModelProto Decoder(Form form) {
  Net n(form, 23);
  B& b = n.b();
  constexpr int64_t kHidden = 768;
  std::string x = b.Input("x", {1, kTokens, kWidth});
  for (int layer = 0; layer < 2; ++layer) {
    x = b.Op("Add", {x, SelfAttention(n, RmsNorm(n, x, kWidth), 1, kTokens, kWidth, kHeads, true)});
    const std::string h = RmsNorm(n, x, kWidth);
    const std::string gate = Linear(n, h, kWidth, kHidden, false);
    const std::string up = Linear(n, h, kWidth, kHidden, false);
    const std::string silu = b.Op("Mul", {gate, b.Op("Sigmoid", {gate})});
    x = b.Op("Add", {x, Linear(n, b.Op("Mul", {silu, up}), kHidden, kWidth, false)});
  }
  b.Output(RmsNorm(n, x, kWidth));
  return n.Finish(12);
}

// Squeeze-excitation: channel weights from the mean over H, W (ReduceMean keepdims).
std::string SqueezeExcite(Net& n, const std::string& x, int64_t channels) {
  B& b = n.b();
  const std::string pooled = n.ReduceMean(x, {2, 3}, true);
  const std::string squeezed = b.Op("Relu", {Conv(n, pooled, channels, channels / 4, 1)});
  return b.Op("Mul", {x, b.Op("Sigmoid", {Conv(n, squeezed, channels / 4, channels, 1)})});
}

// A ShuffleNet-style unit: split the channels in two halves, a depthwise-separable branch on
// one, Concat, residual add of the whole.
std::string SplitBlock(Net& n, const std::string& x, int64_t channels) {
  B& b = n.b();
  const int64_t half = channels / 2;
  std::vector<std::string> parts;
  if (n.axes_as_input()) {
    parts = b.OpWithOutputs("Split", {x}, 2, {B::Int("axis", 1), B::Int("num_outputs", 2)});
  } else {
    parts = b.OpWithOutputs("Split", {x, b.Int64s({half, half})}, 2, {B::Int("axis", 1)});
  }
  std::string branch = b.Op("Relu", {Conv(n, parts[1], half, half, 1)});
  branch = Conv(n, branch, half, half, 3, 1, half);
  branch = b.Op("Relu", {Conv(n, branch, half, half, 1)});
  const std::string joined = b.Op("Concat", {parts[0], branch}, {B::Int("axis", 1)});
  return SqueezeExcite(n, joined, channels);
}

onnx::ModelProto Cnn(Form form) {
  Net n(form, 18);
  B& b = n.b();
  std::string x = b.Input("image", {1, 3, 224, 224});
  x = b.Op("Relu", {Conv(n, x, 3, 32, 3, 2)});  // 112
  int64_t channels = 32;
  for (int64_t out : {64, 128, 256}) {  // 56, 28, 14
    x = b.Op("Relu", {Conv(n, x, channels, out, 3, 2)});
    channels = out;
    x = SplitBlock(n, x, channels);
    x = SplitBlock(n, x, channels);
  }
  const std::string pooled = n.ReduceMean(x, {2, 3}, false);  // [1, 256]
  b.Output(Linear(n, pooled, channels, 1000));
  return n.Finish(13);
}

onnx::ModelProto OpGelu(Form form) {
  Net n(form, 20);
  const std::string x = n.b().Input("x", {4, kTokens, 4 * kWidth});
  n.b().Output(Gelu(n, x));
  return n.Finish(14);
}

onnx::ModelProto OpLayerNorm(Form form) {
  Net n(form, 23);
  const std::string x = n.b().Input("x", {16, kTokens, kWidth});
  n.b().Output(LayerNorm(n, x, kWidth));
  return n.Finish(15);
}

onnx::ModelProto OpRmsNorm(Form form) {
  Net n(form, 23);
  const std::string x = n.b().Input("x", {16, kTokens, kWidth});
  n.b().Output(RmsNorm(n, x, kWidth));
  return n.Finish(16);
}

onnx::ModelProto OpAttention(Form form, bool causal) {
  Net n(form, 23);
  B& b = n.b();
  const int64_t d = kWidth / kHeads;
  const std::string q = b.Input("q", {4, kHeads, kTokens, d});
  const std::string k = b.Input("k", {4, kHeads, kTokens, d});
  const std::string v = b.Input("v", {4, kHeads, kTokens, d});
  b.Output(Attention(n, q, k, v, kTokens, d, causal));
  return n.Finish(17);
}

const char* FormName(Form form) {
  switch (form) {
    case Form::kOpset17:
      return "17";
    case Form::kModern:
      return "18+";
    case Form::kOpset18Decomposed:
      return "18-decomposed";
  }
  return "";
}

struct Spec {
  std::string name;
  std::vector<Form> forms;  // the first is the baseline (opset 17)
  onnx::ModelProto (*build)(Form);
};

const std::vector<Spec>& Specs() {
  static const std::vector<Spec> specs = {
      {"cnn", {Form::kOpset17, Form::kModern}, &Cnn},
      {"encoder", {Form::kOpset17, Form::kModern}, &Encoder},
      {"decoder", {Form::kOpset17, Form::kModern, Form::kOpset18Decomposed}, &Decoder},
      {"op_gelu", {Form::kOpset17, Form::kModern}, &OpGelu},
      {"op_layernorm", {Form::kOpset17, Form::kModern}, &OpLayerNorm},
      {"op_rmsnorm", {Form::kOpset17, Form::kModern, Form::kOpset18Decomposed}, &OpRmsNorm},
      {"op_attention",
       {Form::kOpset17, Form::kModern},
       [](Form f) { return OpAttention(f, false); }},
      {"op_attention_causal",
       {Form::kOpset17, Form::kModern},
       [](Form f) { return OpAttention(f, true); }},
  };
  return specs;
}

// --- running ---

struct Variant {
  std::string model, form;
  std::string file;
  std::vector<std::string> input_files;
  std::unique_ptr<Model> model_ir;
  exec::TensorMap inputs;
  converter::RunSession run;
  std::vector<Tensor> outputs;
  std::string graph_summary;  // the session graph's ops of interest
  std::vector<double> times_ms;
};

// The ops of the session graph that tell which kernels run: fused nodes and the standard ops
// of the modern forms, with counts.
std::string Summarize(const Graph& g) {
  std::map<std::string, int> counts;
  for (const Node* node : g.nodes()) {
    const std::string& op = node->op_type();
    if (node->domain() == converter::kFusedDomain) {
      counts["fused." + op]++;
    } else if (op == "Attention" || op == "Gelu" || op == "RMSNormalization" ||
               op == "LayerNormalization" || op == "ReduceMean" || op == "Softmax" || op == "Erf" ||
               op == "Split") {
      counts[op]++;
    }
  }
  std::string s = std::to_string(g.num_nodes()) + " nodes:";
  for (const auto& [op, c] : counts) s += " " + op + "x" + std::to_string(c);
  return s;
}

// Writes the model and seeded random inputs (the same for every form of a model) into `dir`,
// loads it and makes its session as `ovfix run` does.
bool Prepare(Variant& v, const onnx::ModelProto& proto, const fs::path& dir, int threads) {
  fs::create_directories(dir);
  v.file = (dir / "model.onnx").string();
  std::ofstream(v.file, std::ios::binary) << proto.SerializeAsString();
  auto model = LoadModel(v.file);
  if (!model.ok()) {
    std::fprintf(stderr, "bench: %s %s: %s\n", v.model.c_str(), v.form.c_str(),
                 std::string(model.status().message()).c_str());
    return false;
  }
  v.model_ir = *std::move(model);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int i = 0; i < proto.graph().input_size(); ++i) {
    std::vector<int64_t> dims;
    for (const auto& d : proto.graph().input(i).type().tensor_type().shape().dim()) {
      dims.push_back(d.dim_value());
    }
    Tensor t = Tensor::Uninitialized(DataType::kFloat, dims);
    for (float& x : std::span<float>(t.data<float>(), t.numel())) x = uniform(random);
    const std::string file = (dir / ("input_" + std::to_string(i) + ".pb")).string();
    if (!WriteTensorFile(file, t, proto.graph().input(i).name()).ok()) return false;
    v.input_files.push_back(file);
    v.inputs[proto.graph().input(i).name()] = std::move(t);
  }
  exec::SessionOptions options;
  options.threads = threads;
  std::string note;
  auto run = converter::CreateRunSession(*v.model_ir, v.inputs, options, false, &note);
  if (!run.ok()) {
    std::fprintf(stderr, "bench: %s %s: %s\n", v.model.c_str(), v.form.c_str(),
                 std::string(run.status().message()).c_str());
    return false;
  }
  if (!note.empty())
    std::fprintf(stderr, "bench: %s %s: %s\n", v.model.c_str(), v.form.c_str(), note.c_str());
  v.run = *std::move(run);
  v.graph_summary = Summarize(v.run.graph ? v.run.graph->graph() : v.model_ir->graph());
  auto out = v.run.session->Run(v.inputs);  // untimed; its outputs are compared
  if (!out.ok()) {
    std::fprintf(stderr, "bench: %s %s: %s\n", v.model.c_str(), v.form.c_str(),
                 std::string(out.status().message()).c_str());
    return false;
  }
  v.outputs = *std::move(out);
  return true;
}

// Largest |a - b| over the outputs, relative to the range of b.
double RelativeDifference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i].numel() != b[i].numel()) return -1;
    float lo = 0, hi = 0, diff = 0;
    for (int64_t k = 0; k < b[i].numel(); ++k) {
      const float t = b[i].data<float>()[k];
      lo = std::min(lo, t);
      hi = std::max(hi, t);
      diff = std::max(diff, std::abs(t - a[i].data<float>()[k]));
    }
    worst = std::max<double>(worst, diff / std::max(hi - lo, 1e-6f));
  }
  return worst;
}

// Google Benchmark's console report, with every run's real time per form kept (runs of the same
// name in several rounds collect together).
class Reporter : public benchmark::ConsoleReporter {
 public:
  explicit Reporter(std::map<std::string, Variant*> by_name) : by_name_(std::move(by_name)) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      auto it = by_name_.find(r.run_name.function_name);
      if (it != by_name_.end()) it->second->times_ms.push_back(r.GetAdjustedRealTime());
    }
    ConsoleReporter::ReportRuns(runs);
  }

 private:
  std::map<std::string, Variant*> by_name_;
};

void BM_Run(benchmark::State& state, Variant* v) {
  for (auto _ : state) {
    auto out = v->run.session->Run(v->inputs);
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
  }
}

double Best(const std::vector<double>& t) {
  return t.empty() ? -1 : *std::min_element(t.begin(), t.end());
}
double Median(std::vector<double> t) {
  if (t.empty()) return -1;
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string StringFlag(int argc, char** argv, const std::string& flag, std::string fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == flag) fallback = argv[i + 1];
  }
  return fallback;
}

int Main(int argc, char** argv) {
  const int threads = std::atoi(StringFlag(argc, argv, "--threads", "2").c_str());
  const int rounds = std::max(1, std::atoi(StringFlag(argc, argv, "--rounds", "3").c_str()));
  const int ort_repeat =
      std::max(1, std::atoi(StringFlag(argc, argv, "--ort-repeat", "10").c_str()));
  std::vector<std::string> wanted;
  for (const Spec& s : Specs()) wanted.push_back(s.name);
  const std::string models_flag = StringFlag(argc, argv, "--models", "");
  if (!models_flag.empty()) wanted = absl::StrSplit(models_flag, ',');

  const fs::path scratch =
      fs::temp_directory_path() / ("ovfix_bench_modern_forms_" + std::to_string(::getpid()));
  // Per model, its forms (the first the opset-17 baseline).
  std::vector<std::vector<std::unique_ptr<Variant>>> models;
  std::map<std::string, Variant*> by_name;
  for (const std::string& name : wanted) {
    const auto spec =
        std::find_if(Specs().begin(), Specs().end(), [&](const Spec& s) { return s.name == name; });
    if (spec == Specs().end()) {
      std::fprintf(stderr, "bench: no model %s\n", name.c_str());
      return 2;
    }
    models.emplace_back();
    for (Form form : spec->forms) {
      auto v = std::make_unique<Variant>();
      v->model = name;
      v->form = FormName(form);
      if (!Prepare(*v, spec->build(form), scratch / (name + "_" + v->form), threads)) return 1;
      by_name[name + "/" + v->form] = v.get();
      models.back().push_back(std::move(v));
    }
  }
  // Round-major: every form of every model once per round.
  for (int round = 0; round < rounds; ++round) {
    for (auto& forms : models) {
      for (auto& v : forms) {
        benchmark::RegisterBenchmark((v->model + "/" + v->form).c_str(), BM_Run, v.get())
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  Reporter reporter(by_name);
  benchmark::RunSpecifiedBenchmarks(&reporter);

  const std::string ort_modules = OrtModules();
  std::printf("\nsession graphs (as `ovfix run` runs them):\n");
  for (auto& forms : models) {
    for (auto& v : forms) {
      std::printf("  %-20s %-14s %s\n", v->model.c_str(), v->form.c_str(),
                  v->graph_summary.c_str());
    }
  }
  std::printf("\n%-20s %-14s %9s %9s %8s %9s %8s %9s\n", "model (ms/run)", "form", "best", "median",
              "vs 17", "ort best", "vs ort", "rel-diff");
  double log_vs17 = 0, log_vs_ort = 0, worst_vs17 = 0, worst_vs_ort = 0;
  int count_vs17 = 0, count_vs_ort = 0;
  for (auto& forms : models) {
    const double base = Best(forms.front()->times_ms);
    for (auto& v : forms) {
      const double best = Best(v->times_ms), median = Median(v->times_ms);
      const bool baseline = v.get() == forms.front().get();
      const double vs17 = best / base;
      double ort = -1;
      if (!ort_modules.empty() && v->form == "18+") {
        ort = RunOrt(ort_modules, v->file, v->input_files, threads, ort_repeat).min_ms;
      }
      char vs17_text[32] = "", ort_text[32] = "-", vs_ort_text[32] = "-";
      if (!baseline) std::snprintf(vs17_text, sizeof(vs17_text), "%.2fx", vs17);
      if (ort > 0) {
        std::snprintf(ort_text, sizeof(ort_text), "%.3f", ort);
        std::snprintf(vs_ort_text, sizeof(vs_ort_text), "%.2fx", best / ort);
      }
      std::printf("%-20s %-14s %9.3f %9.3f %8s %9s %8s %9.2g\n", v->model.c_str(), v->form.c_str(),
                  best, median, vs17_text, ort_text, vs_ort_text,
                  baseline ? 0.0 : RelativeDifference(v->outputs, forms.front()->outputs));
      if (!baseline && v->form == "18+") {
        log_vs17 += std::log(vs17);
        worst_vs17 = std::max(worst_vs17, vs17);
        ++count_vs17;
      }
      if (ort > 0) {
        log_vs_ort += std::log(best / ort);
        worst_vs_ort = std::max(worst_vs_ort, best / ort);
        ++count_vs_ort;
      }
    }
  }
  if (count_vs17 > 0) {
    std::printf("\n18+ form against opset 17 (best runs): geometric mean %.2fx, largest %.2fx\n",
                std::exp(log_vs17 / count_vs17), worst_vs17);
  }
  if (count_vs_ort > 0) {
    const double geomean = std::exp(log_vs_ort / count_vs_ort);
    std::printf(
        "18+ form against onnxruntime (best runs): geometric mean %.2fx (target <= 1.0x: %s), "
        "largest %.2fx (target <= 1.3x: %s)\n",
        geomean, geomean <= 1.0 ? "ok" : "MISSED", worst_vs_ort,
        worst_vs_ort <= 1.3 ? "ok" : "MISSED");
  }
  std::printf("(%d threads each; %d rounds; onnxruntime best of %d runs)\n", threads, rounds,
              ort_repeat);
  fs::remove_all(scratch);
  return 0;
}

}  // namespace
}  // namespace ovfix::bench

int main(int argc, char** argv) { return ovfix::bench::Main(argc, argv); }
