#include "tests/support/fp16_models.h"

#include <cmath>
#include <map>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/model_builder.h"
#include "ir/model_io.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"

namespace ovfix::test_models {
namespace {

using bench::ModelBuilder;
using Attr = ModelBuilder::Attr;

constexpr int kOpset = 17;

// ModelBuilder plus the layers of the networks below, with trained-looking parameters.
class Net {
 public:
  explicit Net(uint32_t seed) : b_(kOpset, seed), random_(seed + 1000) {}

  ModelBuilder& b() { return b_; }

  std::string Uniform(const std::vector<int64_t>& dims, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(n);
    for (float& x : v) x = u(random_);
    const std::string flat = b_.Floats(v);
    if (dims.size() == 1) return flat;
    return b_.Op("Reshape", {flat, b_.Int64s(dims)});
  }

  // He-uniform conv weight (what trained ReLU nets keep, roughly: unit gain per layer).
  std::string ConvWeight(int64_t cin, int64_t cout, int64_t kh, int64_t kw, int64_t group = 1) {
    const float fan_in = static_cast<float>(cin / group * kh * kw);
    return b_.Weight({cout, cin / group, kh, kw}, std::sqrt(6.0f / fan_in));
  }

  std::string Conv(const std::string& x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                   bool bias) {
    const int64_t pad = k / 2;
    std::vector<std::string> in = {x, ConvWeight(cin, cout, k, k)};
    if (bias) in.push_back(b_.Weight({cout}, 0.1f));
    return b_.Op("Conv", in,
                 {ModelBuilder::Ints("kernel_shape", {k, k}),
                  ModelBuilder::Ints("strides", {stride, stride}),
                  ModelBuilder::Ints("pads", {pad, pad, pad, pad})});
  }

  // BatchNormalization with gamma in [gamma_lo, gamma_hi], beta in [-0.2, 0.2] and placeholder
  // statistics (SettleBatchNorms sets them from the data).
  std::string Bn(const std::string& x, int64_t c, float gamma_lo = 0.4f, float gamma_hi = 1.2f) {
    return b_.Op("BatchNormalization",
                 {x, Uniform({c}, gamma_lo, gamma_hi), Uniform({c}, -0.2f, 0.2f),
                  b_.Fill({c}, 0.0f), b_.Fill({c}, 1.0f)},
                 {ModelBuilder::Float("epsilon", 1e-5f)});
  }

  std::string Cbr(const std::string& x, int64_t cin, int64_t cout, int64_t k = 3,
                  int64_t stride = 1) {
    return b_.Op("Relu", {Bn(Conv(x, cin, cout, k, stride, false), cout)});
  }

  std::string MaxPool(const std::string& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw) {
    return b_.Op(
        "MaxPool", {x},
        {ModelBuilder::Ints("kernel_shape", {kh, kw}), ModelBuilder::Ints("strides", {sh, sw})});
  }

  std::string Upsample2x(const std::string& x) {
    return b_.Op("Resize", {x, "", b_.Floats({1, 1, 2, 2})},
                 {ModelBuilder::String("mode", "nearest")});
  }

  // Gemm with a [out, in] weight (transB, as torch.nn.Linear exports) scaled by `gain`.
  std::string Linear(const std::string& x, int64_t in, int64_t out, float gain = 1.0f) {
    const std::string w = b_.Weight({out, in}, gain * std::sqrt(3.0f / in));
    return b_.Op("Gemm", {x, w, b_.Weight({out}, 0.05f)}, {ModelBuilder::Int("transB", 1)});
  }

 private:
  ModelBuilder b_;
  std::mt19937 random_;
};

// (photo / 255 - mean) / std per channel, [H, W, C] -> [1, channels, H, W]; a gray photo is
// repeated over the channels.
Tensor Normalized(const Tensor& photo, int64_t channels) {
  const int64_t h = photo.dim(0), w = photo.dim(1), c = photo.dim(2);
  static const float kMean[3] = {0.485f, 0.456f, 0.406f}, kStd[3] = {0.229f, 0.224f, 0.225f};
  Tensor out(DataType::kFloat, {1, channels, h, w});
  const uint8_t* p = photo.data<uint8_t>();
  float* o = out.data<float>();
  for (int64_t ch = 0; ch < channels; ++ch) {
    for (int64_t i = 0; i < h * w; ++i) {
      const float v = p[i * c + (c == 1 ? 0 : ch % c)] / 255.0f;
      o[ch * h * w + i] = (v - kMean[ch % 3]) / kStd[ch % 3];
    }
  }
  return out;
}

absl::StatusOr<Fp16TestModel> Finish(std::string name, Net& net, std::string input_name,
                                     Tensor input, std::vector<std::string> accuracy) {
  onnx::ModelProto proto = net.b().model();
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, ModelFromProto(std::move(proto), "", name));
  Fp16TestModel m;
  m.name = std::move(name);
  m.model = std::move(model);
  m.input_name = std::move(input_name);
  m.input = std::move(input);
  m.accuracy = std::move(accuracy);
  OVFIX_RETURN_IF_ERROR(SettleBatchNorms(*m.model, {{m.input_name, m.input}}));
  return m;
}

// Per-channel mean and variance of a [N, C, ...] tensor.
std::pair<std::vector<double>, std::vector<double>> ChannelStats(const Tensor& t) {
  const int64_t n = t.dim(0), c = t.dim(1), inner = t.numel() / std::max<int64_t>(1, n * c);
  std::vector<double> mean(c), var(c);
  const float* d = t.data<float>();
  for (int64_t ch = 0; ch < c; ++ch) {
    double s = 0, s2 = 0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t i = 0; i < inner; ++i) {
        const double v = d[(b * c + ch) * inner + i];
        s += v;
        s2 += v * v;
      }
    }
    const double count = static_cast<double>(n * inner);
    mean[ch] = s / count;
    var[ch] = std::max(0.0, s2 / count - mean[ch] * mean[ch]);
  }
  return {mean, var};
}

Tensor Floats(const std::vector<double>& v) {
  std::vector<float> f(v.begin(), v.end());
  return Tensor::FromVector<float>(DataType::kFloat, {static_cast<int64_t>(f.size())}, f);
}

std::string PhotoDir() { return std::string(OVFIX_SOURCE_DIR) + "/tests/data/photos/"; }

}  // namespace

absl::StatusOr<Tensor> ReadPhoto(const std::string& file) {
  OVFIX_ASSIGN_OR_RETURN(Tensor t, ReadTensorFile(PhotoDir() + file));
  if (t.type() != DataType::kUint8 || t.rank() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": not a uint8 [H, W, C] photograph"));
  }
  return t;
}

absl::StatusOr<Tensor> ResizedPhoto(const std::string& file, int64_t size, float scale,
                                    float offset) {
  OVFIX_ASSIGN_OR_RETURN(Tensor photo, ReadPhoto(file));
  Tensor t(DataType::kFloat, {1, 3, size, size});
  const int64_t h = photo.dim(0), w = photo.dim(1), c = photo.dim(2);
  for (int64_t ch = 0; ch < 3; ++ch) {
    for (int64_t y = 0; y < size; ++y) {
      for (int64_t x = 0; x < size; ++x) {
        const uint8_t v = photo.data<uint8_t>()[((y * h / size) * w + x * w / size) * c + ch % c];
        t.data<float>()[(ch * size + y) * size + x] = v * scale + offset;
      }
    }
  }
  return t;
}

absl::Status SettleBatchNorms(Model& model, const exec::TensorMap& inputs) {
  // BatchNormalization input name -> its mean and variance values.
  std::map<std::string, std::pair<Value*, Value*>> norms;
  for (Node* n : model.graph().NodeList()) {
    if (n->op_type() == "BatchNormalization") {
      norms[n->input(0)->name()] = {n->input(3), n->input(4)};
    }
  }
  // Each round settles at least one more layer (the first whose input no longer moves);
  // stop when a round changes every mean and deviation by less than 0.1 %.
  for (size_t round = 0; round <= norms.size(); ++round) {
    std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> stats;
    exec::SessionOptions options;
    options.threads = 2;
    options.on_value = [&](const Value& v, const Tensor& t) {
      if (norms.contains(v.name())) stats[v.name()] = ChannelStats(t);
    };
    OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<exec::Session> session,
                           exec::CreateSession(model, options));
    OVFIX_RETURN_IF_ERROR(session->Run(inputs).status());
    double moved = 0;
    for (auto& [name, mv] : stats) {
      auto& [mean_value, var_value] = norms[name];
      const Tensor& old_mean = mean_value->tensor();
      const Tensor& old_var = var_value->tensor();
      for (size_t c = 0; c < mv.first.size(); ++c) {
        const double sd = std::sqrt(mv.second[c] + 1e-5);
        moved = std::max(moved, std::abs(mv.first[c] - old_mean.GetAsDouble(c)) / sd);
        moved = std::max(moved, std::abs(std::sqrt(old_var.GetAsDouble(c) + 1e-5) - sd) / sd);
      }
      mean_value->set_tensor(Floats(mv.first));
      var_value->set_tensor(Floats(mv.second));
    }
    if (moved < 1e-3) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<Fp16TestModel> OcrDetector(int scale) {
  Net net(24);
  ModelBuilder& b = net.b();
  const int64_t s = scale;
  const std::string x = b.Input("image", {1, 3, 96, 192});
  // Each stage: a stride-2 conv, then two residual conv pairs.
  auto stage = [&](const std::string& in, int64_t cin, int64_t cout) {
    std::string t = net.Cbr(in, cin, cout, 3, 2);
    for (int i = 0; i < 2; ++i) {
      const std::string r = net.Bn(net.Conv(net.Cbr(t, cout, cout), cout, cout, 3, 1, false), cout);
      t = b.Op("Relu", {b.Op("Add", {t, r})});
    }
    return t;
  };
  const std::string c2 = stage(x, 3, 16 * s);        // 48x96
  const std::string c3 = stage(c2, 16 * s, 32 * s);  // 24x48
  const std::string c4 = stage(c3, 32 * s, 64 * s);  // 12x24
  const std::string c5 = stage(c4, 64 * s, 96 * s);  // 6x12
  // FPN to 1/4 resolution.
  const int64_t f = 32 * s;
  const std::string in5 = net.Conv(c5, 96 * s, f, 1, 1, false);
  const std::string in4 = b.Op("Add", {net.Conv(c4, 64 * s, f, 1, 1, false), net.Upsample2x(in5)});
  const std::string in3 = b.Op("Add", {net.Conv(c3, 32 * s, f, 1, 1, false), net.Upsample2x(in4)});
  const std::string p3 = net.Conv(in3, f, f, 3, 1, false);
  // DB head: conv-BN-relu, two ConvTranspose x2 upsamplings, sigmoid.
  const std::string h1 = net.Cbr(p3, f, f / 2);
  const std::string up1 = b.Op(
      "ConvTranspose",
      {h1, b.Weight({f / 2, f / 2, 2, 2}, std::sqrt(6.0f / (f / 2 * 4))), b.Weight({f / 2}, 0.1f)},
      {ModelBuilder::Ints("kernel_shape", {2, 2}), ModelBuilder::Ints("strides", {2, 2})});
  const std::string head_bn = net.Bn(up1, f / 2);
  const std::string h2 = b.Op("Relu", {head_bn});
  // A trained DB head is confident: its logits spread over about +-15.
  const std::string logits = b.Op(
      "ConvTranspose",
      {h2, b.Weight({f / 2, 1, 2, 2}, 4.0f * std::sqrt(6.0f / (f / 2 * 4))), b.Fill({1}, -3.0f)},
      {ModelBuilder::Ints("kernel_shape", {2, 2}), ModelBuilder::Ints("strides", {2, 2})});
  const std::string map = b.Op("Sigmoid", {logits});
  b.Output(map);
  OVFIX_ASSIGN_OR_RETURN(Tensor photo, ReadPhoto("page_96x192.pb"));
  OVFIX_ASSIGN_OR_RETURN(Fp16TestModel m, Finish("ocr_detector", net, x, Normalized(photo, 3),
                                                 {map + "=mask@0.3:0.001"}));
  // A channel of the head's BatchNormalization that training left with a huge running
  // variance (PaddleOCR v4's detector has 9.79e7): the channel is all but constant.
  for (Node* n : m.model->graph().NodeList()) {
    if (n->op_type() == "BatchNormalization" && n->output(0)->name() == head_bn) {
      Tensor var = n->input(4)->tensor().Clone();
      var.data<float>()[1] = 9.79e7f;
      n->input(4)->set_tensor(std::move(var));
    }
  }
  return m;
}

absl::StatusOr<Fp16TestModel> CtcRecognizer(int scale) {
  Net net(25);
  ModelBuilder& b = net.b();
  const int64_t s = scale;
  const std::string x = b.Input("line", {1, 3, 32, 128});
  std::string t = net.MaxPool(net.Cbr(x, 3, 32 * s), 2, 2, 2, 2);  // 16x64
  t = net.MaxPool(net.Cbr(t, 32 * s, 64 * s), 2, 2, 2, 2);         // 8x32
  t = net.MaxPool(net.Cbr(t, 64 * s, 96 * s), 2, 1, 2, 1);         // 4x32
  t = net.MaxPool(net.Cbr(t, 96 * s, 128 * s), 2, 1, 2, 1);        // 2x32
  t = net.MaxPool(net.Cbr(t, 128 * s, 128 * s), 2, 1, 2, 1);       // 1x32
  const int64_t c = 128 * s;
  t = b.Op("Reshape", {t, b.Int64s({1, c, 32})});
  t = b.Op("Transpose", {t}, {ModelBuilder::Ints("perm", {0, 2, 1})});  // [1, 32, C]
  // Two SVTR-style global mixing blocks over the 32 columns (pre-norm attention with 4
  // heads, then a swish MLP), as PaddleOCR v4's recognizer has before its CTC head.
  const int64_t heads = 4, dh = c / heads;
  auto norm = [&](const std::string& in) {
    return b.Op("LayerNormalization",
                {in, net.Uniform({c}, 0.6f, 1.2f), net.Uniform({c}, -0.1f, 0.1f)},
                {ModelBuilder::Int("axis", -1)});
  };
  auto dense = [&](const std::string& in, int64_t din, int64_t dout, float gain) {
    const std::string w = b.Weight({din, dout}, gain * std::sqrt(3.0f / din));
    return b.Op("Add", {b.Op("MatMul", {in, w}), b.Weight({dout}, 0.05f)});
  };
  auto split_heads = [&](const std::string& in, std::vector<int64_t> perm) {
    const std::string r = b.Op("Reshape", {in, b.Int64s({1, 32, heads, dh})});
    return b.Op("Transpose", {r}, {ModelBuilder::Ints("perm", std::move(perm))});
  };
  for (int block = 0; block < 2; ++block) {
    const std::string n1 = norm(t);
    const std::string q = split_heads(dense(n1, c, c, 1.5f), {0, 2, 1, 3});  // [1, H, 32, dh]
    const std::string k = split_heads(dense(n1, c, c, 1.5f), {0, 2, 3, 1});  // [1, H, dh, 32]
    const std::string v = split_heads(dense(n1, c, c, 1.0f), {0, 2, 1, 3});
    const std::string scores =
        b.Op("Mul", {b.Op("MatMul", {q, k}), b.Floats({1.0f / std::sqrt(float(dh))})});
    const std::string attention = b.Op("Softmax", {scores}, {ModelBuilder::Int("axis", -1)});
    std::string o = b.Op("MatMul", {attention, v});
    o = b.Op("Transpose", {o}, {ModelBuilder::Ints("perm", {0, 2, 1, 3})});
    o = b.Op("Reshape", {o, b.Int64s({1, 32, c})});
    t = b.Op("Add", {t, dense(o, c, c, 0.5f)});
    const std::string h = dense(norm(t), c, 2 * c, 1.0f);
    const std::string swish = b.Op("Mul", {h, b.Op("Sigmoid", {h})});
    t = b.Op("Add", {t, dense(swish, 2 * c, c, 0.5f)});
  }
  t = norm(t);
  const std::string w1 = b.Weight({c, 96}, std::sqrt(6.0f / c));
  t = b.Op("Relu", {b.Op("Add", {b.Op("MatMul", {t, w1}), b.Weight({96}, 0.05f)})});
  // Class logits scaled like a trained CTC head's (confident columns: logits spread ~10).
  const std::string w2 = b.Weight({96, 97}, 3.0f * std::sqrt(3.0f / 96));
  t = b.Op("Add", {b.Op("MatMul", {t, w2}), b.Weight({97}, 0.5f)});
  const std::string probs = b.Op("Softmax", {t}, {ModelBuilder::Int("axis", -1)});
  b.Output(probs);
  OVFIX_ASSIGN_OR_RETURN(Tensor photo, ReadPhoto("page_line_32x128.pb"));
  return Finish("ctc_recognizer", net, x, Normalized(photo, 3), {probs + "=top1:0"});
}

// The range of the gammas that end a classifier's residual branch (see Classifier).
constexpr float kResidualGammaLo = 0.1f, kResidualGammaHi = 0.4f;

absl::StatusOr<Fp16TestModel> Classifier(int scale) {
  Net net(26);
  ModelBuilder& b = net.b();
  const int64_t s = scale;
  const std::string x = b.Input("image", {1, 3, 96, 96});
  std::string t = net.Cbr(x, 3, 16 * s, 7, 2);  // 48x48
  t = b.Op("MaxPool", {t},
           {ModelBuilder::Ints("kernel_shape", {3, 3}), ModelBuilder::Ints("strides", {2, 2}),
            ModelBuilder::Ints("pads", {1, 1, 1, 1})});  // 24x24
  // ResNet-50's stages: 3, 4, 6 and 3 bottleneck blocks (1x1 down, 3x3, 1x1 up 4x).
  int64_t cin = 16 * s;
  const int depth[] = {3, 4, 6, 3};
  for (int64_t stage = 0; stage < 4; ++stage) {
    const int64_t mid = (16 << stage) * s, cout = 4 * mid;
    for (int block = 0; block < depth[stage]; ++block) {
      const int64_t stride = stage > 0 && block == 0 ? 2 : 1;
      std::string shortcut = t;
      if (stride != 1 || cin != cout) {
        shortcut = net.Bn(net.Conv(t, cin, cout, 1, stride, false), cout);
      }
      std::string r = net.Cbr(t, cin, mid, 1, 1);
      r = net.Cbr(r, mid, mid, 3, stride);
      // A trained ResNet's last BatchNormalization of a block has small gammas (torchvision
      // starts them at 0 with zero_init_residual; trained, most stay well below 1): each
      // block adds a small correction to the stream instead of a unit-variance one.
      r = net.Bn(net.Conv(r, mid, cout, 1, 1, false), cout, kResidualGammaLo, kResidualGammaHi);
      t = b.Op("Relu", {b.Op("Add", {r, shortcut})});
      cin = cout;
    }
  }
  t = b.Op("Flatten", {b.Op("GlobalAveragePool", {t})});
  // Logits spread like a trained ImageNet classifier's (a few units, the top ones well apart).
  const std::string logits = net.Linear(t, cin, 1000, 4.0f);
  b.Output(logits);
  OVFIX_ASSIGN_OR_RETURN(Tensor photo, ReadPhoto("chelsea_96.pb"));
  // Judged by its top 5 classes, and by the default criteria of fp16 conversions
  // (converter/accuracy.h: max:0.1,p99:0.01,mean:0.002 for 1000 logits) as well.
  return Finish("classifier", net, x, Normalized(photo, 3),
                {logits + "=top5:0,max:0.1,p99:0.01,mean:0.002"});
}

absl::StatusOr<Fp16TestModel> ResidualMlp(int blocks) {
  Net net(27);
  ModelBuilder& b = net.b();
  const int64_t width = 128;
  const std::string x = b.Input("features", {1, 768});
  std::string t = net.Linear(x, 768, width);
  // Residual branches scaled by 1/sqrt(depth), as trained deep residual nets end up (and
  // as their initializations set them): the stream grows slowly over the blocks.
  const float gain = 1.0f / std::sqrt(static_cast<float>(blocks));
  for (int i = 0; i < blocks; ++i) {
    const std::string h = b.Op("Relu", {net.Linear(t, width, 2 * width, std::sqrt(2.0f))});
    t = b.Op("Add", {t, net.Linear(h, 2 * width, width, gain)});
  }
  const std::string out = net.Linear(t, width, 10);
  b.Output(out);
  OVFIX_ASSIGN_OR_RETURN(Tensor photo, ReadPhoto("astronaut_16.pb"));
  // [16, 16, 3] -> [1, 768], normalized like the others.
  Tensor image = Normalized(photo, 3);
  return Finish("residual_mlp", net, x, image.Reshaped({1, 768}), {out + "=mean:0.002"});
}

absl::StatusOr<Fp16TestModel> Segmentation(int scale) {
  Net net(28);
  ModelBuilder& b = net.b();
  const int64_t s = scale;
  const std::string x = b.Input("image", {1, 3, 64, 64});
  auto twice = [&](const std::string& in, int64_t cin, int64_t cout) {
    return net.Cbr(net.Cbr(in, cin, cout), cout, cout);
  };
  const std::string e1 = twice(x, 3, 16 * s);                                   // 64
  const std::string e2 = twice(net.MaxPool(e1, 2, 2, 2, 2), 16 * s, 32 * s);    // 32
  const std::string e3 = twice(net.MaxPool(e2, 2, 2, 2, 2), 32 * s, 64 * s);    // 16
  const std::string mid = twice(net.MaxPool(e3, 2, 2, 2, 2), 64 * s, 128 * s);  // 8
  auto up = [&](const std::string& low, const std::string& skip, int64_t clow, int64_t cskip,
                int64_t cout) {
    const std::string cat =
        b.Op("Concat", {net.Upsample2x(low), skip}, {ModelBuilder::Int("axis", 1)});
    return twice(cat, clow + cskip, cout);
  };
  const std::string d3 = up(mid, e3, 128 * s, 64 * s, 64 * s);  // 16
  const std::string d2 = up(d3, e2, 64 * s, 32 * s, 32 * s);    // 32
  const std::string d1 = up(d2, e1, 32 * s, 16 * s, 16 * s);    // 64
  std::vector<std::string> maps;
  const std::pair<std::string, int64_t> heads[] = {{d1, 16 * s}, {d2, 32 * s}, {d3, 64 * s}};
  for (const auto& [feature, c] : heads) {
    maps.push_back(b.Op("Sigmoid", {net.Conv(feature, c, 1, 1, 1, true)}));
    b.Output(maps.back());
  }
  OVFIX_ASSIGN_OR_RETURN(Tensor photo, ReadPhoto("coffee_64.pb"));
  std::vector<std::string> accuracy;
  for (const std::string& m : maps)
    accuracy.push_back(m + "=mask@0.5:0.005");  // 0.5% of the pixels
  return Finish("segmentation", net, x, Normalized(photo, 3), accuracy);
}

absl::StatusOr<Fp16TestModel> Fp16TestModelNamed(const std::string& name) {
  if (name == "ocr_detector") return OcrDetector();
  if (name == "ctc_recognizer") return CtcRecognizer();
  if (name == "classifier") return Classifier();
  if (name == "residual_mlp") return ResidualMlp();
  if (name == "segmentation") return Segmentation();
  return absl::NotFoundError(absl::StrCat("no fp16 test model named '", name, "'"));
}

}  // namespace ovfix::test_models
