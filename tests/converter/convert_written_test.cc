// What `ovfix convert` reports is measured on the file it wrote: for every shared model the
// reported end-to-end error equals what `ovfix run` of the written file gives on the same
// inputs; a conversion beyond the tolerance is repaired (nodes kept in fp32, listed) unless
// --no-repair; calibration data comes from test-data folders and bad data exits 2 naming the
// file; `ovfix run` takes float32 input files for a float16 model.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"
#include "tests/support/offset_model.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;

std::string ModelDir(const std::string& name) {
  return std::string(OVFIX_SHARED_DIR) + "/models/" + name;
}

fs::path TempDir(const std::string& what) {
  fs::path dir = fs::temp_directory_path() / absl::StrCat("ovfix_", what, "_", ::getpid());
  fs::create_directories(dir);
  return dir;
}

// The number after `key` in the report's JSON (the first occurrence).
double JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  const size_t start = at + key.size() + 3;
  const size_t end = json.find_first_of(",}]", start);
  double v = -1;
  EXPECT_TRUE(absl::SimpleAtod(json.substr(start, end - start), &v)) << json.substr(start, 40);
  return v;
}

// `ovfix run MODEL --test-data DIR --output-dir OUT`: the outputs, in graph order.
std::vector<Tensor> RunFile(const std::string& model, const std::string& test_data,
                            const fs::path& out, const std::string& flags = "") {
  const auto r = testing::RunOvfix(absl::StrCat("run ", model, " --test-data ", test_data,
                                                " --output-dir ", out.string(), flags));
  EXPECT_NE(r.exit_code, 2) << r.out << r.err;
  std::vector<Tensor> outputs;
  for (int k = 0; fs::exists(out / absl::StrCat("output_", k, ".pb")); ++k) {
    absl::StatusOr<Tensor> t = ReadTensorFile((out / absl::StrCat("output_", k, ".pb")).string());
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) outputs.push_back(*std::move(t));
  }
  return outputs;
}

bool HasFloat16(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) {
    if (t.type() == DataType::kFloat16) return true;
  }
  return false;
}

// Checks made on a converted model as written.
using InspectWritten = std::function<void(const Model&)>;

// Converts `name` with its test data and checks the reported error against `ovfix run` of
// the file written and of the original (the metric: exec::RelativeError).
// `run_flags` run the written file as the report measured it (a target whose backend ignores
// fp32 islands: every tensor in fp16, `--precision fp16-storage` for an fp32 file).
void ExpectReportedIsMeasured(const std::string& name, const std::string& target,
                              const InspectWritten& inspect = nullptr,
                              const std::string& run_flags = "") {
  SCOPED_TRACE(name + " " + target);
  const fs::path dir = TempDir("written");
  const std::string out = (dir / "out.onnx").string();
  const std::string json = (dir / "report.json").string();
  const std::string data = ModelDir(name) + "/test_data_set_0";
  const auto r =
      testing::RunOvfix(absl::StrCat("convert ", ModelDir(name), "/model.onnx ", out, " --target ",
                                     target, " --calibration-data ", data, " --report ", json));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string report = testing::Slurp(json);
  const double reported = JsonNumber(report, "max_error");
  const std::vector<Tensor> original = RunFile(ModelDir(name) + "/model.onnx", data, dir / "a");
  const std::vector<Tensor> converted = RunFile(out, data, dir / "b", run_flags);
  ASSERT_EQ(original.size(), converted.size());
  ASSERT_FALSE(original.empty());
  const double resolution = HasFloat16(converted) ? exec::kFloat16Resolution : 0;
  double measured = 0;
  for (size_t i = 0; i < original.size(); ++i) {
    measured = std::max(measured, exec::RelativeError(converted[i], original[i], resolution));
  }
  // The report prints the error with 9 significant digits: equal up to that.
  EXPECT_NEAR(reported, measured, 1e-12 + 1e-8 * measured) << report;
  EXPECT_LE(measured, JsonNumber(report, "tolerance"));
  if (inspect) {
    auto written = LoadModel(out);
    ASSERT_TRUE(written.ok()) << written.status();
    inspect(**written);
  }
  fs::remove_all(dir);
}

TEST(ConvertWritten, ReportedErrorIsWhatRunOfTheFileMeasures) {
  for (const char* name : {"resnet18", "mobilenet_v3_small", "gfpgan_modconv", "hand_softmax",
                           "trt_broadcast", "ddff_squeeze", "conv3d_991"}) {
    if (!fs::exists(ModelDir(name) + "/model.onnx")) continue;
    ExpectReportedIsMeasured(name, "gpu-fp16");
  }
  if (fs::exists(ModelDir("ddff_squeeze") + "/model.onnx")) {
    ExpectReportedIsMeasured("ddff_squeeze", "openvino-gpu", nullptr, " --precision fp16-storage");
  }
}

// deep_residual: 638 residual blocks; fp16 everywhere is 0.02 off on its test input, beyond
// the 1e-2 tolerance. The repair keeps what adds the most in fp32, lists it, and the file
// written is within tolerance by `ovfix run`.
// The end-to-end error reported to be that of the model written, checked against a run of
// the saved file on the CPU executor (what `ovfix run` does) and the original's outputs.
void ExpectReportedIsWritten(const char* text, const std::string& target,
                             const InspectWritten& inspect = nullptr) {
  const fs::path dir = TempDir("gap");
  auto model = ParseModelText(text);
  ASSERT_TRUE(model.ok()) << model.status();
  auto original = ParseModelText(text);
  ASSERT_TRUE(original.ok());
  exec::RandomInputOptions random;
  random.ranges = {-4, 4, 0, 1};
  random.seed = 7;
  absl::StatusOr<exec::TensorMap> inputs = exec::RandomInputs((*model)->graph(), random);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  converter::InputFiles files;
  for (const auto& [name, t] : *inputs) {
    files[name] = (dir / (name + ".pb")).string();
    ASSERT_TRUE(WriteTensorFile(files[name], t, name).ok());
  }
  converter::PipelineOptions o;
  o.convert.target = target;
  o.input_sets = {files};
  o.output_path = (dir / "out.onnx").string();
  o.write_output = true;
  auto report = converter::ConvertModel(**model, o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->written && report->end_to_end) << converter::SummaryTable(*report);
  auto written = LoadModel(o.output_path);
  ASSERT_TRUE(written.ok()) << written.status();
  auto run = [&](const Model& m) {
    auto session = exec::CreateSession(m, {});
    EXPECT_TRUE(session.ok()) << session.status();
    exec::TensorMap typed;
    for (const Value* v : m.graph().inputs()) {
      const Tensor& t = inputs->at(v->name());
      typed[v->name()] = v->elem_type() == t.type() ? t : ConvertTensor(t, v->elem_type());
    }
    auto out = (*session)->Run(typed);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : std::vector<Tensor>{};
  };
  const std::vector<Tensor> expected = run(**original);
  const std::vector<Tensor> actual = run(**written);
  ASSERT_EQ(expected.size(), actual.size());
  double measured = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    measured =
        std::max(measured, exec::RelativeError(actual[i], expected[i], exec::kFloat16Resolution));
  }
  EXPECT_EQ(report->end_to_end->max_error, measured) << converter::SummaryTable(*report);
  if (inspect) inspect(**written);
  fs::remove_all(dir);
}

// A decomposed log-softmax (onnx's expanded function): fp32 islands for ReduceMax, Exp and
// ReduceSum between float16 Subs and Log. The activations the rewrites computed along the
// way put its error at 5.1e-4; the file written gives 6.5e-4. Reported: the file's.
TEST(ConvertWritten, ReportedErrorIsTheWrittenFilesNotTheRewritesEstimate) {
  ExpectReportedIsWritten(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    m (float[3, 4, 5] x) => (float[3, 4, 5] y) {
      axes = Constant <value = int64[1] {-1}> ()
      mx = ReduceMax <keepdims = 1> (x, axes)
      sub = Sub(x, mx)
      e = Exp(sub)
      s = ReduceSum <keepdims = 1> (e, axes)
      l = Log(s)
      y = Sub(sub, l)
    })",
                          "gpu-fp16");
}

// In the style of a PaddleOCR v4 text detector (paddle2onnx, opset 11): Clip-based
// hard-swish x * Clip(x + 3, 0, 6) / 6 with Constant bounds, a depthwise conv, a sigmoid map.
TEST(ConvertWritten, DetectorStyleGraphReportsTheWrittenFile) {
  ExpectReportedIsWritten(R"(
    <ir_version: 6, opset_import: ["" : 11]>
    m (float[1, 4, 8, 8] x) => (float[1, 1, 8, 8] maps) {
      w1 = Constant <value = float[4, 1, 3, 3] {0.5, -0.25, 0.125, 1, -1, 0.75, 0.3, 0.2, -0.6,
        0.1, 0.9, -0.4, 0.6, -0.2, 0.35, -0.8, 0.45, 0.05, -0.3, 0.7, 0.15, -0.55, 0.25, 0.65,
        -0.15, 0.85, -0.05, 0.4, -0.7, 0.2, 0.55, -0.45, 0.3, 0.95, -0.35, 0.1}> ()
      three = Constant <value = float {3}> ()
      lo = Constant <value = float {0}> ()
      hi = Constant <value = float {6}> ()
      six = Constant <value = float {6}> ()
      c1 = Conv <group = 4, kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, w1)
      a1 = Add(c1, three)
      k1 = Clip(a1, lo, hi)
      m1 = Mul(c1, k1)
      h1 = Div(m1, six)
      w2 = Constant <value = float[1, 4, 1, 1] {1.5, -2, 0.75, 1.25}> ()
      c2 = Conv <kernel_shape = [1, 1]> (h1, w2)
      maps = Sigmoid(c2)
    })",
                          "gpu-fp16");
}

// fp16 inside control flow: both branches of an If and a Loop body compute in float16, while
// what the nodes holding them see stays float (their outputs, carried values, outer reads).
TEST(ConvertWritten, Fp16ReachesIfBranchesAndLoopBodies) {
  ExpectReportedIsWritten(
      R"(
    <ir_version: 8, opset_import: ["" : 17]>
    m (float[2, 4] x, bool c) => (float[2, 4] y, float[2, 4] z) {
      w = Constant <value = float[4, 4] {0.5, -0.25, 0.125, 1, -1, 0.75, 0.3, 0.2, -0.6, 0.1,
                                         0.9, -0.4, 0.6, -0.2, 0.35, -0.8}> ()
      y = If(c) <then_branch = then_g () => (float[2, 4] a) { p = MatMul(x, w)  a = Relu(p) },
                 else_branch = else_g () => (float[2, 4] b) { s = Sigmoid(x)  b = Mul(s, x) }>
      n = Constant <value = int64 {3}> ()
      go = Constant <value = bool {1}> ()
      z = Loop(n, go, y) <body = body_g (int64 i, bool c_in, float[2, 4] acc)
                                      => (bool c_out, float[2, 4] next) {
        c_out = Identity(c_in)
        h = Tanh(acc)
        next = Add(h, x)
      }>
    })",
      "gpu-fp16", [](const Model& written) {
        int bodies = 0;
        for (Graph* g : GraphsRecursive(const_cast<Graph&>(written.graph()))) {
          if (g->owner_node() == nullptr) continue;
          ++bodies;
          for (const Node* n : g->nodes()) {
            if (n->op_type() == "Identity" || n->outputs()[0]->elem_type() == DataType::kBool)
              continue;
            EXPECT_EQ(n->output(0)->elem_type(), n->op_type() == "Cast" && n->GetInt("to", 0) == 1
                                                     ? DataType::kFloat
                                                     : DataType::kFloat16)
                << n->Describe() << " in the body of " << g->owner_node()->Describe();
          }
        }
        EXPECT_EQ(bodies, 3);
        for (const Value* v : written.graph().outputs()) {
          EXPECT_EQ(v->elem_type(), DataType::kFloat) << v->name();
        }
      });
}

// silero_vad: the whole network sits in the branches of an If. Converted with its test data,
// it is within tolerance by `ovfix run` of the file, and mostly float16.
TEST(ConvertWritten, SileroVadIsMostlyFloat16WithinTolerance) {
  if (!fs::exists(ModelDir("silero_vad") + "/model.onnx")) GTEST_SKIP() << "no model";
  ExpectReportedIsMeasured("silero_vad", "gpu-fp16", [](const Model& written) {
    const converter::FloatNodeCounts all = converter::CountFloatNodes(written);
    std::printf("silero_vad gpu-fp16: %d float16 nodes, %d float32 nodes\n", all.float16,
                all.float32);
    EXPECT_GT(all.float16, 0);
    EXPECT_LT(all.float32, all.float16) << "fp32 fraction must stay below 50% of float nodes";
  });
}

TEST(ConvertWritten, DeepResidualIsRepairedToTolerance) {
  if (!fs::exists(ModelDir("deep_residual") + "/model.onnx")) GTEST_SKIP() << "no model";
  ExpectReportedIsMeasured("deep_residual", "gpu-fp16");
}

// A graph fp16 cannot hold (x + 1000 - 1000 loses x's fraction): repaired by default (both
// nodes kept in fp32, listed with their errors; the Mul after them stays fp16), exit 1 and
// nothing written with --no-repair.
TEST(ConvertWritten, RepairKeepsTheNodesResponsible) {
  const fs::path dir = TempDir("repair");
  const std::string in =
      test_support::SaveModelText(dir / "offset.onnx", test_support::kOffsetThenHalfModel);
  const std::string out = (dir / "out.onnx").string();
  auto refused =
      testing::RunOvfix(absl::StrCat("convert ", in, " ", out, " --target gpu-fp16 --no-repair"));
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_FALSE(fs::exists(out));
  auto repaired = testing::RunOvfix(absl::StrCat("convert ", in, " ", out, " --target gpu-fp16"));
  EXPECT_EQ(repaired.exit_code, 0) << repaired.out << repaired.err;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_NE(repaired.out.find("kept fp32: Add"), std::string::npos) << repaired.out;
  EXPECT_NE(repaired.out.find("outputs preserved"), std::string::npos) << repaired.out;
  EXPECT_NE(repaired.out.find("model run"), std::string::npos) << repaired.out;
  fs::remove_all(dir);
}

// The file is written and measured once, before any repair: a file that misses the
// criteria is taken back and the output it would have replaced is as it was (the report
// says why); with the repair, the repaired model is what is written and reported.
TEST(ConvertWritten, AFileThatMissesTheCriteriaLeavesThePreviousOutputAsItWas) {
  const fs::path dir = TempDir("take_back");
  auto model = ParseModelText(test_support::kOffsetThenHalfModel);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string in = (dir / "offset.onnx").string();
  const std::string out = (dir / "out.onnx").string();
  const std::string report = (dir / "report.json").string();
  ASSERT_TRUE(SaveModel(**model, in).ok());
  auto read_json = [](const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::string text(std::istreambuf_iterator<char>(file), {});
    text.erase(std::remove_if(text.begin(), text.end(), ::isspace), text.end());
    return text;
  };
  std::ofstream(out, std::ios::binary) << "previous model";
  auto refused = testing::RunOvfix(
      absl::StrCat("convert ", in, " ", out, " --target gpu-fp16 --no-repair --report ", report));
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_EQ(read_json(out), "previousmodel");
  EXPECT_NE(read_json(report).find("\"outputs_match\":false"), std::string::npos)
      << read_json(report);
  auto repaired = testing::RunOvfix(
      absl::StrCat("convert ", in, " ", out, " --target gpu-fp16 --report ", report));
  EXPECT_EQ(repaired.exit_code, 0) << repaired.out << repaired.err;
  auto written = LoadModel(out);
  ASSERT_TRUE(written.ok()) << written.status();
  // The repaired model, not the one taken back: the offset stays float32 for the Add and
  // Sub kept in fp32, the Mul's factor is float16.
  std::set<DataType> weight_types;
  for (const Value* v : (*written)->graph().initializers()) weight_types.insert(v->elem_type());
  EXPECT_TRUE(weight_types.contains(DataType::kFloat));
  EXPECT_TRUE(weight_types.contains(DataType::kFloat16));
  EXPECT_NE(read_json(report).find("\"outputs_match\":true"), std::string::npos)
      << read_json(report);
  fs::remove_all(dir);
}

TEST(ConvertWritten, BadCalibrationDataExitsTwoNamingTheFile) {
  const std::string model = ModelDir("resnet18") + "/model.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "no model";
  const fs::path dir = TempDir("calibration");
  const std::string out = (dir / "out.onnx").string();
  auto missing = testing::RunOvfix(absl::StrCat("convert ", model, " ", out,
                                                " --target gpu-fp16 --calibration-data ",
                                                (dir / "nope").string()));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find((dir / "nope").string()), std::string::npos) << missing.err;
  // An int64 tensor where the model takes float images.
  fs::create_directories(dir / "bad");
  ASSERT_TRUE(WriteTensorFile((dir / "bad" / "input_0.pb").string(),
                              Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {1, 2}), "")
                  .ok());
  auto wrong = testing::RunOvfix(absl::StrCat("convert ", model, " ", out,
                                              " --target gpu-fp16 --calibration-data ",
                                              (dir / "bad").string()));
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("input_0.pb"), std::string::npos) << wrong.err;
  EXPECT_EQ(std::count(wrong.err.begin(), wrong.err.end(), '\n'), 1) << wrong.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

// A float16 model checked with the original's float32 input file: converted, with a note.
TEST(ConvertWritten, RunTakesFloat32InputsForAFloat16Model) {
  const fs::path dir = TempDir("run16");
  auto model = ParseModelText(R"(
    m (float16[1, 4] x) => (float16[1, 4] y) { y = Relu(x) })");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string path = (dir / "half.onnx").string();
  ASSERT_TRUE(SaveModel(**model, path).ok());
  const std::string input = (dir / "x.pb").string();
  ASSERT_TRUE(WriteTensorFile(
                  input, Tensor::FromVector<float>(DataType::kFloat, {1, 4}, {-1, 0.5, 2, -3}), "x")
                  .ok());
  auto r = testing::RunOvfix(
      absl::StrCat("run ", path, " --input x=", input, " --output-dir ", (dir / "out").string()));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("float data converted to float16"), std::string::npos) << r.out;
  absl::StatusOr<Tensor> y = ReadTensorFile((dir / "out" / "output_0.pb").string());
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), DataType::kFloat16);
  EXPECT_EQ(y->GetAsDouble(0), 0);
  EXPECT_EQ(y->GetAsDouble(2), 2);
  fs::remove_all(dir);
}

// The same model against the original's test data, whose outputs are float32: the float16
// outputs are compared as float (exactly widened), and a wrong value is still caught.
TEST(ConvertWritten, RunComparesFloat16OutputsWithFloat32TestData) {
  const fs::path dir = TempDir("run16data");
  auto model = ParseModelText(R"(
    m (float16[1, 4] x) => (float16[1, 4] y) { y = Relu(x) })");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string path = (dir / "half.onnx").string();
  ASSERT_TRUE(SaveModel(**model, path).ok());
  auto write_set = [&](const std::string& name, std::vector<float> expected) {
    const fs::path set = dir / name;
    fs::create_directories(set);
    EXPECT_TRUE(
        WriteTensorFile((set / "input_0.pb").string(),
                        Tensor::FromVector<float>(DataType::kFloat, {1, 4}, {-1, 0.5, 2, -3}), "x")
            .ok());
    EXPECT_TRUE(WriteTensorFile((set / "output_0.pb").string(),
                                Tensor::FromVector<float>(DataType::kFloat, {1, 4}, expected), "y")
                    .ok());
    return set.string();
  };
  auto good = testing::RunOvfix(
      absl::StrCat("run ", path, " --test-data ", write_set("good", {0, 0.5, 2, 0})));
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
  EXPECT_NE(good.out.find("float16 compared as float"), std::string::npos) << good.out;
  EXPECT_NE(good.out.find("output 'y': max 0, "), std::string::npos) << good.out;
  EXPECT_NE(good.out.find("meets the criteria"), std::string::npos) << good.out;
  auto bad = testing::RunOvfix(
      absl::StrCat("run ", path, " --test-data ", write_set("bad", {0, 0.5, 2, 1})));
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("output 'y': max 0.5, "), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find(" FAILS"), std::string::npos) << bad.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
