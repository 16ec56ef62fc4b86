// `--target tensorrt` on the two classes of export where ranks were left open on held-back
// models (issue 37): a torchvision Faster R-CNN's arithmetic after NonMaxSuppression, and
// silero VAD legacy, whose LSTM and the element-wise ops around it sit in the branches of an
// If on the sample rate. In both, onnx's inference cannot tell the rank of an input of an
// element-wise node (a Reshape to a shape computed at run time, a Squeeze without axes, a
// TopK with a data-dependent k and what is computed from them). The written file is read
// back as a backend parser reads it (onnx's shape inference on the file, plus its
// value_info): every element-wise node, in the main graph and in every body, reads inputs of
// known and equal rank; and onnxruntime runs the file with the original's outputs.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "tests/cli/cli_util.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/fp16_storage_emulation.h"
#include "tests/support/ort_peer.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

// The element-wise ops of ONNX (numpy-style broadcasting, and PRelu's slope), listed here
// independently of ovfix's op groups.
const std::set<std::string>& ElementwiseOps() {
  static const std::set<std::string> kOps = {
      "Add",   "Sub",   "Mul",      "Div",         "Pow",       "Mod",
      "Where", "Equal", "Less",     "LessOrEqual", "Greater",   "GreaterOrEqual",
      "And",   "Or",    "Xor",      "Max",         "Min",       "Sum",
      "Mean",  "PRelu", "BitShift", "BitwiseAnd",  "BitwiseOr", "BitwiseXor"};
  return kOps;
}

using Ranks = std::map<std::string, int>;  // value name -> rank, -1 unknown

void Declare(const onnx::ValueInfoProto& v, Ranks& ranks) {
  const bool shaped = v.type().has_tensor_type() && v.type().tensor_type().has_shape();
  ranks[v.name()] = shaped ? v.type().tensor_type().shape().dim_size() : -1;
}

// Element-wise nodes of `g` and the bodies inside it whose inputs are not all of one known
// rank, as "where: node (op) ranks [..]".
void CollectRankGaps(const onnx::GraphProto& g, Ranks ranks, const std::string& where,
                     std::vector<std::string>& gaps) {
  for (const auto& v : g.input()) Declare(v, ranks);
  for (const auto& t : g.initializer()) ranks[t.name()] = t.dims_size();
  for (const auto& v : g.value_info()) Declare(v, ranks);
  for (const auto& v : g.output()) Declare(v, ranks);
  for (const onnx::NodeProto& n : g.node()) {
    const std::string label = absl::StrCat(where, n.name().empty() ? n.output(0) : n.name());
    if (ElementwiseOps().contains(n.op_type())) {
      std::vector<int> seen;
      for (const std::string& in : n.input()) {
        if (in.empty()) continue;
        auto it = ranks.find(in);
        seen.push_back(it == ranks.end() ? -1 : it->second);
      }
      const bool known = std::none_of(seen.begin(), seen.end(), [](int r) { return r < 0; });
      const bool equal =
          std::adjacent_find(seen.begin(), seen.end(), std::not_equal_to<>()) == seen.end();
      if (!known || !equal) {
        gaps.push_back(
            absl::StrCat(label, " (", n.op_type(), ") ranks [", absl::StrJoin(seen, ", "), "]"));
      }
    }
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) CollectRankGaps(a.g(), ranks, absl::StrCat(label, ".", a.name(), ": "), gaps);
      for (const onnx::GraphProto& body : a.graphs()) {
        CollectRankGaps(body, ranks, absl::StrCat(label, ".", a.name(), ": "), gaps);
      }
    }
  }
}

// The rank gaps of the file at `path`, read as a backend parser reads it: the bytes parsed,
// onnx's shape inference run on them (no data propagation, as onnx.shape_inference's
// default), then the ranks the file and the inference state.
std::vector<std::string> RankGaps(const std::string& path) {
  onnx::ModelProto proto;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(proto.ParseFromIstream(&in)) << path;
  try {
    onnx::shape_inference::InferShapes(proto);
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << ": onnx's shape inference fails: " << e.what();
  }
  std::vector<std::string> gaps;
  CollectRankGaps(proto.graph(), {}, "", gaps);
  return gaps;
}

// Whether every gap lies in the body `body` ("If_3.else_branch") or the bodies inside it.
bool AllWithin(const std::vector<std::string>& gaps, const std::string& body) {
  return std::all_of(gaps.begin(), gaps.end(),
                     [&](const std::string& g) { return g.starts_with(body + ": "); });
}

// The bodies of `report` no calibration set ran in which something is left, with what.
std::vector<std::string> BodiesWithSomethingLeft(const ConversionReport& report) {
  std::vector<std::string> out;
  for (const BodyNotRun& b : report.bodies_not_run) {
    if (!b.left.empty()) out.push_back(absl::StrCat(b.body, ": ", absl::StrJoin(b.left, ", ")));
  }
  return out;
}

// Clears the shapes of every body's outputs, as older exporters wrote them (element type only).
void UnshapeBodyOutputs(Model& model) {
  for (Graph* g : GraphsRecursive(model.graph())) {
    if (g == &model.graph()) continue;
    for (Value* v : g->outputs()) v->mutable_type()->mutable_tensor_type()->clear_shape();
  }
}

// Names each node whose output is "NAME_out" PREFIX + NAME, the way exporters name them
// ("/m/roi_heads/Div"), and the others OP_K as older exporters did ("If_0").
void NameNodes(Model& model, const std::string& prefix) {
  int k = 0;
  for (Graph* g : GraphsRecursive(model.graph())) {
    for (Node* n : g->nodes()) {
      const Value* v = n->outputs().empty() ? nullptr : n->output(0);
      if (v != nullptr && v->name().ends_with("_out")) {
        n->set_name(prefix + v->name().substr(0, v->name().size() - 4));
      } else {
        n->set_name(absl::StrCat(prefix, n->op_type(), "_", k++));
      }
    }
  }
}

// --- torchvision Faster R-CNN after NonMaxSuppression (opset 11) ---
//
// The kept indices' column selects boxes and scores; the boxes are reshaped to [count, 4]
// with count read at run time (Shape of the kept indices) and rescaled as
// transform.postprocess's resize_boxes does (Div, Mul_2, Add_2 against constants of rank 0,
// 1 and 2, and a Sub of the mean box, a tensor of rank 1); the scores go through an
// Unsqueeze and a Squeeze without axes, then a TopK with k = min(count, 3), a Where and a
// Mul against scalars. The kept indices come out of an If on their count (torchvision's
// batched_nms is scripted: an empty result when nothing is kept, else the first
// detections_per_img), after a Squeeze without axes; calibration never takes the empty
// branch. onnx's inference knows no rank after the Squeezes, the If, the Reshape or the TopK.
constexpr char kPostNms[] = R"(
<ir_version: 6, opset_import: ["" : 11]>
rcnn (float[1, 8, 4] boxes, float[1, 1, 8] scores) => (float[D, 4] detections, float[D] det_scores) {
  max_out = Constant <value = int64[1] {100}> ()
  iou = Constant <value = float[1] {0.5}> ()
  threshold = Constant <value = float[1] {0.05}> ()
  selected_out = NonMaxSuppression(boxes, scores, max_out, iou, threshold)
  two = Constant <value = int64[1] {2}> ()
  column_2_out = Gather <axis = 1> (selected_out, two)
  keep_all_out = Squeeze(column_2_out)
  numel_out = Size(keep_all_out)
  zero_i = Constant <value = int64 {0}> ()
  none_out = Equal(numel_out, zero_i)
  zero1 = Constant <value = int64[1] {0}> ()
  detections_per_img = Constant <value = int64[1] {100}> ()
  keep_out = If(none_out) <then_branch = nothing_kept () => (int64[K] none_keep) {
                              none_keep = Slice(keep_all_out, zero1, zero1) },
                            else_branch = kept () => (int64[K] kept_keep) {
                              kept_keep = Slice(keep_all_out, zero1, detections_per_img) }>
  all_boxes_out = Squeeze <axes = [0]> (boxes)
  kept_out = Gather <axis = 0> (all_boxes_out, keep_out)
  count_out = Shape(keep_out)
  four = Constant <value = int64[1] {4}> ()
  box_shape_out = Concat <axis = 0> (count_out, four)
  Reshape_out = Reshape(kept_out, box_shape_out)
  size = Constant <value = float[4] {800, 600, 800, 600}> ()
  Div_out = Div(Reshape_out, size)
  ratio = Constant <value = float {1.5}> ()
  Mul_2_out = Mul(Div_out, ratio)
  offset = Constant <value = float[1, 4] {0.25, -0.5, 0.25, -0.5}> ()
  Add_2_out = Add(Mul_2_out, offset)
  center_out = ReduceMean <axes = [0, 1], keepdims = 0> (boxes)
  scaled_center_out = Div(center_out, size)
  Sub_3_out = Sub(Add_2_out, scaled_center_out)
  flat = Constant <value = int64[1] {-1}> ()
  all_scores_out = Reshape(scores, flat)
  kept_scores_out = Gather <axis = 0> (all_scores_out, keep_out)
  column_out = Unsqueeze <axes = [1]> (kept_scores_out)
  Squeeze_out = Squeeze(column_out)
  one = Constant <value = int64[1] {1}> ()
  k_out = Sub(count_out, one)
  top_scores_out, top_index_out = TopK <axis = 0> (Squeeze_out, k_out)
  half = Constant <value = float {0.5}> ()
  high_out = Greater(top_scores_out, half)
  zero = Constant <value = float {0}> ()
  Where_out = Where(high_out, top_scores_out, zero)
  det_scores = Mul(Where_out, ratio)
  picked_out = Gather <axis = 0> (Sub_3_out, top_index_out)
  two_f = Constant <value = float {2}> ()
  Pow_out = Pow(picked_out, two_f)
  detections = Max(Pow_out, zero)
}
)";

// Eight boxes in an 800 x 600 image, and their scores: `spread` moves the boxes apart, so
// that NonMaxSuppression keeps more of them.
std::vector<Tensor> PostNmsInputs(float spread) {
  std::vector<float> boxes, scores;
  for (int i = 0; i < 8; ++i) {
    const float x = 40.0f + spread * (i % 4) * 60.0f, y = 30.0f + spread * (i / 4) * 70.0f;
    const float w = 100.0f + 7.0f * i, h = 80.0f + 5.0f * i;
    boxes.insert(boxes.end(), {y, x, y + h, x + w});
    scores.push_back(0.3f + 0.08f * static_cast<float>((i * 5) % 8));
  }
  return {Tensor::FromVector<float>(DataType::kFloat, {1, 8, 4}, boxes),
          Tensor::FromVector<float>(DataType::kFloat, {1, 1, 8}, scores)};
}

// --- silero VAD legacy (opset 12) ---
//
// input [1, samples], sr (int64 scalar), h and c [1, 1, 4]; If(sr == 16000) picks a branch
// per sample rate, each with its own frame length (64 samples at 16 kHz, 32 at 8 kHz: 8
// frames either way) and LSTM. In each branch the audio is reshaped to [frames, 1, frame] with
// the frame count computed at run time (Shape, Gather, Div, Unsqueeze, Concat, as older
// PyTorch wrote it), scaled by a gain of rank 1; the LSTM's sequence output loses its unit
// dims through the If scripted nn.LSTM writes on the way out (`if not is_batched:
// output.squeeze(1)`: its branches give different ranks, so onnx types nothing after it),
// then a Squeeze without axes and an Unsqueeze, is gated (Sigmoid, Mul, Add against
// constants of rank 1 and 0) and averaged; the states are decayed by constants of rank 1.
constexpr char kSileroLegacyBody[] =
    R"(B_g () => (float[1, 1] B_prob, float[1, 1, 4] B_hn, float[1, 1, 4] B_cn) {
      B_samples_out = Shape(input)
      B_length_out = Gather <axis = 0> (B_samples_out, one_index)
      B_frame = Constant <value = int64 {FRAME}> ()
      B_frames_out = Div(B_length_out, B_frame)
      B_frames1_out = Unsqueeze <axes = [0]> (B_frames_out)
      B_frame1 = Constant <value = int64[1] {FRAME}> ()
      B_frame_shape_out = Concat <axis = 0> (B_frames1_out, one1, B_frame1)
      B_Reshape_out = Reshape(input, B_frame_shape_out)
      B_Mul_out = Mul(B_Reshape_out, B_gain)
      B_dims_out = Shape(B_Mul_out)
      B_rank_out = Size(B_dims_out)
      B_three = Constant <value = int64 {3}> ()
      B_batched_out = Equal(B_rank_out, B_three)
      B_unbatched_out = Not(B_batched_out)
      B_x_out = If(B_unbatched_out) <then_branch = B_unbatched () => (float[T, 1, F] B_x1) {
                                       B_x1 = Unsqueeze <axes = [1]> (B_Mul_out) },
                                     else_branch = B_batched () => (float[T, 1, F] B_x2) {
                                       B_x2 = Identity(B_Mul_out) }>
      B_y_out, B_yh_out, B_yc_out = LSTM <hidden_size = 4> (B_x_out, B_w, B_r, B_b, , h, c)
      B_y_sel_out = If(B_unbatched_out) <then_branch = B_unbatched_y () => (float[T, 4] B_y1) {
                                           B_y1 = Squeeze <axes = [1]> (B_y_out) },
                                         else_branch = B_batched_y () => (float[T, 1, 1, 4] B_y2) {
                                           B_y2 = Identity(B_y_out) }>
      B_Squeeze_out = Squeeze(B_y_sel_out)
      B_Unsqueeze_out = Unsqueeze <axes = [0]> (B_Squeeze_out)
      B_Sigmoid_out = Sigmoid(B_Unsqueeze_out)
      B_Mul_1_out = Mul(B_Sigmoid_out, B_weight)
      B_Add_out = Add(B_Mul_1_out, B_bias)
      B_Sub_out = Sub(B_Add_out, B_Unsqueeze_out)
      B_mean_out = ReduceMean <keepdims = 0> (B_Sub_out)
      B_mean1_out = Unsqueeze <axes = [0, 1]> (B_mean_out)
      B_prob = Sigmoid(B_mean1_out)
      B_hn = Mul(B_yh_out, B_decay)
      B_Add_2_out = Add(B_yc_out, B_bias)
      B_cn = Mul(B_Add_2_out, B_decay)
    })";

// `Constant <value = float[dims] {...}>` named `name`, values uniform in [-scale, scale].
std::string Weight(const std::string& name, const std::vector<int64_t>& dims, float scale,
                   std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-scale, scale);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<std::string> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(absl::StrCat(uniform(rng)));
  return absl::StrCat("  ", name, " = Constant <value = float[", absl::StrJoin(dims, ", "), "] {",
                      absl::StrJoin(values, ", "), "}> ()\n");
}

std::string SileroLegacyText() {
  std::mt19937 rng(11);
  std::string weights;
  for (const auto& [branch, frame] : {std::pair{"b16", 64}, std::pair{"b8", 32}}) {
    const std::string p = absl::StrCat(branch, "_");
    absl::StrAppend(&weights, Weight(p + "gain", {frame}, 1.0f, rng),
                    Weight(p + "w", {1, 16, frame}, 0.4f, rng),
                    Weight(p + "r", {1, 16, 4}, 0.5f, rng), Weight(p + "b", {1, 32}, 0.2f, rng),
                    Weight(p + "weight", {4}, 1.0f, rng), Weight(p + "decay", {4}, 1.0f, rng));
    absl::StrAppend(&weights, "  ", p, "bias = Constant <value = float {",
                    branch == std::string("b16") ? "0.25" : "-0.125", "}> ()\n");
  }
  auto body = [](const std::string& prefix, int frame) {
    return absl::StrReplaceAll(kSileroLegacyBody,
                               {{"B_", prefix + "_"}, {"FRAME", absl::StrCat(frame)}});
  };
  return absl::StrCat(R"(
<ir_version: 7, opset_import: ["" : 12]>
vad (float[1, S] input, int64 sr, float[1, 1, 4] h, float[1, 1, 4] c)
    => (float[1, 1] output, float[1, 1, 4] hn, float[1, 1, 4] cn) {
)",
                      weights, R"(
  one_index = Constant <value = int64 {1}> ()
  one1 = Constant <value = int64[1] {1}> ()
  rate = Constant <value = int64 {16000}> ()
  is16k_out = Equal(sr, rate)
  output, hn, cn = If(is16k_out) <then_branch = )",
                      body("b16", 64), ",\n    else_branch = ", body("b8", 32), R"(>
}
)");
}

// One sample-rate's inputs: `samples` of a chirp-like signal, sr, and a non-zero state.
std::vector<Tensor> SileroInputs(int64_t rate) {
  const int64_t samples = rate == 16000 ? 512 : 256;
  std::vector<float> audio;
  for (int64_t i = 0; i < samples; ++i) {
    const float t = static_cast<float>(i) / static_cast<float>(rate);
    audio.push_back(0.6f * std::sin(2 * 3.14159f * (300.0f + 4e5f * t) * t));
  }
  std::vector<float> h, c;
  for (int i = 0; i < 4; ++i) {
    h.push_back(0.1f * static_cast<float>(i) - 0.15f);
    c.push_back(0.2f - 0.05f * static_cast<float>(i));
  }
  return {Tensor::FromVector<float>(DataType::kFloat, {1, samples}, audio),
          Tensor::FromVector<int64_t>(DataType::kInt64, {}, {rate}),
          Tensor::FromVector<float>(DataType::kFloat, {1, 1, 4}, h),
          Tensor::FromVector<float>(DataType::kFloat, {1, 1, 4}, c)};
}

// A model written to `dir`/original.onnx with its input sets as test_data_set_K folders.
struct Written {
  fs::path dir;
  std::string original, converted;
  std::vector<std::vector<std::string>> sets;  // input files, in the graph's input order
};

Written WriteModel(const std::string& text, const std::string& prefix,
                   const std::vector<std::vector<Tensor>>& sets, const std::string& name) {
  Written w;
  w.dir = test_support::ScratchDir("trt_ranks", name);
  w.original = (w.dir / "original.onnx").string();
  w.converted = (w.dir / "converted.onnx").string();
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return w;
  NameNodes(**model, prefix);
  UnshapeBodyOutputs(**model);
  EXPECT_TRUE(SaveModel(**model, w.original).ok());
  std::vector<std::string> names;
  for (const Value* v : (*model)->graph().inputs()) {
    if (!v->is_initializer()) names.push_back(v->name());
  }
  for (size_t s = 0; s < sets.size(); ++s) {
    const fs::path folder = w.dir / absl::StrCat("test_data_set_", s);
    fs::create_directories(folder);
    w.sets.emplace_back();
    for (size_t k = 0; k < sets[s].size(); ++k) {
      const std::string file = (folder / absl::StrCat("input_", k, ".pb")).string();
      EXPECT_TRUE(WriteTensorFile(file, sets[s][k], names[k]).ok());
      w.sets.back().push_back(file);
    }
  }
  return w;
}

// Converts `w.original` for tensorrt on the input sets `calibrated` (indices into w.sets),
// writing `w.converted`.
absl::StatusOr<ConversionReport> ConvertForTensorrt(const Written& w,
                                                    const std::vector<size_t>& calibrated,
                                                    std::vector<std::string>* log = nullptr,
                                                    const std::string& target = "tensorrt") {
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel(w.original);
  if (!model.ok()) return model.status();
  PipelineOptions options;
  options.input_path = w.original;
  options.output_path = w.converted;
  options.write_output = true;
  options.convert.target = target;
  for (size_t s : calibrated) {
    InputFiles files;
    size_t k = 0;
    for (const Value* v : (*model)->graph().inputs()) {
      if (!v->is_initializer()) files[v->name()] = w.sets[s][k++];
    }
    options.input_sets.push_back(files);
  }
  if (log != nullptr) options.log = [log](const std::string& line) { log->push_back(line); };
  return ConvertModel(**model, options);
}

// onnxruntime runs the converted file on every input set with the original's outputs, within
// 1e-4 of each output's range.
void ExpectSameOutputsInOnnxruntime(const std::string& modules, const Written& w) {
  for (size_t s = 0; s < w.sets.size(); ++s) {
    const std::vector<Tensor> expected = testing_support::RunOrt(
        modules, w.original, w.sets[s], w.dir / absl::StrCat("ort_original_", s));
    const std::vector<Tensor> actual = testing_support::RunOrt(
        modules, w.converted, w.sets[s], w.dir / absl::StrCat("ort_converted_", s));
    ASSERT_FALSE(expected.empty()) << "set " << s;
    ASSERT_EQ(actual.size(), expected.size()) << "set " << s;
    for (size_t k = 0; k < actual.size(); ++k) {
      ASSERT_EQ(actual[k].dims(), expected[k].dims()) << "set " << s << ", output " << k;
      double low = 0, high = 0, error = 0;
      for (int64_t i = 0; i < expected[k].numel(); ++i) {
        const double e = expected[k].GetAsDouble(i), a = actual[k].GetAsDouble(i);
        low = i == 0 ? e : std::min(low, e);
        high = i == 0 ? e : std::max(high, e);
        error = std::max(error, std::isnan(a) ? INFINITY : std::fabs(a - e));
      }
      EXPECT_LE(error, 1e-4 * std::max(high - low, 1e-6)) << "set " << s << ", output " << k;
    }
  }
}

std::string Lines(const std::vector<std::string>& lines) {
  return absl::StrCat(absl::StrJoin(lines, "\n"), "\n");
}

// The torchvision export after NonMaxSuppression, calibrated on one set of boxes and run on
// another that keeps a different number of them.
TEST(TensorrtRanks, FasterRcnnAfterNonMaxSuppression) {
  const Written w =
      WriteModel(kPostNms, "/m/roi_heads/", {PostNmsInputs(1.0f), PostNmsInputs(0.4f)}, "post_nms");
  ASSERT_EQ(w.sets.size(), 2u);
  // The model is of the class seen: onnx's inference leaves ranks open after the NMS.
  const std::vector<std::string> before = RankGaps(w.original);
  EXPECT_GE(before.size(), 6u) << Lines(before);
  std::printf("before conversion:\n%s", Lines(before).c_str());

  absl::StatusOr<ConversionReport> report = ConvertForTensorrt(w, {0});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->written) << SummaryTable(*report);
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  // The empty-result branch never ran; nothing is left in it.
  EXPECT_EQ(report->bodies_not_run.size(), 1u) << SummaryTable(*report);
  EXPECT_EQ(BodiesWithSomethingLeft(*report), std::vector<std::string>{}) << SummaryTable(*report);
  EXPECT_EQ(RankGaps(w.converted), std::vector<std::string>{});

  OVFIX_REQUIRE_ORT(modules);
  ExpectSameOutputsInOnnxruntime(modules, w);
  fs::remove_all(w.dir);
}

// silero VAD legacy calibrated at both sample rates: nothing is left in either branch.
TEST(TensorrtRanks, SileroLegacyCalibratedAtBothRates) {
  const Written w =
      WriteModel(SileroLegacyText(), "", {SileroInputs(16000), SileroInputs(8000)}, "silero2");
  ASSERT_EQ(w.sets.size(), 2u);
  const std::vector<std::string> before = RankGaps(w.original);
  for (const std::string& gap : before) {
    EXPECT_NE(gap.find("_branch: "), std::string::npos) << gap;  // all in the If's branches
  }
  EXPECT_GE(before.size(), 10u) << Lines(before);
  std::printf("before conversion:\n%s", Lines(before).c_str());

  absl::StatusOr<ConversionReport> report = ConvertForTensorrt(w, {0, 1});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->written) << SummaryTable(*report);
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  // Nothing is left unrun: the LSTMs' Ifs on the input's rank, whose unbatched branches never
  // ran, have a constant condition once that rank is a fact, and are inlined.
  EXPECT_TRUE(report->bodies_not_run.empty()) << SummaryTable(*report);
  EXPECT_EQ(RankGaps(w.converted), std::vector<std::string>{});

  OVFIX_REQUIRE_ORT(modules);
  ExpectSameOutputsInOnnxruntime(modules, w);
  fs::remove_all(w.dir);
}

// Calibrated at 16 kHz only: the 8 kHz branch keeps what static inference proves, and the
// report and the console name it with what is left there; the main graph and the branch that
// ran are complete, and the file still computes what the original does at both rates.
TEST(TensorrtRanks, SileroLegacyCalibratedAtOneRate) {
  const Written w =
      WriteModel(SileroLegacyText(), "", {SileroInputs(16000), SileroInputs(8000)}, "silero1");
  ASSERT_EQ(w.sets.size(), 2u);
  absl::StatusOr<ConversionReport> report = ConvertForTensorrt(w, {0});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->written) << SummaryTable(*report);
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  // The 8 kHz branch, and the unbatched branch of the 16 kHz LSTM's If (nothing left there).
  const std::vector<std::string> left = BodiesWithSomethingLeft(*report);
  ASSERT_EQ(left.size(), 1u) << SummaryTable(*report);
  const BodyNotRun& not_run =
      *std::find_if(report->bodies_not_run.begin(), report->bodies_not_run.end(),
                    [](const BodyNotRun& b) { return !b.left.empty(); });
  EXPECT_TRUE(not_run.body.ends_with(".else_branch")) << not_run.body;
  EXPECT_EQ(not_run.body.find(" / "), std::string::npos) << not_run.body;  // the outer If's
  const std::vector<std::string> gaps = RankGaps(w.converted);
  EXPECT_TRUE(AllWithin(gaps, not_run.body)) << Lines(gaps);
  EXPECT_FALSE(gaps.empty()) << "the 8 kHz branch was never run, yet all its ranks are known";
  // Every element-wise node left open is named in the report.
  int elementwise_left = 0;
  for (const std::string& l : not_run.left) {
    elementwise_left += l.starts_with("element-wise input of unknown rank");
  }
  EXPECT_GT(elementwise_left, 0) << Lines(not_run.left);

  // The console says so without --verbose.
  const fs::path cli_out = w.dir / "cli.onnx";
  const testing::CommandResult r = testing::RunOvfix(
      absl::StrCat("convert ", w.original, " ", cli_out.string(),
                   " --target tensorrt --calibration-data ", (w.dir / "test_data_set_0").string()));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string console = r.out + r.err;
  EXPECT_NE(console.find(absl::StrCat("no calibration set ran ", not_run.body, " (")),
            std::string::npos)
      << console;
  EXPECT_NE(console.find("element-wise input of unknown rank"), std::string::npos) << console;

  OVFIX_REQUIRE_ORT(modules);
  ExpectSameOutputsInOnnxruntime(modules, w);
  fs::remove_all(w.dir);
}

// silero VAD legacy for gpu-fp16 with the defaults, calibrated at both rates: the LSTMs and
// what surrounds them inside the If's branches compute in fp16 (the float nodes inside bodies
// counted), and the file, run by onnxruntime as a backend storing float16 computes it,
// meets the default criteria at 16 and 8 kHz.
TEST(TensorrtRanks, SileroLegacyToGpuFp16MostlyFp16AtBothRates) {
  const Written w =
      WriteModel(SileroLegacyText(), "", {SileroInputs(16000), SileroInputs(8000)}, "silero_fp16");
  ASSERT_EQ(w.sets.size(), 2u);
  absl::StatusOr<ConversionReport> report = ConvertForTensorrt(w, {0, 1}, nullptr, "gpu-fp16");
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->written) << SummaryTable(*report);
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  ASSERT_TRUE(report->cost.has_value()) << SummaryTable(*report);
  EXPECT_GT(report->cost->float_nodes, 20) << "the bodies' nodes are not counted";
  EXPECT_LE(report->cost->NodeShare(), 0.5) << SummaryTable(*report);

  OVFIX_REQUIRE_ORT(modules);
  const std::string emulated = (w.dir / "converted_fp16_storage.onnx").string();
  testing_support::EmulateFp16Storage(w.converted, emulated);
  for (size_t s = 0; s < w.sets.size(); ++s) {
    const std::vector<Tensor> expected = testing_support::RunOrt(
        modules, w.original, w.sets[s], w.dir / absl::StrCat("ort_original_", s));
    const std::vector<Tensor> actual = testing_support::RunOrt(
        modules, emulated, w.sets[s], w.dir / absl::StrCat("ort_emulated_", s));
    ASSERT_EQ(actual.size(), expected.size()) << "set " << s;
    for (size_t k = 0; k < actual.size(); ++k) {
      EXPECT_LE(exec::RelativeError(actual[k], expected[k]), 1e-2)
          << "set " << s << ", output " << k;
    }
  }
  fs::remove_all(w.dir);
}

}  // namespace
}  // namespace ovfix::converter
