// fp16 conversion of recurrent cells inside control flow (issue 37; silero VAD v5's LSTM sits
// in the branches of an If): the summary's fp32 islands count what the fp32 cost counts (an
// If is not an island for what its branches hold), and --keep-fp32 reaches nodes inside If
// and Loop bodies by name, op type or path ("If_0/then/LSTM_3"), which stay fp32 in the
// written file, as onnxruntime runs it.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "rules/passes/island_marks.h"
#include "tests/support/ort_peer.h"
#include "tests/support/recurrent_body_models.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;
using test_support::LstmGruInIfText;
using test_support::LstmInLoopText;
using test_support::ParseNamed;

fs::path TempDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("ovfix_fp16_bodies_", ::getpid(), "_", name);
  fs::create_directories(dir);
  return dir;
}

// A test-data folder for `model` (input x, and c = `branch` where the model has it).
std::string WriteTestData(const Model& model, const fs::path& dir, bool branch) {
  const fs::path set = dir / "test_data_set_0";
  fs::create_directories(set);
  int k = 0;
  for (const Value* v : model.graph().inputs()) {
    if (v->is_initializer()) continue;
    const Tensor t =
        v->name() == "x" ? test_support::SequenceInput() : test_support::ConditionInput(branch);
    EXPECT_TRUE(
        WriteTensorFile((set / absl::StrCat("input_", k++, ".pb")).string(), t, v->name()).ok());
  }
  return set.string();
}

struct Converted {
  std::unique_ptr<Model> original, model;
  ConversionReport report;
  std::string data;  // the test-data folder
};

Converted Convert(const std::string& text, const std::string& name,
                  const std::vector<std::string>& keep_fp32, bool branch = true) {
  const bool repair = keep_fp32.empty();
  Converted c;
  c.original = ParseNamed(text);
  c.model = ParseNamed(text);
  const fs::path dir = TempDir(name);
  c.data = WriteTestData(*c.model, dir, branch);
  PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.convert.keep_fp32 = keep_fp32;
  options.calibration_data = {c.data};
  options.repair = repair;
  absl::StatusOr<ConversionReport> report = ConvertModel(*c.model, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (report.ok()) c.report = *std::move(report);
  return c;
}

// The node named `name` in any graph of `model`.
const Node* FindNode(const Model& model, const std::string& name) {
  for (Graph* g : GraphsRecursive(const_cast<Graph&>(model.graph()))) {
    for (const Node* n : g->nodes()) {
      if (n->name() == name) return n;
    }
  }
  return nullptr;
}

// The element type a node computes its first float output in.
DataType ComputedIn(const Model& model, const std::string& name) {
  const Node* n = FindNode(model, name);
  EXPECT_NE(n, nullptr) << name;
  if (n == nullptr) return DataType::kUndefined;
  return n->output(n->outputs().size() > 1 ? 1 : 0)->elem_type();
}

std::string Islands(const ConversionReport& report) {
  std::vector<std::string> nodes;
  for (const rules::IslandNode& i : report.islands) nodes.push_back(i.node);
  return absl::StrJoin(nodes, ", ");
}

// The summary's "fp32 islands" line and "fp32 cost" line count the same nodes: an If is no
// island for what its branches hold (silero_vad printed "If 25" beside a cost of 1 node).
TEST(Fp16Bodies, IslandsCountWhatTheFp32CostCounts) {
  for (const std::string& pattern : {"LSTM_3", "GRU"}) {
    Converted c = Convert(LstmGruInIfText(false), "count", {pattern});
    ASSERT_TRUE(c.report.cost.has_value());
    EXPECT_EQ(static_cast<int>(c.report.islands.size()), c.report.cost->fp32_nodes)
        << Islands(c.report);
    for (const rules::IslandNode& i : c.report.islands) {
      EXPECT_NE(i.op_type, "If") << i.node << ": " << i.reason;
    }
    EXPECT_EQ(c.report.islands.size(), 1u) << Islands(c.report);
    const std::string summary = SummaryTable(c.report);
    EXPECT_NE(summary.find("fp32 islands: 1 node(s)"), std::string::npos) << summary;
  }
}

// The path of a node in a body: each holder's name and its branch, then the node's name.
TEST(Fp16Bodies, NodePathNamesHoldersAndBranches) {
  std::unique_ptr<Model> m = ParseNamed(LstmGruInIfText(false));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(rules::NodePath(*FindNode(*m, "LSTM_3")), "If_0/then/LSTM_3");
  EXPECT_EQ(rules::NodePath(*FindNode(*m, "GRU_5")), "If_0/else/GRU_5");
  EXPECT_EQ(rules::NodePath(*FindNode(*m, "If_0")), "If_0");
  std::unique_ptr<Model> loop = ParseNamed(LstmInLoopText(false));
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(rules::NodePath(*FindNode(*loop, "LSTM_1")), "Loop_0/body/LSTM_1");
}

// --keep-fp32 matches a node inside a body by its name, its op type or its path; it stays
// fp32 in the written file, the other branch's cell goes to fp16, and onnxruntime runs the
// file within 1e-2 of the original.
TEST(Fp16Bodies, KeepFp32ReachesNodesInsideBodies) {
  struct Case {
    std::string text, pattern, kept, not_kept;
  };
  const std::vector<Case> cases = {
      {LstmGruInIfText(false), "LSTM_3", "LSTM_3", "GRU_5"},
      {LstmGruInIfText(false), "LSTM", "LSTM_3", "GRU_5"},
      {LstmGruInIfText(false), "If_0/then/LSTM_3", "LSTM_3", "GRU_5"},
      {LstmGruInIfText(false), "If_0/else/.*", "GRU_5", "LSTM_3"},
      {LstmInLoopText(false), "Loop_0/body/LSTM_1", "LSTM_1", "xi"},
  };
  const std::string modules = testing_support::OrtModules();
  int k = 0;
  for (const Case& test : cases) {
    SCOPED_TRACE(test.pattern);
    Converted c = Convert(test.text, absl::StrCat("keep", k++), {test.pattern});
    EXPECT_EQ(ComputedIn(*c.model, test.kept), DataType::kFloat) << Islands(c.report);
    if (test.not_kept != "xi") {
      EXPECT_EQ(ComputedIn(*c.model, test.not_kept), DataType::kFloat16) << Islands(c.report);
    }
    bool reported = false;
    for (const rules::IslandNode& i : c.report.islands) {
      reported = reported ||
                 (i.reason.find("--keep-fp32") == 0 && i.node.find(test.kept) != std::string::npos);
    }
    EXPECT_TRUE(reported) << Islands(c.report);
    // What the file computes, by onnxruntime: the original's outputs within 1e-2.
    if (modules.empty()) {
      if (testing_support::OrtRequired()) ADD_FAILURE() << "onnxruntime-node not installed";
      continue;
    }
    const fs::path dir = fs::path(c.data).parent_path();
    ASSERT_TRUE(SaveModel(*c.original, (dir / "original.onnx").string()).ok());
    ASSERT_TRUE(SaveModel(*c.model, (dir / "converted.onnx").string()).ok());
    std::vector<std::string> inputs;
    for (int i = 0; fs::exists(fs::path(c.data) / absl::StrCat("input_", i, ".pb")); ++i) {
      inputs.push_back((fs::path(c.data) / absl::StrCat("input_", i, ".pb")).string());
    }
    const std::vector<Tensor> expected = testing_support::RunOrt(
        modules, (dir / "original.onnx").string(), inputs, dir / "ort_original");
    const std::vector<Tensor> actual = testing_support::RunOrt(
        modules, (dir / "converted.onnx").string(), inputs, dir / "ort_converted");
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      EXPECT_LT(exec::RelativeError(ConvertTensor(actual[i], DataType::kFloat), expected[i]), 1e-2);
    }
  }
}

// The repair ranks and keeps nodes inside bodies as at the top level: the branch's offset chain
// goes back to fp32, the LSTM and the Mul stay fp16, and the file meets the criteria (it once
// said "0 node(s) kept in fp32 in 0 round(s)").
void ExpectOffsetChainRepaired(const std::string& text, const std::string& lstm) {
  SCOPED_TRACE(lstm);
  Converted c = Convert(text, "repair_" + lstm, {});
  ASSERT_TRUE(c.report.repair.has_value()) << SummaryTable(c.report);
  std::vector<std::string> kept;
  for (const RepairedNode& k : c.report.repair->kept) kept.push_back(k.node);
  EXPECT_FALSE(kept.empty()) << SummaryTable(c.report);
  for (const std::string& name : {"Shift_7", "Back_8"}) {
    EXPECT_EQ(ComputedIn(*c.model, name), DataType::kFloat) << absl::StrJoin(kept, ", ");
  }
  EXPECT_EQ(ComputedIn(*c.model, lstm), DataType::kFloat16) << absl::StrJoin(kept, ", ");
  EXPECT_EQ(ComputedIn(*c.model, "Half_9"), DataType::kFloat16) << absl::StrJoin(kept, ", ");
  ASSERT_TRUE(c.report.end_to_end.has_value());
  EXPECT_LE(c.report.end_to_end->score, 1) << SummaryTable(c.report);
  ASSERT_TRUE(c.report.cost.has_value());
  EXPECT_LT(c.report.cost->NodeShare(), 0.5) << SummaryTable(c.report);
}

TEST(Fp16Bodies, RepairKeepsNodesInsideTheBranchAndTheLoopBody) {
  for (const std::string& text :
       {test_support::LstmThenOffsetInIfText(), test_support::LstmThenOffsetInLoopText()}) {
    ExpectOffsetChainRepaired(text, text.find("Loop") == std::string::npos ? "LSTM_3" : "LSTM_1");
  }
}

}  // namespace
}  // namespace ovfix::converter
