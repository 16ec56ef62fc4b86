// Command-line conventions a user of onnxsim or Polygraphy expects: "did you mean" for
// misspelt commands and options, errors that name the command, `ovfix help CMD`, exit codes in
// every --help, --json on the commands that print results (with non-finite numbers as null
// plus a flag), every output path checked before any work, and the same test-data folder
// forms everywhere.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "converter/json_writer.h"
#include "gtest/gtest.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/bad_input_fixtures.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

int Lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(Conventions, MisspeltCommandSaysWhatItMeant) {
  auto r = RunOvfix("conver a.onnx b.onnx");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("unknown command 'conver' (did you mean 'convert'?)"), std::string::npos)
      << r.err;
  auto nested = RunOvfix("rules lst");
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_NE(nested.err.find("ovfix rules: unknown command 'lst' (did you mean 'list'?)"),
            std::string::npos)
      << nested.err;
}

TEST(Conventions, UnknownOptionNamesTheCommandAndTheNearestOption) {
  auto r = RunOvfix("convert a.onnx b.onnx --tolerence 0.1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("ovfix convert: unknown option '--tolerence' (did you mean '--tolerance'?)"),
            std::string::npos)
      << r.err;
  // Other usage errors name the command too.
  auto missing = RunOvfix("run");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(absl::StartsWith(missing.err, "ovfix run: ")) << missing.err;
}

TEST(Conventions, HelpCommandIsTheCommandsHelpAndStatesExitCodes) {
  for (const char* command : {"inspect", "run", "convert", "explain", "rules", "rules check",
                              "rules list", "compare", "devices"}) {
    auto help = RunOvfix(absl::StrCat("help ", command));
    auto flag = RunOvfix(absl::StrCat(command, " --help"));
    EXPECT_EQ(help.exit_code, 0) << command << ": " << help.err;
    EXPECT_EQ(flag.exit_code, 0) << command;
    EXPECT_EQ(help.out, flag.out) << command;
    EXPECT_NE(flag.out.find("Exit codes: 0 success"), std::string::npos) << command << flag.out;
  }
  EXPECT_NE(RunOvfix("convert --help").out.find("1 the converted model changes the outputs"),
            std::string::npos);
  EXPECT_NE(RunOvfix("--help").out.find("Exit codes:"), std::string::npos);
  auto unknown = RunOvfix("help convrt");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("did you mean 'convert'?"), std::string::npos) << unknown.err;
}

TEST(Conventions, JsonWritesNonFiniteNumbersAsNullWithAFlag) {
  cli::JsonWriter w;
  w.BeginObject();
  w.Key("error").Number(std::numeric_limits<double>::infinity());
  w.Key("rel").Number(std::nan(""));
  w.Key("ok").Number(0.5);
  w.Key("list").BeginArray().Number(-std::numeric_limits<double>::infinity()).Number(1).EndArray();
  w.EndObject();
  EXPECT_EQ(w.str(), R"({"error":null,"error_non_finite":"inf","rel":null,"rel_non_finite":"nan",)"
                     R"("ok":0.5,"list":[null,1]})");
}

// A report lists its fields; each value's C++ type says how it is spelt, an optional field
// left out writes nothing (no stray comma), and strings are escaped as JSON requires.
TEST(Conventions, JsonFieldsAreSpeltByTheirType) {
  const std::vector<std::string> names = {"a", "b\"c"};
  const std::vector<int> none;
  cli::JsonWriter w;
  w.BeginObject().Fields(
      {cli::Field("text", std::string("x\ny")), cli::Field("count", 3u),
       cli::Field("bytes", int64_t{1} << 40), cli::Field("ok", true), cli::Field("share", 0.25f),
       cli::Field("names", names), cli::OptionalField(false, "gone", 1), cli::Field("kind", "k"),
       cli::OptionalField(true, "error", -std::numeric_limits<double>::infinity())});
  w.Array("items", std::vector<int>{1, 2}, [](cli::JsonWriter& w, int i) {
    w.Object({cli::Field("i", i), cli::OptionalField(i > 1, "big", i > 1)});
  });
  w.ArrayUnlessEmpty("none", none, [](cli::JsonWriter& w, int i) { w.Int(i); });
  w.Key("control").String(std::string("\x01\\\t\r"));
  w.EndObject();
  EXPECT_EQ(w.str(), R"({"text":"x\ny","count":3,"bytes":1099511627776,"ok":true,"share":0.25,)"
                     R"("names":["a","b\"c"],"kind":"k","error":null,"error_non_finite":"-inf",)"
                     R"("items":[{"i":1},{"i":2,"big":true}],"control":"\u0001\\\t\r"})");
}

class CommandFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir("conventions");
    testing::WriteBytes(Path("tiny.onnx"), testing::TinyModel().SerializeAsString());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  // x = [1, 2, 3, 4] as test data; y = x + 0 is the expected output.
  void WriteSet(const std::string& folder) {
    fs::create_directories(Path(folder));
    Tensor x = Tensor::FromVector<float>(DataType::kFloat, {4}, {1, 2, 3, 4});
    ASSERT_TRUE(WriteTensorFile(Path(folder + "/input_0.pb"), x, "x").ok());
    ASSERT_TRUE(WriteTensorFile(Path(folder + "/output_0.pb"), x, "y").ok());
  }
  fs::path dir_;
};

TEST_F(CommandFolder, JsonOnRunRulesListAndDevices) {
  WriteSet("data/test_data_set_0");
  auto run = RunOvfix("run " + Path("tiny.onnx") + " --test-data " + Path("data/test_data_set_0") +
                      " --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(absl::StartsWith(run.out, "{\"model\":")) << run.out;
  EXPECT_NE(run.out.find("\"name\":\"y\""), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\"max\":4"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\"matches\":true"), std::string::npos) << run.out;
  EXPECT_EQ(Lines(run.out), 1) << run.out;

  auto list = RunOvfix("rules list --json");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_TRUE(absl::StartsWith(list.out, "{\"rule_sets\":[")) << list.out.substr(0, 200);
  EXPECT_NE(list.out.find(R"({"name":"fp16_islands",)"), std::string::npos);
  EXPECT_NE(list.out.find("keep_fp32 (--keep-fp32 REGEX)"), std::string::npos);

  auto devices = RunOvfix("devices --json");
  ASSERT_EQ(devices.exit_code, 0) << devices.err;
  EXPECT_TRUE(absl::StartsWith(devices.out, "{\"devices\":[")) << devices.out;
}

TEST_F(CommandFolder, RunTakesTheFolderThatHoldsTheSets) {
  WriteSet("data/test_data_set_0");
  auto r = RunOvfix("run " + Path("tiny.onnx") + " --test-data " + Path("data"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("output 'y': max 0, "), std::string::npos) << r.out;
  auto compare = RunOvfix("compare " + Path("tiny.onnx") + " " + Path("tiny.onnx") +
                          " --test-data " + Path("data"));
  EXPECT_EQ(compare.exit_code, 0) << compare.out << compare.err;
  EXPECT_NE(compare.out.find("x=" + Path("data/test_data_set_0/input_0.pb")), std::string::npos)
      << compare.out;
}

TEST_F(CommandFolder, OutputPathsAreCheckedBeforeAnyWork) {
  const std::string missing = Path("missing_dir");
  auto convert = RunOvfix("convert " + Path("tiny.onnx") + " " + Path("out.onnx") + " --report " +
                          missing + "/r.json");
  EXPECT_EQ(convert.exit_code, 2);
  EXPECT_EQ(Lines(convert.err), 1) << convert.err;
  EXPECT_NE(
      convert.err.find("--report cannot be written: the folder " + missing + " does not exist"),
      std::string::npos)
      << convert.err;
  EXPECT_EQ(convert.out, "");
  EXPECT_FALSE(fs::exists(Path("out.onnx")));
  auto model = RunOvfix("convert " + Path("tiny.onnx") + " " + missing + "/out.onnx");
  EXPECT_EQ(model.exit_code, 2);
  EXPECT_NE(model.err.find("the output model cannot be written"), std::string::npos) << model.err;
  // compare: before either side runs (a divergence found first would hide exit 2 or 1).
  for (const char* option : {"--html", "--json"}) {
    auto compare = RunOvfix("compare " + Path("tiny.onnx") + " " + Path("tiny.onnx") + " " +
                            option + " " + missing + "/x.out");
    EXPECT_EQ(compare.exit_code, 2) << option;
    EXPECT_EQ(compare.out, "") << option;
    EXPECT_NE(compare.err.find(std::string(option) + " cannot be written"), std::string::npos)
        << compare.err;
  }
}

TEST_F(CommandFolder, ReportIsWrittenWithTheModel) {
  auto r = RunOvfix("convert " + Path("tiny.onnx") + " " + Path("out.onnx") + " --report " +
                    Path("r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(Path("out.onnx")));
  const std::string report = testing::Slurp(Path("r.json"));
  EXPECT_NE(report.find("\"outputs_match\":true"), std::string::npos) << report;
}

TEST_F(CommandFolder, OptionsThatMatchNothingWarnInOneLine) {
  auto r = RunOvfix("convert " + Path("tiny.onnx") + " " + Path("out.onnx") +
                    " --target gpu-fp16 --keep-fp32 NoSuchNode --disable squeeze_axes");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ovfix convert: warning: --keep-fp32 'NoSuchNode' matches no node name "
                       "or op type"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("ovfix convert: warning: --disable squeeze_axes disables nothing: target "
                       "gpu-fp16 does not run it"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Lines(r.err), 2) << r.err;
  // A name of nothing is an error, with the name meant.
  auto typo = RunOvfix("convert " + Path("tiny.onnx") + " " + Path("out3.onnx") +
                       " --disable constant_foldng");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(Lines(typo.err), 1) << typo.err;
  EXPECT_NE(typo.err.find("(did you mean 'constant_folding'?)"), std::string::npos) << typo.err;
  // A pattern that names a node or an op type is no warning.
  auto good = RunOvfix("convert " + Path("tiny.onnx") + " " + Path("out2.onnx") +
                       " --target gpu-fp16 --keep-fp32 Add");
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(good.err, "");
}

TEST_F(CommandFolder, ConvertEndsWithASummaryAndQuietPrintsTheResultOnly) {
  auto r = RunOvfix("convert " + Path("tiny.onnx") + " " + Path("out.onnx") + " --target gpu-fp16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Not a terminal: no progress, nothing on stderr.
  EXPECT_EQ(r.err, "");
  for (const char* row : {"nodes", "  Cast", "weights", "file size", "fp32 cost",
                          "rewrites:", "time:", "end-to-end:"}) {
    EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
  }
  // One Add on 4 floats: weights 16 B -> 8 B in fp16; two Casts added at the fp32 interface
  // that the file keeps by default.
  EXPECT_NE(r.out.find("weights                              16 B  ->  8 B\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  Cast                                  0  ->  2\n"), std::string::npos)
      << r.out;
  // The Add is fp16: no float node, multiply-add or weight byte left in fp32.
  EXPECT_NE(r.out.find("fp32 cost: 0 of 1 float node(s) (0.0%), 0.0% of 4 multiply-adds, 0 B of "
                       "8 B of weights, 2 Cast(s) inserted"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(absl::EndsWith(r.out, "wrote " + Path("out.onnx") + " (target gpu-fp16)\n"));
  auto quiet = RunOvfix("convert " + Path("tiny.onnx") + " " + Path("out.onnx") +
                        " --target gpu-fp16 --quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.out, "wrote " + Path("out.onnx") + " (target gpu-fp16)\n");
  EXPECT_EQ(quiet.err, "");
}

// A rule whose replacement the CPU executor cannot run is rolled back, and the console says
// so (with what to do), not only the JSON report.
TEST_F(CommandFolder, RollbackTheUserCanFixIsOnTheConsole) {
  testing::WriteBytes(Path("no_kernel.rules"), R"(# LeakyRelu(x) -> Multinomial(x)
rule leaky_to_multinomial
  match   (x) => (y) { y = LeakyRelu(x) }
  replace (x) => (y) { y = Multinomial(x) }
)");
  const std::string example = std::string(OVFIX_SOURCE_DIR) + "/examples/gfpgan_modconv";
  auto r = RunOvfix("convert " + example + "/model.onnx " + Path("out.onnx") + " --rules " +
                    Path("no_kernel.rules"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("rolled back: leaky_to_multinomial 2x (first at LeakyRelu '/LeakyRelu': "
                       "could not validate: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("no cpu kernel for ai.onnx::Multinomial at opset 13): change the rule, or "
                       "--disable leaky_to_multinomial\n"),
            std::string::npos)
      << r.out;
}

// A user's rule rolled back for changing the outputs says so on the console, with the output
// and the criteria it missed.
TEST_F(CommandFolder, UserRuleRolledBackForChangingOutputsSaysWhy) {
  testing::WriteBytes(Path("drop_leaky.rules"), R"(# LeakyRelu(x) -> x
rule drop_leaky_relu
  match   (x) => (y) { y = LeakyRelu(x) }
  replace (x) => (x) {}
)");
  const std::string example = std::string(OVFIX_SOURCE_DIR) + "/examples/gfpgan_modconv";
  auto r = RunOvfix("convert " + example + "/model.onnx " + Path("out.onnx") + " --rules " +
                    Path("drop_leaky.rules"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("rolled back: drop_leaky_relu 2x (first at LeakyRelu '/LeakyRelu': "
                       "changed outputs beyond the criteria: output '"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("): change the rule, or --disable drop_leaky_relu\n"), std::string::npos)
      << r.out;
}

// The conversion the issue counted 2,580 lines for: the summary stays short.
TEST(ConvertSummary, DeepResidualWithCalibrationPrintsAtMost40Lines) {
  const std::string dir = testing::SharedDir() + "/models/deep_residual";
  if (!fs::exists(dir + "/model.onnx")) GTEST_SKIP() << "no " << dir;
  const fs::path out = testing::TempDir("deep_residual_summary");
  auto r = RunOvfix("convert " + dir + "/model.onnx " + (out / "out.onnx").string() +
                        " --target gpu-fp16 --calibration-data " + dir,
                    300);
  fs::remove_all(out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_LE(Lines(r.out) + Lines(r.err), 40) << r.out << r.err;
  EXPECT_NE(r.out.find("more (--report)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outputs preserved"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ovfix
