#include "bench/exporter_models.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bench/model_builder.h"

namespace ovfix::bench {
namespace {

using B = ModelBuilder;
constexpr int kOpset = 14;

// One dim of x's shape as a scalar, as `x.shape[i]` exports: Gather(Shape(x), i).
std::string Dim(B& b, const std::string& x, int64_t i) {
  return b.Op("Gather", {b.Op("Shape", {x}), b.Int64Scalar(i)}, {B::Int("axis", 0)});
}

// A shape from scalars (Unsqueezed, as traced sizes export) and literals (1-D constants),
// concatenated: what `x.view(a, b, -1)` exports to when a and b come from shapes.
struct Part {
  std::string scalar;  // a traced size, or
  int64_t literal = 0;
};
std::string ShapeOf(B& b, const std::vector<Part>& parts) {
  std::vector<std::string> pieces;
  for (const Part& p : parts) {
    pieces.push_back(p.scalar.empty() ? b.Int64s({p.literal})
                                      : b.Op("Unsqueeze", {p.scalar, b.Int64s({0})}));
  }
  return b.Op("Concat", pieces, {B::Int("axis", 0)});
}
std::string View(B& b, const std::string& x, const std::vector<Part>& parts) {
  return b.Op("Reshape", {x, ShapeOf(b, parts)});
}
Part Traced(const std::string& scalar) { return Part{scalar, 0}; }
Part Literal(int64_t v) { return Part{"", v}; }

// torch.nn.LayerNorm over the last axis below opset 17.
std::string LayerNorm(B& b, const std::string& x, int64_t width, int64_t axis = -1) {
  const std::string mean = b.Op("ReduceMean", {x}, {B::Ints("axes", {axis})});
  const std::string centered = b.Op("Sub", {x, mean});
  const std::string square = b.Op("Pow", {centered, b.Fill({}, 2.0f)});
  const std::string variance = b.Op("ReduceMean", {square}, {B::Ints("axes", {axis})});
  const std::string deviation = b.Op("Sqrt", {b.Op("Add", {variance, b.Fill({}, 1e-5f)})});
  const std::string normalized = b.Op("Div", {centered, deviation});
  std::vector<int64_t> param_dims = {width};
  if (axis != -1) param_dims = {width, 1, 1};  // over channels of NCHW
  return b.Op("Add",
              {b.Op("Mul", {normalized, b.Fill(param_dims, 1.0f)}), b.Weight(param_dims, 0.02f)});
}

// nn.GELU(): x * 0.5 * (1 + erf(x / sqrt(2))).
std::string Gelu(B& b, const std::string& x) {
  const std::string erf = b.Op("Erf", {b.Op("Div", {x, b.Fill({}, std::sqrt(2.0f))})});
  const std::string half = b.Op("Mul", {x, b.Fill({}, 0.5f)});
  return b.Op("Mul", {half, b.Op("Add", {erf, b.Fill({}, 1.0f)})});
}

// nn.Linear on the last axis: MatMul by the transposed weight, then Add of the bias.
std::string Linear(B& b, const std::string& x, int64_t in, int64_t out, bool bias = true) {
  const std::string y = b.Op("MatMul", {x, b.Weight({in, out}, std::sqrt(3.0f / in))});
  return bias ? b.Op("Add", {y, b.Weight({out}, 0.02f)}) : y;
}

std::string Relu(B& b, const std::string& x) { return b.Op("Relu", {x}); }

std::string BatchNorm(B& b, const std::string& x, int64_t channels) {
  return b.Op("BatchNormalization",
              {x, b.Fill({channels}, 1.0f), b.Weight({channels}, 0.05f),
               b.Weight({channels}, 0.05f), b.Fill({channels}, 1.0f)},
              {B::Float("epsilon", 1e-5f)});
}

std::string DilatedConv(B& b, const std::string& x, int64_t in, int64_t out, int64_t rate) {
  const std::string w = b.Weight({out, in, 3, 3}, std::sqrt(3.0f / (in * 9)));
  return b.Op("Conv", {x, w, b.Weight({out}, 0.05f)},
              {B::Ints("kernel_shape", {3, 3}), B::Ints("dilations", {rate, rate}),
               B::Ints("pads", {rate, rate, rate, rate})});
}

// Multi-head attention as exporters write it, from q, k, v already split into heads
// [batch, heads, tokens, head width]: scores scaled by Div or Mul, an additive mask.
std::string Attention(B& b, const std::string& q, const std::string& k, const std::string& v,
                      float scale, bool scale_by_div, const std::string& mask) {
  const std::string kt = b.Op("Transpose", {k}, {B::Ints("perm", {0, 1, 3, 2})});
  std::string scores = b.Op("MatMul", {q, kt});
  scores = scale_by_div ? b.Op("Div", {scores, b.Fill({}, 1.0f / scale)})
                        : b.Op("Mul", {scores, b.Fill({}, scale)});
  if (!mask.empty()) scores = b.Op("Add", {scores, mask});
  const std::string probs = b.Op("Softmax", {scores}, {B::Int("axis", -1)});
  return b.Op("MatMul", {probs, v});
}

// [batch, tokens, width] -> [batch, heads, tokens, width / heads] (transpose_for_scores).
std::string SplitHeads(B& b, const std::string& x, int64_t heads, int64_t head_width) {
  const std::string split =
      View(b, x, {Traced(Dim(b, x, 0)), Traced(Dim(b, x, 1)), Literal(heads), Literal(head_width)});
  return b.Op("Transpose", {split}, {B::Ints("perm", {0, 2, 1, 3})});
}

// [batch, heads, tokens, head width] -> [batch, tokens, width].
std::string MergeHeads(B& b, const std::string& x, int64_t width) {
  const std::string t = b.Op("Transpose", {x}, {B::Ints("perm", {0, 2, 1, 3})});
  return View(b, t, {Traced(Dim(b, t, 0)), Traced(Dim(b, t, 1)), Literal(width)});
}

// The rest of a post-norm transformer layer after attention `a`: x = LayerNorm(x + out_proj(a)),
// then x = LayerNorm(x + MLP(x)) with a 4x GELU MLP. `residual_first`: x is the first input
// of each Add (as torch's decoder layer exports it), else the second.
std::string PostNormLayerTail(B& b, const std::string& x, const std::string& a, int64_t width,
                              bool residual_first) {
  auto add = [&](const std::string& residual, const std::string& branch) {
    return residual_first ? b.Op("Add", {residual, branch}) : b.Op("Add", {branch, residual});
  };
  const std::string attended = LayerNorm(b, add(x, Linear(b, a, width, width)), width);
  const std::string mlp =
      Linear(b, Gelu(b, Linear(b, attended, width, 4 * width)), 4 * width, width);
  return LayerNorm(b, add(attended, mlp), width);
}

// torchvision's shifted_window_attention pads H and W up to multiples of the window with
// sizes computed from the traced shape: pad_b = (7 - H % 7) % 7, and the same for W, then
// F.pad(x, (0, 0, 0, pad_r, 0, pad_b)). On static shapes every size folds to a constant.
std::string PadToWindows(B& b, const std::string& x, int64_t window) {
  const std::string w = b.Int64Scalar(window);
  auto pad_of = [&](int64_t axis) {
    return b.Op("Mod", {b.Op("Sub", {w, b.Op("Mod", {Dim(b, x, axis), w})}), w});
  };
  const std::string zero = b.Op("Unsqueeze", {b.Int64Scalar(0), b.Int64s({0})});
  auto un = [&](const std::string& s) { return b.Op("Unsqueeze", {s, b.Int64s({0})}); };
  const std::string pads =
      b.Op("Concat", {zero, zero, zero, zero, zero, un(pad_of(1)), un(pad_of(2)), zero},
           {B::Int("axis", 0)});
  return b.Op("Pad", {x, pads});
}

// One Swin block on x [batch, height*width, channels] (windows of 7). With `torchvision`, the
// block is written as torchvision's swin_t exports: padding to windows from traced sizes,
// views by x.size(0) // num_windows, and for shifted blocks the attention mask between
// shifted regions, partitioned into windows through shape arithmetic and added per window.
std::string SwinBlock(B& b, const std::string& x, int64_t height, int64_t width, int64_t channels,
                      int64_t heads, bool shift, bool torchvision = false) {
  constexpr int64_t kWindow = 7, kTokens = kWindow * kWindow;
  const int64_t head_width = channels / heads;
  const std::string batch = Dim(b, x, 0), c = Dim(b, x, 2);
  std::string h = View(b, LayerNorm(b, x, channels),
                       {Traced(batch), Literal(height), Literal(width), Traced(c)});
  const std::string unpadded = h;
  if (torchvision) h = PadToWindows(b, h, kWindow);
  auto roll = [&](const std::string& in, int64_t by) {  // torch.roll as Slice + Concat
    std::string out = in;
    for (int64_t axis : {1, 2}) {
      const int64_t size = axis == 1 ? height : width, cut = (size - by) % size;
      const std::string tail =
          b.Op("Slice", {out, b.Int64s({cut}), b.Int64s({size}), b.Int64s({axis})});
      const std::string head =
          b.Op("Slice", {out, b.Int64s({0}), b.Int64s({cut}), b.Int64s({axis})});
      out = b.Op("Concat", {tail, head}, {B::Int("axis", axis)});
    }
    return out;
  };
  if (shift) h = roll(h, -kWindow / 2 + height);
  // Window partition: view(B, H // 7, 7, W // 7, 7, C).permute(0, 1, 3, 2, 4, 5).view(-1, 49, C).
  const std::string seven = b.Int64Scalar(kWindow);
  const std::string rows = b.Op("Div", {Dim(b, h, 1), seven});
  const std::string cols = b.Op("Div", {Dim(b, h, 2), seven});
  h = View(b, h,
           {Traced(Dim(b, h, 0)), Traced(rows), Literal(kWindow), Traced(cols), Literal(kWindow),
            Traced(Dim(b, h, 3))});
  h = b.Op("Transpose", {h}, {B::Ints("perm", {0, 1, 3, 2, 4, 5})});
  h = View(b, h, {Literal(-1), Literal(kTokens), Traced(c)});
  // Window attention: qkv(x).reshape(B_, N, 3, heads, C // heads).permute(2, 0, 3, 1, 4).
  const std::string windows = Dim(b, h, 0), tokens = Dim(b, h, 1);
  std::string qkv = Linear(b, h, channels, 3 * channels);
  qkv = View(b, qkv,
             {Traced(windows), Traced(tokens), Literal(3), Literal(heads),
              Traced(b.Op("Div", {Dim(b, h, 2), b.Int64Scalar(heads)}))});
  qkv = b.Op("Transpose", {qkv}, {B::Ints("perm", {2, 0, 3, 1, 4})});
  auto pick = [&](int64_t i) {
    return b.Op("Gather", {qkv, b.Int64Scalar(i)}, {B::Int("axis", 0)});
  };
  // Relative position bias: table[index].view(49, 49, -1).permute(2, 0, 1).unsqueeze(0).
  std::vector<int64_t> index(kTokens * kTokens);
  for (int64_t i = 0; i < kTokens; ++i) {
    for (int64_t j = 0; j < kTokens; ++j) {
      const int64_t dy = i / kWindow - j / kWindow + kWindow - 1;
      const int64_t dx = i % kWindow - j % kWindow + kWindow - 1;
      index[i * kTokens + j] = dy * (2 * kWindow - 1) + dx;
    }
  }
  std::string bias =
      b.Op("Gather", {b.Weight({169, heads}, 0.02f), b.Int64s(index)}, {B::Int("axis", 0)});
  bias = b.Op("Reshape", {bias, b.Int64s({kTokens, kTokens, -1})});
  bias = b.Op("Transpose", {bias}, {B::Ints("perm", {2, 0, 1})});
  bias = b.Op("Unsqueeze", {bias, b.Int64s({0})});
  const std::string q = b.Op("Mul", {pick(0), b.Fill({}, 1.0f / std::sqrt(head_width))});
  std::string attn =
      b.Op("MatMul", {q, b.Op("Transpose", {pick(1)}, {B::Ints("perm", {0, 1, 3, 2})})});
  attn = b.Op("Add", {attn, bias});
  if (torchvision && shift) {
    // The region label of each (padded) position: 3 bands per axis split at H - 7 and
    // H - 3, label = 3 * row band + column band (torchvision fills them by slice assignment).
    std::vector<float> labels(height * width);
    const int64_t shift_by = kWindow / 2;
    auto band = [&](int64_t i, int64_t size) {
      return i < size - kWindow ? 0 : (i < size - shift_by ? 1 : 2);
    };
    for (int64_t i = 0; i < height; ++i) {
      for (int64_t j = 0; j < width; ++j)
        labels[i * width + j] = 3 * band(i, height) + band(j, width);
    }
    std::string m = b.Op("Reshape", {b.Floats(labels), b.Int64s({height, width})});
    const std::string mh = Dim(b, m, 0), mw = Dim(b, m, 1);
    m = View(b, m,
             {Traced(b.Op("Div", {mh, seven})), Literal(kWindow), Traced(b.Op("Div", {mw, seven})),
              Literal(kWindow)});
    m = b.Op("Transpose", {m}, {B::Ints("perm", {0, 2, 1, 3})});
    m = View(b, m,
             {Traced(b.Op("Mul", {b.Op("Div", {mh, seven}), b.Op("Div", {mw, seven})})),
              Literal(kTokens)});
    // mask = (m.unsqueeze(1) - m.unsqueeze(2)); masked_fill(mask != 0, -100.0)
    m = b.Op("Sub", {b.Op("Unsqueeze", {m, b.Int64s({1})}), b.Op("Unsqueeze", {m, b.Int64s({2})})});
    m = b.Op("Where", {b.Op("Not", {b.Op("Equal", {m, b.Fill({}, 0.0f)})}), b.Fill({}, -100.0f),
                       b.Fill({}, 0.0f)});
    // attn.view(x.size(0) // num_windows, num_windows, heads, N, N) + mask.unsqueeze(1)
    //     .unsqueeze(0), then attn.view(-1, heads, N, N).
    const std::string num_windows = Dim(b, m, 0);
    attn = View(b, attn,
                {Traced(b.Op("Div", {windows, num_windows})), Traced(num_windows), Literal(heads),
                 Traced(tokens), Traced(tokens)});
    attn = b.Op("Add",
                {attn, b.Op("Unsqueeze", {b.Op("Unsqueeze", {m, b.Int64s({1})}), b.Int64s({0})})});
    attn = View(b, attn, {Literal(-1), Literal(heads), Traced(tokens), Traced(tokens)});
  }
  attn = b.Op("Softmax", {attn}, {B::Int("axis", -1)});
  std::string o = b.Op("MatMul", {attn, pick(2)});
  o = b.Op("Transpose", {o}, {B::Ints("perm", {0, 2, 1, 3})});
  o = View(b, o, {Traced(windows), Traced(tokens), Traced(c)});
  o = Linear(b, o, channels, channels);
  // Window reverse: view(B, H // 7, W // 7, 7, 7, -1).permute(0, 1, 3, 2, 4, 5).view(B, H, W, -1).
  o = View(b, o,
           {Traced(batch), Literal(height / kWindow), Literal(width / kWindow), Literal(kWindow),
            Literal(kWindow), Literal(-1)});
  o = b.Op("Transpose", {o}, {B::Ints("perm", {0, 1, 3, 2, 4, 5})});
  o = View(b, o, {Traced(batch), Literal(height), Literal(width), Literal(-1)});
  if (shift) o = roll(o, kWindow / 2);
  if (torchvision) {  // x[:, :H, :W, :].contiguous(), the crop of the padding
    auto un = [&](const std::string& v) { return b.Op("Unsqueeze", {v, b.Int64s({0})}); };
    const std::string ends =
        b.Op("Concat", {un(Dim(b, unpadded, 1)), un(Dim(b, unpadded, 2))}, {B::Int("axis", 0)});
    o = b.Op("Slice", {o, b.Int64s({0, 0}), ends, b.Int64s({1, 2})});
  }

  o = View(b, o, {Traced(batch), Literal(height * width), Traced(c)});
  std::string y = b.Op("Add", {x, o});
  const std::string mlp =
      Linear(b, Gelu(b, Linear(b, LayerNorm(b, y, channels), channels, 4 * channels)), 4 * channels,
             channels);
  return b.Op("Add", {y, mlp});
}

// Swin's patch merging: the four 2x2 phases concatenated on channels, LayerNorm, Linear.
std::string PatchMerging(B& b, const std::string& x, int64_t height, int64_t width,
                         int64_t channels) {
  const std::string batch = Dim(b, x, 0);
  const std::string grid =
      View(b, x, {Traced(batch), Literal(height), Literal(width), Literal(channels)});
  std::vector<std::string> phases;
  for (auto [dy, dx] : {std::pair{0, 0}, {1, 0}, {0, 1}, {1, 1}}) {
    phases.push_back(b.Op("Slice", {grid, b.Int64s({dy, dx}), b.Int64s({height, width}),
                                    b.Int64s({1, 2}), b.Int64s({2, 2})}));
  }
  std::string y = b.Op("Concat", phases, {B::Int("axis", -1)});
  y = View(b, y, {Traced(batch), Literal(-1), Literal(4 * channels)});
  return Linear(b, LayerNorm(b, y, 4 * channels), 4 * channels, 2 * channels, false);
}

}  // namespace

onnx::ModelProto ExportedConvNextModel() {
  return ExportedConvNextModelSized(160, {64, 128, 256}, {2, 2, 2});
}

onnx::ModelProto ExportedConvNextModelSized(int64_t image, const std::vector<int64_t>& widths,
                                            const std::vector<int64_t>& depths) {
  B b(kOpset, 21);
  std::string x = b.Conv(b.Input("image", {1, 3, image, image}), 3, widths[0], 4, 4);
  x = LayerNorm(b, x, widths[0], 1);
  for (size_t stage = 0; stage < widths.size(); ++stage) {
    const int64_t c = widths[stage];
    if (stage > 0) x = b.Conv(LayerNorm(b, x, widths[stage - 1], 1), widths[stage - 1], c, 2, 2);
    for (int64_t block = 0; block < depths[stage]; ++block) {
      std::string h = b.Conv(x, c, c, 7, 1, c);
      h = b.Op("Transpose", {h}, {B::Ints("perm", {0, 2, 3, 1})});
      h = Gelu(b, Linear(b, LayerNorm(b, h, c), c, 4 * c));
      h = b.Op("Mul", {b.Fill({c}, 0.1f), Linear(b, h, 4 * c, c)});
      h = b.Op("Transpose", {h}, {B::Ints("perm", {0, 3, 1, 2})});
      x = b.Op("Add", {x, h});
    }
  }
  x = b.Op("ReduceMean", {x}, {B::Ints("axes", {-2, -1}), B::Int("keepdims", 0)});
  b.Output(Linear(b, LayerNorm(b, x, widths.back()), widths.back(), 1000));
  return b.model();
}

namespace {

struct SwinStage {
  int64_t size, channels, heads, depth;
};

onnx::ModelProto SwinModel(int64_t image, const std::vector<SwinStage>& stages, bool torchvision,
                           uint32_t seed) {
  B b(kOpset, seed);
  b.set_constants_as_nodes(torchvision);
  const int64_t grid = image / 4, embed = stages.front().channels, last = stages.back().channels;
  std::string x = b.Conv(b.Input("image", {1, 3, image, image}), 3, embed, 4, 4);
  // flatten(2).transpose(1, 2)
  x = View(b, x, {Traced(Dim(b, x, 0)), Literal(embed), Literal(grid * grid)});
  x = LayerNorm(b, b.Op("Transpose", {x}, {B::Ints("perm", {0, 2, 1})}), embed);
  for (size_t s = 0; s < stages.size(); ++s) {
    const SwinStage& st = stages[s];
    if (s > 0) x = PatchMerging(b, x, st.size * 2, st.size * 2, st.channels / 2);
    for (int64_t block = 0; block < st.depth; ++block) {
      // torchvision drops the shift where the window covers the whole map (x_swin keeps it).
      const bool shift = block % 2 == 1 && (!torchvision || st.size > 7);
      x = SwinBlock(b, x, st.size, st.size, st.channels, st.heads, shift, torchvision);
    }
  }
  x = LayerNorm(b, x, last);
  x = b.Op("ReduceMean", {x}, {B::Ints("axes", {1}), B::Int("keepdims", 0)});
  b.Output(Linear(b, x, last, 1000));
  return b.model();
}

}  // namespace

onnx::ModelProto ExportedSwinModel() {
  return SwinModel(112, {{28, 96, 3, 2}, {14, 192, 6, 2}, {7, 384, 12, 2}},
                   /*torchvision=*/false, 22);
}

onnx::ModelProto ExportedSwinTModel() {
  return SwinModel(224, {{56, 96, 3, 2}, {28, 192, 6, 2}, {14, 384, 12, 6}, {7, 768, 24, 2}},
                   /*torchvision=*/true, 25);
}

onnx::ModelProto ExportedDeepSwinModel() {
  return SwinModel(224, {{56, 32, 1, 2}, {28, 64, 2, 2}, {14, 128, 4, 22}, {7, 256, 8, 2}},
                   /*torchvision=*/true, 26);
}

onnx::ModelProto ExportedBertModel() { return ExportedBertModelSized(128, 256, 4, 4); }

onnx::ModelProto ExportedBertModelSized(int64_t tokens, int64_t width, int64_t heads,
                                        int64_t layers) {
  B b(kOpset, 23);
  const int64_t kWidth = width, kHeads = heads, kLayers = layers;
  std::string x = b.Input("embeddings", {1, tokens, kWidth});
  const std::string mask01 = b.Input("attention_mask", {1, tokens});
  // (1.0 - mask[:, None, None, :]) * -10000.0
  std::string mask = b.Op("Unsqueeze", {mask01, b.Int64s({1, 2})});
  mask = b.Op("Mul", {b.Op("Sub", {b.Fill({}, 1.0f), mask}), b.Fill({}, -10000.0f)});
  x = LayerNorm(b, x, kWidth);
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    const std::string q = SplitHeads(b, Linear(b, x, kWidth, kWidth), kHeads, kWidth / kHeads);
    const std::string k = SplitHeads(b, Linear(b, x, kWidth, kWidth), kHeads, kWidth / kHeads);
    const std::string v = SplitHeads(b, Linear(b, x, kWidth, kWidth), kHeads, kWidth / kHeads);
    const float scale = 1.0f / std::sqrt(static_cast<float>(kWidth / kHeads));
    std::string a = MergeHeads(b, Attention(b, q, k, v, scale, true, mask), kWidth);
    x = PostNormLayerTail(b, x, a, kWidth, /*residual_first=*/false);
  }
  b.Output(x);
  return b.model();
}

onnx::ModelProto ExportedCausalDecoderModel() {
  B b(kOpset, 24);
  constexpr int64_t kTokens = 128, kWidth = 256, kHeads = 8, kLayers = 4;
  const int64_t head_width = kWidth / kHeads;
  std::string x = b.Input("tokens", {1, kTokens, kWidth});
  // torch.triu(torch.full((S, S), -inf), diagonal=1) as Trilu on ones, then Where.
  const std::string upper =
      b.Op("Trilu", {b.Fill({kTokens, kTokens}, 1.0f), b.Int64Scalar(1)}, {B::Int("upper", 1)});
  const std::string masked = b.Op("Cast", {upper}, {B::Int("to", 9)});  // bool
  const std::string mask = b.Op(
      "Where", {masked, b.Fill({}, -std::numeric_limits<float>::infinity()), b.Fill({}, 0.0f)});
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    // in_proj: one MatMul to 3 * width, then the heads of q, k and v by Reshape/Transpose.
    std::string qkv = Linear(b, x, kWidth, 3 * kWidth);
    qkv = View(b, qkv,
               {Traced(Dim(b, x, 0)), Traced(Dim(b, x, 1)), Literal(3), Literal(kHeads),
                Literal(head_width)});
    qkv = b.Op("Transpose", {qkv}, {B::Ints("perm", {2, 0, 3, 1, 4})});
    auto pick = [&](int64_t i) {
      return b.Op("Gather", {qkv, b.Int64Scalar(i)}, {B::Int("axis", 0)});
    };
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_width));
    std::string a =
        MergeHeads(b, Attention(b, pick(0), pick(1), pick(2), scale, false, mask), kWidth);
    x = PostNormLayerTail(b, x, a, kWidth, /*residual_first=*/true);
  }
  b.Output(x);
  return b.model();
}

onnx::ModelProto ExportedDenseNetModel() { return ExportedDenseNetModelSized(128, 32, 6); }

onnx::ModelProto ExportedDenseNetModelSized(int64_t image, int64_t growth,
                                            int64_t layers_per_block) {
  B b(kOpset, 25);
  const int64_t kGrowth = growth, kLayersPerBlock = layers_per_block;
  std::string x = b.Conv(b.Input("image", {1, 3, image, image}), 3, 64, 7, 2);
  x = Relu(b, BatchNorm(b, x, 64));
  x = b.Op(
      "MaxPool", {x},
      {B::Ints("kernel_shape", {3, 3}), B::Ints("strides", {2, 2}), B::Ints("pads", {1, 1, 1, 1})});
  int64_t channels = 64;
  for (int block = 0; block < 3; ++block) {
    for (int64_t layer = 0; layer < kLayersPerBlock; ++layer) {
      std::string h = b.Conv(Relu(b, BatchNorm(b, x, channels)), channels, 4 * kGrowth, 1);
      h = b.Conv(Relu(b, BatchNorm(b, h, 4 * kGrowth)), 4 * kGrowth, kGrowth, 3);
      x = b.Op("Concat", {x, h}, {B::Int("axis", 1)});
      channels += kGrowth;
    }
    if (block < 2) {
      x = b.Conv(Relu(b, BatchNorm(b, x, channels)), channels, channels / 2, 1);
      channels /= 2;
      x = b.Op("AveragePool", {x}, {B::Ints("kernel_shape", {2, 2}), B::Ints("strides", {2, 2})});
    }
  }
  x = b.Op("GlobalAveragePool", {Relu(b, BatchNorm(b, x, channels))});
  x = b.Op("Flatten", {x});
  b.Output(Linear(b, x, channels, 1000));
  return b.model();
}

onnx::ModelProto ExportedTorchvisionDenseNetModel() {
  B b(kOpset, 27);
  constexpr int64_t kGrowth = 32, kLayersPerBlock = 6;
  std::string x = b.Conv(b.Input("image", {1, 3, 128, 128}), 3, 64, 7, 2);
  x = Relu(b, BatchNorm(b, x, 64));
  x = b.Op(
      "MaxPool", {x},
      {B::Ints("kernel_shape", {3, 3}), B::Ints("strides", {2, 2}), B::Ints("pads", {1, 1, 1, 1})});
  int64_t channels = 64;
  for (int block = 0; block < 3; ++block) {
    std::vector<std::string> features = {x};
    for (int64_t layer = 0; layer < kLayersPerBlock; ++layer) {
      const std::string cat =
          features.size() == 1 ? features[0] : b.Op("Concat", features, {B::Int("axis", 1)});
      std::string h = b.Conv(Relu(b, BatchNorm(b, cat, channels)), channels, 4 * kGrowth, 1);
      h = b.Conv(Relu(b, BatchNorm(b, h, 4 * kGrowth)), 4 * kGrowth, kGrowth, 3);
      features.push_back(h);
      channels += kGrowth;
    }
    x = b.Op("Concat", features, {B::Int("axis", 1)});
    if (block < 2) {
      x = b.Conv(Relu(b, BatchNorm(b, x, channels)), channels, channels / 2, 1);
      channels /= 2;
      x = b.Op("AveragePool", {x}, {B::Ints("kernel_shape", {2, 2}), B::Ints("strides", {2, 2})});
    }
  }
  x = b.Op("GlobalAveragePool", {Relu(b, BatchNorm(b, x, channels))});
  x = b.Op("Flatten", {x});
  b.Output(Linear(b, x, channels, 1000));
  return b.model();
}

onnx::ModelProto ExportedAtrousSegmentationModel() {
  B b(kOpset, 26);
  const std::string image = b.Input("image", {1, 3, 256, 256});
  std::string x = Relu(b, b.Conv(image, 3, 32, 3, 2));
  x = Relu(b, b.Conv(x, 32, 64, 3, 2));
  x = Relu(b, b.Conv(x, 64, 128, 3, 2));
  x = Relu(b, DilatedConv(b, x, 128, 128, 2));  // output stride 8: 32x32
  std::vector<std::string> branches = {Relu(b, b.Conv(x, 128, 64, 1))};
  for (int64_t rate : {6, 12, 18}) branches.push_back(Relu(b, DilatedConv(b, x, 128, 64, rate)));
  // The pooled branch, resized back with F.interpolate(size=x.shape[-2:]).
  std::string pooled = Relu(b, b.Conv(b.Op("GlobalAveragePool", {x}), 128, 64, 1));
  const std::string spatial =
      b.Op("Slice", {b.Op("Shape", {x}), b.Int64s({2}), b.Int64s({4}), b.Int64s({0})});
  const std::string sizes =
      b.Op("Concat",
           {b.Op("Slice", {b.Op("Shape", {pooled}), b.Int64s({0}), b.Int64s({2}), b.Int64s({0})}),
            spatial},
           {B::Int("axis", 0)});
  branches.push_back(b.Op(
      "Resize", {pooled, "", "", sizes},
      {B::String("mode", "linear"), B::String("coordinate_transformation_mode", "half_pixel")}));
  x = b.Op("Concat", branches, {B::Int("axis", 1)});
  x = Relu(b, b.Conv(x, 5 * 64, 64, 1));
  x = Relu(b, b.Conv(x, 64, 64, 3));
  x = b.Conv(x, 64, 21, 1);
  const std::string image_size =
      b.Op("Slice", {b.Op("Shape", {image}), b.Int64s({2}), b.Int64s({4}), b.Int64s({0})});
  const std::string out_sizes =
      b.Op("Concat", {b.Int64s({1, 21}), image_size}, {B::Int("axis", 0)});
  b.Output(b.Op("Resize", {x, "", "", out_sizes},
                {B::String("mode", "linear"),
                 B::String("coordinate_transformation_mode", "pytorch_half_pixel")}));
  return b.model();
}

namespace {

// nn.Conv2d as the exporter writes it: He-scaled weight, a bias input only where the module has
// one (the convolutions before a BatchNorm have none), pads of dilation * (kernel - 1) / 2.
struct ConvSpec {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, group = 1, dilation = 1;
  bool bias = false;
};
ConvSpec Square(int64_t kernel, int64_t stride = 1, int64_t group = 1, int64_t dilation = 1) {
  return ConvSpec{kernel, kernel, stride, stride, group, dilation, false};
}
std::string TorchConv(B& b, const std::string& x, int64_t in, int64_t out, const ConvSpec& s) {
  const int64_t fan_in = in / s.group * s.kh * s.kw;
  std::vector<std::string> inputs = {
      x, b.Weight({out, in / s.group, s.kh, s.kw}, std::sqrt(3.0f / fan_in))};
  if (s.bias) inputs.push_back(b.Weight({out}, 0.05f));
  const int64_t ph = s.dilation * (s.kh - 1) / 2, pw = s.dilation * (s.kw - 1) / 2;
  return b.Op("Conv", inputs,
              {B::Ints("dilations", {s.dilation, s.dilation}), B::Int("group", s.group),
               B::Ints("kernel_shape", {s.kh, s.kw}), B::Ints("pads", {ph, pw, ph, pw}),
               B::Ints("strides", {s.sh, s.sw})});
}
// Conv (no bias) then BatchNormalization, as torchvision's Conv2dNormActivation exports.
std::string ConvBn(B& b, const std::string& x, int64_t in, int64_t out, const ConvSpec& s) {
  return BatchNorm(b, TorchConv(b, x, in, out, s), out);
}

// Activations at opset 14: nn.Hardswish and nn.Hardsigmoid have ONNX ops of their own; SiLU
// (Paddle's Swish) exports as Sigmoid and Mul.
std::string HardSwish(B& b, const std::string& x) { return b.Op("HardSwish", {x}); }
std::string HardSigmoid(B& b, const std::string& x) {
  return b.Op("HardSigmoid", {x}, {B::Float("alpha", 1.0f / 6.0f), B::Float("beta", 0.5f)});
}
std::string Swish(B& b, const std::string& x) { return b.Op("Mul", {x, b.Op("Sigmoid", {x})}); }

// Squeeze-and-excitation: adaptive_avg_pool2d(x, 1) as GlobalAveragePool, 1x1 Convs with
// bias around a ReLU, a HardSigmoid gate, Mul by the input.
std::string SqueezeExcite(B& b, const std::string& x, int64_t channels, int64_t squeezed) {
  std::string s = b.Op("GlobalAveragePool", {x});
  s = Relu(b, TorchConv(b, s, channels, squeezed, ConvSpec{.bias = true}));
  s = HardSigmoid(b, TorchConv(b, s, squeezed, channels, ConvSpec{.bias = true}));
  return b.Op("Mul", {s, x});
}

// torchvision's _make_divisible(v, divisor).
int64_t MakeDivisible(double v, int64_t divisor = 8) {
  int64_t n =
      std::max<int64_t>(divisor, static_cast<int64_t>(v + divisor / 2.0) / divisor * divisor);
  if (n < 0.9 * v) n += divisor;
  return n;
}

// F.interpolate(x, size=like.shape[-2:], mode="bilinear", align_corners=False) at opset 14:
// the sizes from Shape/Slice of both tensors, concatenated; Resize with empty roi and scales.
std::string ResizeLike(B& b, const std::string& x, const std::string& like) {
  const std::string lead =
      b.Op("Slice", {b.Op("Shape", {x}), b.Int64s({0}), b.Int64s({2}), b.Int64s({0})});
  const std::string spatial =
      b.Op("Slice", {b.Op("Shape", {like}), b.Int64s({-2}), b.Int64s({INT64_MAX}), b.Int64s({0})});
  const std::string sizes = b.Op("Concat", {lead, spatial}, {B::Int("axis", 0)});
  return b.Op("Resize", {x, "", "", sizes},
              {B::String("coordinate_transformation_mode", "pytorch_half_pixel"),
               B::Float("cubic_coeff_a", -0.75f), B::String("mode", "linear"),
               B::String("nearest_mode", "floor")});
}

// An ONNX graph input made int64 (ModelBuilder's inputs are float).
void MakeInt64Input(onnx::ModelProto& model, const std::string& name) {
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    if (input.name() == name) {
      input.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
    }
  }
}

}  // namespace

onnx::ModelProto ExportedResNet50Model() {
  B b(kOpset, 31);
  b.set_constants_as_nodes(true);
  std::string x = ConvBn(b, b.Input("image", {1, 3, 224, 224}), 3, 64, Square(7, 2));
  x = b.Op("MaxPool", {Relu(b, x)},
           {B::Int("ceil_mode", 0), B::Ints("dilations", {1, 1}), B::Ints("kernel_shape", {3, 3}),
            B::Ints("pads", {1, 1, 1, 1}), B::Ints("strides", {2, 2})});
  int64_t channels = 64;
  const int64_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t w = widths[stage], out = 4 * w;
    for (int64_t block = 0; block < blocks[stage]; ++block) {
      const int64_t stride = block == 0 && stage > 0 ? 2 : 1;
      // Bottleneck (torchvision v1.5: the stride on the 3x3 conv).
      std::string h = Relu(b, ConvBn(b, x, channels, w, Square(1)));
      h = Relu(b, ConvBn(b, h, w, w, Square(3, stride)));
      h = ConvBn(b, h, w, out, Square(1));
      const std::string identity = block == 0 ? ConvBn(b, x, channels, out, Square(1, stride)) : x;
      x = Relu(b, b.Op("Add", {h, identity}));
      channels = out;
    }
  }
  x = b.Op("Flatten", {b.Op("GlobalAveragePool", {x})}, {B::Int("axis", 1)});
  b.Output(b.Op(
      "Gemm", {x, b.Weight({1000, channels}, std::sqrt(3.0f / channels)), b.Weight({1000}, 0.05f)},
      {B::Float("alpha", 1.0f), B::Float("beta", 1.0f), B::Int("transB", 1)}));
  return b.model();
}

onnx::ModelProto ExportedDeepLabV3MobileNetV3Model(int64_t image) {
  B b(kOpset, 32);
  b.set_constants_as_nodes(true);
  const std::string input = b.Input("image", {1, 3, image, image});
  std::string x = HardSwish(b, ConvBn(b, input, 3, 16, Square(3, 2)));
  // torchvision's mobilenet_v3_large bneck settings: input, kernel, expanded, output, SE,
  // hard-swish, stride, dilation; the last stage dilated (stride 1, dilation 2) for
  // segmentation (output stride 16).
  struct Bneck {
    int64_t in, kernel, expanded, out;
    bool se, hs;
    int64_t stride, dilation;
  };
  const Bneck config[] = {
      {16, 3, 16, 16, false, false, 1, 1},  {16, 3, 64, 24, false, false, 2, 1},
      {24, 3, 72, 24, false, false, 1, 1},  {24, 5, 72, 40, true, false, 2, 1},
      {40, 5, 120, 40, true, false, 1, 1},  {40, 5, 120, 40, true, false, 1, 1},
      {40, 3, 240, 80, false, true, 2, 1},  {80, 3, 200, 80, false, true, 1, 1},
      {80, 3, 184, 80, false, true, 1, 1},  {80, 3, 184, 80, false, true, 1, 1},
      {80, 3, 480, 112, true, true, 1, 1},  {112, 3, 672, 112, true, true, 1, 1},
      {112, 5, 672, 160, true, true, 2, 2}, {160, 5, 960, 160, true, true, 1, 2},
      {160, 5, 960, 160, true, true, 1, 2}};
  for (const Bneck& c : config) {
    auto act = [&](const std::string& v) { return c.hs ? HardSwish(b, v) : Relu(b, v); };
    std::string h = x;
    if (c.expanded != c.in) h = act(ConvBn(b, h, c.in, c.expanded, Square(1)));
    const int64_t stride = c.dilation > 1 ? 1 : c.stride;
    h = act(ConvBn(b, h, c.expanded, c.expanded,
                   Square(c.kernel, stride, /*group=*/c.expanded, c.dilation)));
    if (c.se) h = SqueezeExcite(b, h, c.expanded, MakeDivisible(c.expanded / 4.0));
    h = ConvBn(b, h, c.expanded, c.out, Square(1));
    x = c.stride == 1 && c.in == c.out ? b.Op("Add", {h, x}) : h;
  }
  x = HardSwish(b, ConvBn(b, x, 160, 960, Square(1)));
  // DeepLabHead(960, 21): ASPP at rates 12/24/36 with a pooled branch, projection, 3x3, 1x1.
  std::vector<std::string> branches = {Relu(b, ConvBn(b, x, 960, 256, Square(1)))};
  for (int64_t rate : {12, 24, 36}) {
    branches.push_back(Relu(b, ConvBn(b, x, 960, 256, Square(3, 1, 1, rate))));
  }
  const std::string pooled =
      Relu(b, ConvBn(b, b.Op("GlobalAveragePool", {x}), 960, 256, Square(1)));
  branches.push_back(ResizeLike(b, pooled, x));
  x = b.Op("Concat", branches, {B::Int("axis", 1)});
  x = Relu(b, ConvBn(b, x, 5 * 256, 256, Square(1)));
  x = Relu(b, ConvBn(b, x, 256, 256, Square(3)));
  x = TorchConv(b, x, 256, 21, ConvSpec{.bias = true});
  b.Output(ResizeLike(b, x, input));
  return b.model();
}

onnx::ModelProto ExportedOcrRecognizerModel() {
  B b(kOpset, 33);
  b.set_constants_as_nodes(true);
  // PP-OCRv4 mobile rec's PPLCNetV3 (scale 0.95, re-parameterized for inference) on a 48x320
  // text line: depthwise kxk + BN + hard-swish, optional SE, pointwise 1x1 + BN + hard-swish.
  std::string x = HardSwish(b, ConvBn(b, b.Input("image", {1, 3, 48, 320}), 3, 16, Square(3, 2)));
  struct Block {
    int64_t kernel, in, out, sh, sw;
    bool se;
  };
  const Block blocks[] = {
      {3, 16, 32, 1, 1, false},   {3, 32, 64, 1, 1, false},   {3, 64, 64, 1, 1, false},
      {3, 64, 128, 2, 1, false},  {3, 128, 128, 1, 1, false}, {3, 128, 240, 1, 2, false},
      {5, 240, 240, 1, 1, false}, {5, 240, 240, 1, 1, false}, {5, 240, 240, 1, 1, false},
      {5, 240, 240, 1, 1, false}, {5, 240, 480, 2, 1, true},  {5, 480, 480, 1, 1, true},
      {5, 480, 480, 2, 1, false}, {5, 480, 480, 1, 1, false}};
  for (const Block& k : blocks) {
    x = HardSwish(b, ConvBn(b, x, k.in, k.in,
                            ConvSpec{k.kernel, k.kernel, k.sh, k.sw, /*group=*/k.in, 1, false}));
    if (k.se) x = SqueezeExcite(b, x, k.in, k.in / 4);
    x = HardSwish(b, ConvBn(b, x, k.in, k.out, Square(1)));
  }
  // 3x80 -> 1x40 (avg_pool2d([3, 2]) at inference).
  x = b.Op("AveragePool", {x},
           {B::Int("ceil_mode", 0), B::Ints("kernel_shape", {3, 2}), B::Ints("pads", {0, 0, 0, 0}),
            B::Ints("strides", {3, 2})});
  constexpr int64_t kIn = 480, kDims = 120, kHeads = 8, kClasses = 6625;
  // EncoderWithSVTR neck (the attention neck of PaddleOCR v4): 1x3 and 1x1 ConvBN + Swish,
  // flatten(2).transpose(1, 2) into 40 tokens, 2 global-mixing transformer blocks, back to
  // NCHW, 1x1 ConvBN, Concat with the shortcut, 1x3 and 1x1 ConvBN.
  const std::string shortcut = x;
  const ConvSpec one_by_three{1, 3, 1, 1, 1, 1, false};
  std::string z = Swish(b, ConvBn(b, x, kIn, kIn / 8, one_by_three));
  z = Swish(b, ConvBn(b, z, kIn / 8, kDims, Square(1)));
  const std::string h_dim = Dim(b, z, 2), w_dim = Dim(b, z, 3);
  z = View(b, z, {Traced(Dim(b, z, 0)), Traced(Dim(b, z, 1)), Literal(-1)});
  z = b.Op("Transpose", {z}, {B::Ints("perm", {0, 2, 1})});
  for (int block = 0; block < 2; ++block) {
    // x + attn(norm1(x)): qkv(x).reshape(0, -1, 3, heads, dims / heads).transpose(2, 0, 3, 1, 4)
    const std::string n = LayerNorm(b, z, kDims);
    std::string qkv = Linear(b, n, kDims, 3 * kDims);
    qkv = View(
        b, qkv,
        {Traced(Dim(b, n, 0)), Literal(-1), Literal(3), Literal(kHeads), Literal(kDims / kHeads)});
    qkv = b.Op("Transpose", {qkv}, {B::Ints("perm", {2, 0, 3, 1, 4})});
    auto pick = [&](int64_t i) {
      return b.Op("Gather", {qkv, b.Int64Scalar(i)}, {B::Int("axis", 0)});
    };
    const float scale = 1.0f / std::sqrt(static_cast<float>(kDims / kHeads));
    std::string a = Attention(b, b.Op("Mul", {pick(0), b.Fill({}, scale)}), pick(1), pick(2), 1.0f,
                              /*scale_by_div=*/false, "");
    a = b.Op("Transpose", {a}, {B::Ints("perm", {0, 2, 1, 3})});
    a = View(b, a, {Traced(Dim(b, n, 0)), Literal(-1), Literal(kDims)});
    z = b.Op("Add", {z, Linear(b, a, kDims, kDims)});
    // x + mlp(norm2(x)), mlp ratio 2 with Swish.
    const std::string m =
        Linear(b, Swish(b, Linear(b, LayerNorm(b, z, kDims), kDims, 2 * kDims)), 2 * kDims, kDims);
    z = b.Op("Add", {z, m});
  }
  z = LayerNorm(b, z, kDims);
  z = View(b, z, {Literal(0), Traced(h_dim), Traced(w_dim), Literal(kDims)});
  z = b.Op("Transpose", {z}, {B::Ints("perm", {0, 3, 1, 2})});
  z = Swish(b, ConvBn(b, z, kDims, kIn, Square(1)));
  z = b.Op("Concat", {shortcut, z}, {B::Int("axis", 1)});
  z = Swish(b, ConvBn(b, z, 2 * kIn, kIn / 8, one_by_three));
  z = Swish(b, ConvBn(b, z, kIn / 8, kDims, Square(1)));
  // Im2Seq: squeeze(axis=2).transpose(0, 2, 1); CTCHead: Linear, Softmax over classes.
  z = b.Op("Squeeze", {z, b.Int64s({2})});
  z = b.Op("Transpose", {z}, {B::Ints("perm", {0, 2, 1})});
  b.Output(b.Op("Softmax", {Linear(b, z, kDims, kClasses)}, {B::Int("axis", 2)}));
  return b.model();
}

onnx::ModelProto ExportedMaskedBertModel() {
  // all-MiniLM-L6-v2's shape (BERT, 6 layers, width 384, 12 heads, 30522 tokens) as
  // transformers' BertModel exports at opset 14: int64 input_ids / attention_mask /
  // token_type_ids, embeddings by Gather, positions sliced by the traced sequence length.
  constexpr int64_t kTokens = 128, kWidth = 384, kHeads = 12, kLayers = 6, kVocab = 30522;
  B b(kOpset, 34);
  b.set_constants_as_nodes(true);
  const std::string ids = b.Input("input_ids", {1, kTokens});
  const std::string mask01 = b.Input("attention_mask", {1, kTokens});
  const std::string types = b.Input("token_type_ids", {1, kTokens});
  const std::string length = Dim(b, ids, 1);
  std::vector<int64_t> positions(512);
  for (int64_t i = 0; i < 512; ++i) positions[i] = i;
  const std::string position_ids =
      b.Op("Slice", {b.Op("Reshape", {b.Int64s(positions), b.Int64s({1, 512})}), b.Int64s({0}),
                     b.Op("Unsqueeze", {length, b.Int64s({0})}), b.Int64s({1}), b.Int64s({1})});
  auto embed = [&](int64_t rows, const std::string& index) {
    return b.Op("Gather", {b.Weight({rows, kWidth}, 0.05f), index}, {B::Int("axis", 0)});
  };
  std::string x = b.Op("Add", {embed(kVocab, ids), embed(2, types)});
  x = LayerNorm(b, b.Op("Add", {x, embed(512, position_ids)}), kWidth);
  // get_extended_attention_mask: mask[:, None, None, :].to(float); (1.0 - m) * finfo.min.
  std::string mask = b.Op("Unsqueeze", {mask01, b.Int64s({1})});
  mask = b.Op("Cast", {b.Op("Unsqueeze", {mask, b.Int64s({2})})}, {B::Int("to", 1)});
  mask = b.Op("Mul", {b.Op("Sub", {b.Fill({}, 1.0f), mask}),
                      b.Fill({}, std::numeric_limits<float>::lowest())});
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    const std::string q = SplitHeads(b, Linear(b, x, kWidth, kWidth), kHeads, kWidth / kHeads);
    const std::string k = SplitHeads(b, Linear(b, x, kWidth, kWidth), kHeads, kWidth / kHeads);
    const std::string v = SplitHeads(b, Linear(b, x, kWidth, kWidth), kHeads, kWidth / kHeads);
    const float scale = 1.0f / std::sqrt(static_cast<float>(kWidth / kHeads));
    std::string a = MergeHeads(b, Attention(b, q, k, v, scale, true, mask), kWidth);
    x = PostNormLayerTail(b, x, a, kWidth, /*residual_first=*/false);
  }
  b.Output(x);
  // The pooler: hidden[:, 0], Linear as Gemm (2-D), Tanh.
  const std::string first = b.Op("Gather", {x, b.Int64Scalar(0)}, {B::Int("axis", 1)});
  b.Output(
      b.Op("Tanh", {b.Op("Gemm",
                         {first, b.Weight({kWidth, kWidth}, std::sqrt(3.0f / kWidth)),
                          b.Weight({kWidth}, 0.05f)},
                         {B::Float("alpha", 1.0f), B::Float("beta", 1.0f), B::Int("transB", 1)})}));
  onnx::ModelProto model = b.model();
  for (const char* name : {"input_ids", "attention_mask", "token_type_ids"}) {
    MakeInt64Input(model, name);
  }
  return model;
}

}  // namespace ovfix::bench
