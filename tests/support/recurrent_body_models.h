// Recurrent cells inside control flow, the class of silero VAD v5 (its LSTM sits in the
// branches of an If on the sample rate): an LSTM and a GRU in the two branches of an If on a
// scalar condition, and an LSTM in a Loop body whose state is carried from one iteration to
// the next. Weights are seeded random values; `large_recurrent` puts one recurrent weight
// of the LSTM beyond fp16's range (7e4), so a run that stores floats in fp16 turns it into
// inf and the LSTM's outputs into NaN, while fp32 only saturates its gates.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/tensor.h"
#include "ir/text_form.h"

namespace ovfix::test_support {

// The dims of these models: T steps of one sequence with kRecurrentInput features each,
// and the cells' hidden size.
inline constexpr int kRecurrentSteps = 16, kRecurrentInput = 4, kRecurrentHidden = 4;

// `Constant <value = float[dims] {...}>` with values uniform in [-scale, scale].
inline std::string RecurrentWeight(const std::string& name, const std::vector<int64_t>& dims,
                                   float scale, std::mt19937& rng, float first = 0) {
  std::uniform_real_distribution<float> uniform(-scale, scale);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<std::string> values;
  for (int64_t i = 0; i < n; ++i) {
    values.push_back(absl::StrCat(i == 0 && first != 0 ? first : uniform(rng)));
  }
  return absl::StrCat("  ", name, " = Constant <value = float[", absl::StrJoin(dims, ", "), "] {",
                      absl::StrJoin(values, ", "), "}> ()\n");
}

// The LSTM's weights (w, r, b) and the GRU's (wg, rg, bg) as Constants of the main graph.
inline std::string RecurrentWeights(bool large_recurrent, uint32_t seed = 7) {
  std::mt19937 rng(seed);
  constexpr int64_t I = kRecurrentInput, H = kRecurrentHidden;
  return absl::StrCat(RecurrentWeight("w", {1, 4 * H, I}, 0.8f, rng),
                      RecurrentWeight("r", {1, 4 * H, H}, 0.8f, rng, large_recurrent ? 7e4f : 0),
                      RecurrentWeight("b", {1, 8 * H}, 0.3f, rng),
                      RecurrentWeight("wg", {1, 3 * H, I}, 0.8f, rng),
                      RecurrentWeight("rg", {1, 3 * H, H}, 0.8f, rng),
                      RecurrentWeight("bg", {1, 6 * H}, 0.3f, rng));
}

// Names the nodes of every graph whose output is called "NAME_out" NAME, so that the texts
// below name them ("If_0", "LSTM_3") as an exporter would.
inline void NameNodesAfterOutputs(Model& model) {
  for (Graph* g : GraphsRecursive(model.graph())) {
    for (Node* n : g->nodes()) {
      for (const Value* v : n->outputs()) {
        if (v != nullptr && v->name().ends_with("_out")) {
          n->set_name(v->name().substr(0, v->name().size() - 4));
        }
      }
    }
  }
}

// x of these models: a slow sine per feature.
inline Tensor SequenceInput() {
  std::vector<float> x;
  for (int t = 0; t < kRecurrentSteps; ++t) {
    for (int i = 0; i < kRecurrentInput; ++i) x.push_back(std::sin(0.3f * t + i));
  }
  return Tensor::FromVector<float>(DataType::kFloat, {kRecurrentSteps, 1, kRecurrentInput}, x);
}

// c of the If model: which branch runs.
inline Tensor ConditionInput(bool then_branch) {
  return Tensor::FromVector<uint8_t>(DataType::kBool, {}, {then_branch ? uint8_t{1} : uint8_t{0}});
}

// The model of `text` with its nodes named.
inline std::unique_ptr<Model> ParseNamed(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Model>> m = ParseModelText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return nullptr;
  NameNodesAfterOutputs(**m);
  return *std::move(m);
}

// If(c): then an LSTM 'LSTM_3', else a GRU 'GRU_5' over x, each branch's last hidden
// state [1, 1, H]. The If is 'If_0'.
inline std::string LstmGruInIfText(bool large_recurrent) {
  return absl::StrReplaceAll(
      absl::StrCat(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[T, 1, I] x, bool c) => (float[1, 1, H] If_0_out) {
)",
                   RecurrentWeights(large_recurrent), R"(
  If_0_out = If(c) <then_branch = then_g () => (float[1, 1, H] LSTM_3_out) {
                 seq, LSTM_3_out = LSTM <hidden_size = H> (x, w, r, b) },
             else_branch = else_g () => (float[1, 1, H] GRU_5_out) {
                 seq_g, GRU_5_out = GRU <hidden_size = H> (x, wg, rg, bg) }>
}
)"),
      {{"[T, 1, I]", absl::StrCat("[", kRecurrentSteps, ", 1, ", kRecurrentInput, "]")},
       {"H]", absl::StrCat(kRecurrentHidden, "]")},
       {"hidden_size = H", absl::StrCat("hidden_size = ", kRecurrentHidden)}});
}

// LstmGruInIfText with the LSTM's state shifted by 1000 and back, then halved, in the then
// branch: fp16 loses the state's fraction there (values near 1000 are 0.5 apart), so only
// the Add 'Shift_7' and the Sub 'Back_8' in fp32 meet the criteria; the LSTM and the Mul
// compute well in fp16.
inline std::string LstmThenOffsetInIfText() {
  return absl::StrReplaceAll(
      LstmGruInIfText(false),
      {{"(float[1, 1, 4] LSTM_3_out) {", "(float[1, 1, 4] Half_9_out) {"},
       {"(x, w, r, b) },", absl::StrCat("(x, w, r, b)\n", R"(
                 Shift_7_out = Add(LSTM_3_out, offset)
                 Back_8_out = Sub(Shift_7_out, offset)
                 Half_9_out = Mul(Back_8_out, half) },)")},
       {"  If_0_out = If(c)", R"(  offset = Constant <value = float[1] {1000}> ()
  half = Constant <value = float[1] {0.5}> ()
  If_0_out = If(c))"}});
}

// A Loop 'Loop_0' of 3 iterations, each feeding x plus the state it got to an LSTM
// 'LSTM_1' whose last hidden state is the next iteration's state.
inline std::string LstmInLoopText(bool large_recurrent) {
  return absl::StrReplaceAll(
      absl::StrCat(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[T, 1, I] x) => (float[1, 1, H] Loop_0_out) {
)",
                   RecurrentWeights(large_recurrent), R"(
  n = Constant <value = int64 {3}> ()
  go = Constant <value = bool {1}> ()
  h0 = Constant <value = float[1, 1, H] {0, 0, 0, 0}> ()
  Loop_0_out = Loop(n, go, h0) <body = body_g (int64 i, bool c_in, float[1, 1, H] h_in)
                                  => (bool c_out, float[1, 1, H] LSTM_1_out) {
    c_out = Identity(c_in)
    xi = Add(x, h_in)
    seq, LSTM_1_out = LSTM <hidden_size = H> (xi, w, r, b)
  }>
}
)"),
      {{"[T, 1, I]", absl::StrCat("[", kRecurrentSteps, ", 1, ", kRecurrentInput, "]")},
       {"H]", absl::StrCat(kRecurrentHidden, "]")},
       {"hidden_size = H", absl::StrCat("hidden_size = ", kRecurrentHidden)}});
}

// LstmInLoopText with the same shift by 1000 and back, then halving, on the LSTM's state in
// the Loop body before it is carried to the next iteration.
inline std::string LstmThenOffsetInLoopText() {
  return absl::StrReplaceAll(
      LstmInLoopText(false),
      {{"float[1, 1, 4] LSTM_1_out) {", "float[1, 1, 4] Half_9_out) {"},
       {"(xi, w, r, b)\n", R"((xi, w, r, b)
    Shift_7_out = Add(LSTM_1_out, offset)
    Back_8_out = Sub(Shift_7_out, offset)
    Half_9_out = Mul(Back_8_out, half)
)"},
       {"  Loop_0_out = Loop(", R"(  offset = Constant <value = float[1] {1000}> ()
  half = Constant <value = float[1] {0.5}> ()
  Loop_0_out = Loop()"}});
}

}  // namespace ovfix::test_support
