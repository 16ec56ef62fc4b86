// `ovfix compare` and `ovfix devices` through the binary: the acceptance points of issue 5
// (the first diverging node of hand_softmax and gfpgan_modconv in fp16 storage, resnet18 on
// OpenCL fp32, an original against its gpu-fp16 conversion), the report files, exit codes.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

std::string ModelDir(const std::string& name) { return testing::SharedDir() + "/models/" + name; }

// The shared models' own inputs: random inputs in [-1, 1) are too small to overflow fp16.
std::string WithTestData(const std::string& name) {
  return ModelDir(name) + "/model.onnx --test-data " + ModelDir(name) + "/test_data_set_0";
}

// The line `ovfix compare` ends with.
std::string SummaryLine(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  const size_t newline = s.rfind('\n');
  return newline == std::string::npos ? s : s.substr(newline + 1);
}

// The value of "key":"..." right after `after` in a JSON text (a minimal reader for tests).
std::string JsonString(const std::string& json, const std::string& after, const std::string& key) {
  size_t at = json.find(after);
  if (at == std::string::npos) return "";
  at = json.find("\"" + key + "\":\"", at);
  if (at == std::string::npos) return "";
  at += key.size() + 4;
  return json.substr(at, json.find('"', at) - at);
}

// Balanced braces and brackets outside strings, one top-level object: well-formed enough.
bool LooksLikeJson(const std::string& text) {
  std::string stack;
  bool in_string = false, escaped = false;
  size_t closed_at = std::string::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (closed_at != std::string::npos && !std::isspace(static_cast<unsigned char>(c))) {
      return false;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      stack.push_back(c);
    } else if (c == '}' || c == ']') {
      if (stack.empty() || stack.back() != (c == '}' ? '{' : '[')) return false;
      stack.pop_back();
      if (stack.empty()) closed_at = i;
    }
  }
  return !in_string && stack.empty() && !text.empty() && text[0] == '{';
}

bool HaveModel(const std::string& name) { return fs::exists(ModelDir(name) + "/model.onnx"); }

TEST(CompareCli, HandSoftmaxDivergesAtExpInFp16Storage) {
  if (!HaveModel("hand_softmax")) GTEST_SKIP() << "no ../shared/models";
  const auto dir = testing::TempDir("compare_softmax");
  const std::string json = (dir / "report.json").string();
  const std::string html = (dir / "report.html").string();
  auto r =
      RunOvfix("compare " + WithTestData("hand_softmax") +
               " --ref cpu:fp32 --test opencl:fp16-storage --json " + json + " --html " + html);
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string summary = SummaryLine(r.out);
  EXPECT_EQ(summary.rfind("first divergence: ", 0), 0u) << r.out;
  EXPECT_NE(summary.find("Exp '/Exp'"), std::string::npos) << summary;
  EXPECT_NE(r.out.find(">>>"), std::string::npos) << r.out;  // the row is marked

  const std::string text = testing::Slurp(json);
  EXPECT_TRUE(LooksLikeJson(text)) << text;
  EXPECT_EQ(JsonString(text, "\"first_divergence\":{", "name"), "/Exp") << text;
  EXPECT_EQ(JsonString(text, "\"first_divergence\":{", "op_type"), "Exp");
  EXPECT_NE(text.find("\"result\":\"diverged\""), std::string::npos);

  const std::string page = testing::Slurp(html);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("</svg>"), std::string::npos);
  EXPECT_NE(page.find("/Exp"), std::string::npos);
  EXPECT_NE(page.find("</html>"), std::string::npos);
  // Self-contained: nothing fetched from elsewhere.
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("http://", page.find("</svg>")), std::string::npos);
}

TEST(CompareCli, GfpganDivergesInTheEnergyChain) {
  if (!HaveModel("gfpgan_modconv")) GTEST_SKIP() << "no ../shared/models";
  const auto dir = testing::TempDir("compare_gfpgan");
  const std::string json = (dir / "report.json").string();
  auto r = RunOvfix("compare " + WithTestData("gfpgan_modconv") +
                    " --ref cpu:fp32 --test opencl:fp16-storage --json " + json);
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string text = testing::Slurp(json);
  ASSERT_TRUE(LooksLikeJson(text)) << text;
  // energy = ReduceSum(Mul(y, y)): the square or its sum, not the Convs before, not later.
  const std::string name = JsonString(text, "\"first_divergence\":{", "name");
  EXPECT_TRUE(name == "/Mul_2" || name == "/ReduceSum") << name << "\n" << r.out;
  // The demodulation epsilon (1e-8) is listed as a constant fp16 cannot hold.
  EXPECT_NE(r.out.find("/c1/Constant_8_output_0"), std::string::npos) << r.out;
}

TEST(CompareCli, Resnet18OnOpenclFp32MatchesTheCpu) {
  if (!HaveModel("resnet18")) GTEST_SKIP() << "no ../shared/models";
  auto r = RunOvfix("compare " + WithTestData("resnet18") + " --ref cpu:fp32 --test opencl:fp32");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(SummaryLine(r.out).rfind("no divergence", 0), 0u) << r.out;
}

// Without --input or --test-data, test_data_set_0/ beside the model gives the inputs: the
// acceptance command line as the issue writes it.
TEST(CompareCli, InputsFromTheModelsTestDataByDefault) {
  if (!HaveModel("hand_softmax")) GTEST_SKIP() << "no ../shared/models";
  auto r = RunOvfix("compare " + ModelDir("hand_softmax") +
                    "/model.onnx --ref cpu:fp32 --test opencl:fp16-storage");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(SummaryLine(r.out).find("Exp '/Exp'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test_data_set_0/input_0.pb"), std::string::npos) << r.out;
}

TEST(CompareCli, RandomInputsOnRequest) {
  if (!HaveModel("trt_broadcast")) GTEST_SKIP() << "no ../shared/models";
  auto r = RunOvfix("compare " + ModelDir("trt_broadcast") +
                    "/model.onnx --ref cpu:fp32 --test cpu:fp32 --all --random");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("random (seed"), std::string::npos) << r.out;
}

TEST(CompareCli, BadInputExitsTwoWithOneLine) {
  auto missing = RunOvfix("compare /no/such/model.onnx --ref cpu:fp32 --test cpu:fp16-storage");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
  EXPECT_NE(missing.err.find("/no/such/model.onnx"), std::string::npos) << missing.err;
  if (!HaveModel("hand_softmax")) return;
  const std::string model = ModelDir("hand_softmax") + "/model.onnx";
  for (const std::string& args :
       {model + " --test vulkan:fp16", model + " --backend cpu:fp32", model + " --input nope",
        model + " " + model + " --ref cpu:fp32", model + " --input y=/no/such.pb"}) {
    SCOPED_TRACE(args);
    auto r = RunOvfix("compare " + args);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(CompareCli, DevicesAreListed) {
  auto r = RunOvfix("devices");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const bool listed = r.out.find("fp16") != std::string::npos;
  const bool none = r.out.find("no OpenCL devices") != std::string::npos;
  EXPECT_TRUE(listed || none) << r.out;
}

TEST(CompareCli, RunOnOpenclDeviceShowsTheDevice) {
  if (!HaveModel("hand_softmax")) GTEST_SKIP() << "no ../shared/models";
  auto r = RunOvfix("run " + WithTestData("hand_softmax") + " --backend opencl --device 0");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("OpenCL device"), std::string::npos) << r.out << r.err;
}

// `ovfix run --profile`: the time per op type (resnet18's 20 convolutions, channels-last
// ovfix.fused.NhwcConv nodes of the session graph or Convs, shares adding up to the whole) and
// the slowest nodes by name; the opencl backend is refused with one line.
TEST(CompareCli, RunProfileShowsWhereTheTimeWent) {
  if (!HaveModel("resnet18")) GTEST_SKIP() << "no ../shared/models";
  auto r = RunOvfix("run " + WithTestData("resnet18") + " --profile --repeat 2 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const size_t at = r.out.find("profile: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  // Of two runs, the second is timed: the first also packs weights.
  EXPECT_NE(r.out.find("(the first run, which also prepares weights, left out)"), std::string::npos)
      << r.out;
  std::istringstream lines(r.out.substr(at));
  std::string line;
  double shares = 0;
  int conv_nodes = 0;
  std::set<std::string> op_types;
  // The slowest-node lines: "<ms> ms <share>% <op> '<name>'", slowest first.
  std::vector<std::pair<double, std::string>> slowest;
  bool in_slowest = false;
  while (std::getline(lines, line)) {
    if (line.find("slowest nodes:") != std::string::npos) {
      in_slowest = true;
      continue;
    }
    std::istringstream fields(line);
    if (in_slowest) {
      double ms = 0;
      std::string unit, share, op;
      if (fields >> ms >> unit >> share >> op && unit == "ms") {
        if (op.rfind("ovfix.fused.", 0) == 0) op = op.substr(12);  // the table has no domain
        slowest.emplace_back(ms, op);
        EXPECT_NE(line.find(" '/"), std::string::npos) << line;  // names the node
      }
      continue;
    }
    std::string op, share;
    double ms = 0;
    int nodes = 0;
    if (fields >> op >> ms >> share >> nodes && !share.empty() && share.back() == '%') {
      shares += std::stod(share);
      op_types.insert(op);
      if (op == "Conv" || op == "NhwcConv") conv_nodes += nodes;
    }
  }
  EXPECT_EQ(conv_nodes, 20) << r.out;
  EXPECT_NEAR(shares, 100.0, 0.5) << r.out;
  // resnet18 runs 40 steps: the table lists the 15 slowest, slowest first, each of an op type
  // in the table above. Which convs come last depends on the machine, so only the first is
  // pinned: a layer4 conv does ten times the work of any node that is not a conv.
  ASSERT_EQ(slowest.size(), 15u) << r.out;
  EXPECT_TRUE(slowest.front().second == "Conv" || slowest.front().second == "NhwcConv") << r.out;
  for (size_t i = 0; i < slowest.size(); ++i) {
    EXPECT_TRUE(op_types.count(slowest[i].second)) << slowest[i].second;
    if (i > 0) {
      EXPECT_LE(slowest[i].first, slowest[i - 1].first) << r.out;
    }
  }
  EXPECT_NE(r.out.find("(max:0.0001) - meets the criteria"), std::string::npos) << r.out;

  auto refused = RunOvfix("run " + WithTestData("resnet18") + " --profile --backend opencl");
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
}

// The original against its gpu-fp16 conversion: shared tensors agree to 1e-2 of their range,
// and the converted model runs on OpenCL as typed as it does on the CPU.
class ConvertedCompare : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvertedCompare, ConversionKeepsEveryLayer) {
  const std::string name = GetParam();
  if (!HaveModel(name)) GTEST_SKIP() << "no ../shared/models";
  const auto dir = testing::TempDir("compare_converted_" + name);
  const std::string original = ModelDir(name) + "/model.onnx";
  const std::string converted = (dir / "converted.onnx").string();
  const std::string data = " --test-data " + ModelDir(name) + "/test_data_set_0";
  auto c = RunOvfix("convert " + original + " " + converted + " --target gpu-fp16");
  // Only an unknown target or option (convert not written yet) skips; any other failure fails.
  if (c.exit_code == 2 && (c.err.find("unknown") != std::string::npos ||
                           c.err.find("not expected") != std::string::npos)) {
    GTEST_SKIP() << "ovfix convert --target gpu-fp16 is not available yet: " << c.err;
  }
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  auto pair = RunOvfix("compare " + original + " " + converted + data + " --rtol 1e-2");
  EXPECT_EQ(pair.exit_code, 0) << pair.out << pair.err;
  EXPECT_EQ(SummaryLine(pair.out).rfind("no divergence", 0), 0u) << pair.out;
  // Both sides store the model's float16 tensors as typed; a sum the two backends add in
  // another order may round to the neighbouring float16 (2^-11 of its value), so the outputs
  // are held to 1e-3 of their range rather than to an fp32 model's 1e-4.
  auto typed = RunOvfix("compare " + converted + data +
                        " --ref cpu:fp32 --test opencl:fp32 --rtol 1e-3 --accuracy max:1e-3");
  EXPECT_EQ(typed.exit_code, 0) << typed.out << typed.err;
}

INSTANTIATE_TEST_SUITE_P(Models, ConvertedCompare,
                         ::testing::Values("hand_softmax", "gfpgan_modconv"));

}  // namespace
}  // namespace ovfix
