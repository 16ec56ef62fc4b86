// The repair looks for the fewest fp32 nodes: a round that raises the error is not kept (in
// the search on its own and on a hand-built model where it would be), the rounds stop at
// the first set that meets the criterion, nodes the last rounds did not need are given
// back, the evaluations stay within the budget; when only the fp32 model meets the
// criterion `ovfix convert` says so and exits 1. The cost report counts fp32 nodes,
// multiply-adds, weight bytes and Casts as worked out by hand, and `--report r.html` writes
// a self-contained page with the model.
#include "converter/repair.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "converter/precision_cost.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/text_form.h"
#include "rules/light_proto.h"
#include "tests/cli/cli_util.h"
#include "tests/support/offset_model.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using converter::EvaluateUnits;
using converter::SearchFewestUnits;
using converter::UnitProbe;
using converter::UnitSearch;

std::vector<std::vector<int>> SingleNodeUnits(int n) {
  std::vector<std::vector<int>> units;
  for (int i = 0; i < n; ++i) units.push_back({i});
  return units;
}

std::set<int> Fp32(const std::vector<bool>& flags) {
  std::set<int> out;
  for (size_t i = 0; i < flags.size(); ++i) {
    if (flags[i]) out.insert(static_cast<int>(i));
  }
  return out;
}

// Node 0 is ranked first by its local error, but keeping it in fp32 makes the output worse
// (its rounding cancelled another's); node 2 is the one that matters. The rounds that take
// node 0 without node 2 raise the score and are not kept; the set found is {2}.
TEST(RepairSearch, ARoundThatRaisesTheErrorIsNotKept) {
  const UnitProbe first{3.0, {0.9, 0.05, 0.05, 0.0}};
  int evaluations = 0;
  EvaluateUnits evaluate = [&](const std::vector<bool>& fp32) -> absl::StatusOr<UnitProbe> {
    ++evaluations;
    double score = fp32[2] ? 0.6 : 3.0;
    if (fp32[0]) score += 0.3;
    return UnitProbe{score, first.added};
  };
  absl::StatusOr<UnitSearch> s = SearchFewestUnits(4, SingleNodeUnits(4), first, 10, evaluate);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_FALSE(s->rounds.empty());
  EXPECT_EQ(Fp32(s->rounds[0].fp32), std::set<int>({0}));  // the best-ranked node first
  EXPECT_DOUBLE_EQ(s->rounds[0].score, 3.3);
  EXPECT_FALSE(s->rounds[0].kept);
  // Every add round kept lowered the score below the best before it.
  double best = first.score;
  for (const converter::UnitRound& r : s->rounds) {
    if (r.give_back) continue;
    EXPECT_EQ(r.kept, r.score < best) << r.score;
    if (r.kept) best = r.score;
  }
  EXPECT_TRUE(s->meets());
  EXPECT_EQ(Fp32(s->fp32), std::set<int>({2}));
  EXPECT_DOUBLE_EQ(s->score, 0.6);
  EXPECT_LE(evaluations, 10);
  EXPECT_EQ(evaluations, static_cast<int>(s->rounds.size()));
}

// Nodes 0, 1 and 2 are needed (each one missing costs 0.6 of the tolerance); the ranking
// puts them first, with 3..9 behind. The first round takes more than those three and
// meets: no round adds after that, and the give-back returns what was not needed.
TEST(RepairSearch, StopsAtTheFirstSetThatMeetsAndGivesBackWhatItDidNotNeed) {
  std::vector<double> added(20, 0.0);
  for (int i = 0; i < 3; ++i) added[i] = 1.0;
  for (int i = 3; i < 10; ++i) added[i] = 0.5;
  const UnitProbe first{2.3, added};
  EvaluateUnits evaluate = [&](const std::vector<bool>& fp32) -> absl::StatusOr<UnitProbe> {
    const int missing = !fp32[0] + !fp32[1] + !fp32[2];
    return UnitProbe{0.5 + 0.6 * missing, added};
  };
  absl::StatusOr<UnitSearch> s = SearchFewestUnits(20, SingleNodeUnits(20), first, 18, evaluate);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_FALSE(s->rounds.empty());
  EXPECT_FALSE(s->rounds[0].give_back);
  EXPECT_TRUE(s->rounds[0].kept);
  EXPECT_LE(s->rounds[0].score, 1.0);
  for (size_t k = 1; k < s->rounds.size(); ++k) EXPECT_TRUE(s->rounds[k].give_back) << k;
  EXPECT_GT(Fp32(s->rounds[0].fp32).size(), 3u);  // the round took more than needed
  EXPECT_EQ(Fp32(s->fp32), std::set<int>({0, 1, 2}));
  EXPECT_TRUE(s->meets());
}

// Give-back splits a unit: a unit of three nodes where only the first is needed keeps only
// that node.
TEST(RepairSearch, GivesBackPartOfAUnit) {
  const UnitProbe first{4.0, {1.0}};
  EvaluateUnits evaluate = [&](const std::vector<bool>& fp32) -> absl::StatusOr<UnitProbe> {
    return UnitProbe{fp32[0] ? 0.2 : 4.0, {1.0}};
  };
  absl::StatusOr<UnitSearch> s = SearchFewestUnits(3, {{0, 1, 2}}, first, 18, evaluate);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Fp32(s->fp32), std::set<int>({0}));
}

// Whatever the scores, the evaluations stay within the budget; the last add round allowed
// takes every node left, so a model that meets only in fp32 ends with every node kept, and
// one that never meets is reported as missing.
TEST(RepairSearch, StaysWithinTheBudget) {
  const UnitProbe first{2.0, std::vector<double>(30, 0.1)};
  int evaluations = 0;
  EvaluateUnits only_all = [&](const std::vector<bool>& fp32) -> absl::StatusOr<UnitProbe> {
    ++evaluations;
    return UnitProbe{Fp32(fp32).size() == fp32.size() ? 0.5 : 2.0, first.added};
  };
  absl::StatusOr<UnitSearch> s = SearchFewestUnits(30, SingleNodeUnits(30), first, 5, only_all);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_LE(evaluations, 5);
  EXPECT_TRUE(s->meets());
  EXPECT_EQ(Fp32(s->fp32).size(), 30u);

  evaluations = 0;
  EvaluateUnits never = [&](const std::vector<bool>&) -> absl::StatusOr<UnitProbe> {
    ++evaluations;
    return UnitProbe{2.0, first.added};
  };
  s = SearchFewestUnits(30, SingleNodeUnits(30), first, 5, never);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_LE(evaluations, 5);
  EXPECT_FALSE(s->meets());
  EXPECT_TRUE(Fp32(s->fp32).empty());  // no round lowered the score: none kept
}

fs::path TempDir(const std::string& what) {
  fs::path dir = fs::temp_directory_path() / absl::StrCat("ovfix_repair_", what, "_", ::getpid());
  fs::create_directories(dir);
  return dir;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Hand-counted: a float16 3x3 Conv from 3 to 4 channels on 8x8 (pads 1): 4*8*8 outputs of
// 3*3*3 products = 6912; a Cast to float; Relu on 256 elements; a float MatMul [2,5]x[5,7]:
// 14 outputs of 5 = 70; an Add of a 7-float Constant (28 bytes of fp32 weights): 14.
TEST(PrecisionCost, CountsWhatAHandCountGives) {
  auto model = ParseModelText(R"(
    m (float16[1, 3, 8, 8] x, float16[4, 3, 3, 3] w, float[2, 5] a, float[5, 7] b)
        => (float[1, 4, 8, 8] y, float[2, 7] z) {
      c = Conv <pads = [1, 1, 1, 1]> (x, w)
      c32 = Cast <to = 1> (c)
      y = Relu(c32)
      p = MatMul(a, b)
      k = Constant <value = float[7] {1, 2, 3, 4, 5, 6, 7}> ()
      z = Add(p, k)
    })");
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(rules::InferShapesLight(**model).ok());
  const converter::PrecisionCost cost = converter::MeasurePrecisionCost(**model, 0);
  EXPECT_EQ(cost.float_nodes, 4);
  EXPECT_EQ(cost.fp32_nodes, 3);
  EXPECT_DOUBLE_EQ(cost.multiply_adds, 6912 + 256 + 70 + 14);
  EXPECT_DOUBLE_EQ(cost.fp32_multiply_adds, 256 + 70 + 14);
  EXPECT_EQ(cost.nodes_without_shapes, 0);
  EXPECT_EQ(cost.weight_bytes, 28);
  EXPECT_EQ(cost.fp32_weight_bytes, 28);
  EXPECT_EQ(cost.casts, 1);
  EXPECT_EQ(cost.casts_inserted, 1);
  EXPECT_EQ(converter::MeasurePrecisionCost(**model, 1).casts_inserted, 0);
  EXPECT_NE(converter::PrecisionCostLine(cost).find("3 of 4 float node(s)"), std::string::npos);
}

int CastsIn(const Model& m) {
  int casts = 0;
  for (Graph* g : GraphsRecursive(const_cast<Graph&>(m.graph()))) {
    for (const Node* n : g->nodes()) casts += n->op_type() == "Cast";
  }
  return casts;
}

// x + 1000 - 1000 loses x's fraction in fp16 unless both the Add and the Sub are fp32. With
// a Mul after them that fp16 computes well, the repair keeps those two and gives the Mul
// fp16; the JSON report's cost is that of the file written, and --report r.html writes a
// page with the model.
TEST(RepairConvert, KeepsWhatIsNeededAndReportsTheCost) {
  const fs::path dir = TempDir("cost");
  const std::string in =
      test_support::SaveModelText(dir / "offset.onnx", test_support::kOffsetThenHalfModel);
  const std::string out = (dir / "out.onnx").string();
  auto r = testing::RunOvfix(absl::StrCat("convert ", in, " ", out, " --target gpu-fp16 --report ",
                                          (dir / "r.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string json = ReadFile(dir / "r.json");
  EXPECT_NE(json.find("\"float_nodes\":3,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"fp32_nodes\":2,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"multiply_adds\":192,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"fp32_multiply_adds\":128,"), std::string::npos) << json;
  EXPECT_NE(r.out.find("fp32 cost: 2 of 3 float node(s)"), std::string::npos) << r.out;
  auto written = LoadModel(out);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_NE(json.find(absl::StrCat("\"casts_inserted\":", CastsIn(**written), "}")),
            std::string::npos)
      << json;

  const std::string out2 = (dir / "out2.onnx").string();
  r = testing::RunOvfix(absl::StrCat("convert ", in, " ", out2, " --target gpu-fp16 --report ",
                                     (dir / "r.html").string()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(out2));
  const std::string html = ReadFile(dir / "r.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("Repair rounds"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("fp32 nodes by op"), std::string::npos);
  EXPECT_NE(html.find("<code>y</code>"), std::string::npos);  // the output's statistics
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);  // self-contained
  fs::remove_all(dir);
}

// The number after `"key":` in `json` (its first occurrence), or -1.
double JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

// y = (x @ W - x @ W) + (x + 1000 - 1000), then * 0.5: the two MatMuls (the same 64x64
// weights near 700) round alike in fp16 and cancel exactly; x + 1000 - 1000 is what fp16
// cannot hold. The first unit in graph order holds one MatMul and that chain, and ranks
// first: keeping it alone in fp32 fixes the chain but breaks the cancellation, a much worse
// error. That round is not kept; the next, with both MatMuls, meets the criterion, and the
// final Mul stays fp16.
TEST(RepairConvert, ARoundThatRaisesTheErrorIsNotKept) {
  const fs::path dir = TempDir("cancel");
  std::vector<std::string> w;
  for (int k = 0; k < 64 * 64; ++k) {
    const double v = (700 + ((k * 37) % 97) * 1.37) * ((k * 7) % 3 != 0 ? 1 : -1);
    w.push_back(absl::StrFormat("%.2f", v));
  }
  const std::string weights = absl::StrJoin(w, ", ");
  auto model = ParseModelText(absl::StrCat(R"(
    m (float[1, 64] x) => (float[1, 64] y) {
      wa = Constant <value = float[64, 64] {)",
                                           weights, R"(}> ()
      a = MatMul(x, wa)
      offset = Constant <value = float[1] {1000}> ()
      shifted = Add(x, offset)
      back = Sub(shifted, offset)
      wb = Constant <value = float[64, 64] {)",
                                           weights, R"(}> ()
      b = MatMul(x, wb)
      diff = Sub(a, b)
      y0 = Add(diff, back)
      half = Constant <value = float[1] {0.5}> ()
      y = Mul(y0, half)
    })"));
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string in = (dir / "cancel.onnx").string();
  const std::string out = (dir / "out.onnx").string();
  ASSERT_TRUE(SaveModel(**model, in).ok());
  auto r = testing::RunOvfix(absl::StrCat("convert ", in, " ", out,
                                          " --target gpu-fp16 --no-repair --report ",
                                          (dir / "first.json").string()));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const double first = JsonNumber(ReadFile(dir / "first.json"), "max_error");
  ASSERT_GT(first, 0.01);
  // A tolerance a little below the first error: the first round then takes the top unit.
  r = testing::RunOvfix(absl::StrCat("convert ", in, " ", out, " --target gpu-fp16 --tolerance ",
                                     absl::StrFormat("%.9g", first / 1.25), " --report ",
                                     (dir / "r.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string json = ReadFile(dir / "r.json");
  const size_t round1 = json.find("{\"round\":1,\"action\":\"add\"");
  ASSERT_NE(round1, std::string::npos) << json;
  const std::string entry = json.substr(round1, json.find('}', round1) - round1);
  EXPECT_GT(JsonNumber(entry, "error"), first) << entry;  // the round made it worse
  EXPECT_NE(entry.find("\"kept\":false"), std::string::npos) << entry;
  EXPECT_LE(JsonNumber(json, "max_error"), first / 1.25);
  EXPECT_LT(JsonNumber(json, "fp32_node_share"), 1.0);
  fs::remove_all(dir);
}

// Without the Mul, only the fp32 model meets the criterion: one line says so, exit 1, and
// nothing is written.
TEST(RepairConvert, OnlyFp32MeetsExitsOne) {
  const fs::path dir = TempDir("only_fp32");
  const std::string in =
      test_support::SaveModelText(dir / "offset.onnx", test_support::kOffsetModel);
  const std::string out = (dir / "out.onnx").string();
  auto r = testing::RunOvfix(absl::StrCat("convert ", in, " ", out, " --target gpu-fp16"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("only the fp32 model meets"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
