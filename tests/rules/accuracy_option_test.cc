// `ovfix convert --accuracy`: a spec that does not parse, names no output of the model or does
// not fit an output's shape exits 2 with one line; an output judged by its own criteria is
// reported with them and every statistic, in the console (one line per output) and the JSON
// report; a criterion that fits the output decides where the element-wise one would not.
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;

class AccuracyOption : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("ovfix_accuracy_", ::getpid());
    fs::create_directories(dir_);
    // 1000 + x - 1000 in float16 keeps x (random, in [-1, 1)) to 0.5, the spacing at 1000:
    // errors up to 0.25 on a range of 2, beyond max:0.1. A mask at 0.26 changes only where x
    // is in (0.25, 0.26], which rounds up to 0.5: about half a percent of the elements.
    // `p` passes x on, rounded to float16.
    auto model = ParseModelText(R"(
      m (float[1, 256] x) => (float[1, 256] y, float[1, 256] p) {
        offset = Constant <value = float[1] {1000}> ()
        shifted = Add(x, offset)
        y = Sub(shifted, offset)
        p = Identity(x)
      })");
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_TRUE(SaveModel(**model, Path("in.onnx")).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  testing::CommandResult Convert(const std::string& extra) const {
    return testing::RunOvfix(absl::StrCat("convert ", Path("in.onnx"), " ", Path("out.onnx"),
                                          " --target gpu-fp16 --no-repair ", extra));
  }

  fs::path dir_;
};

TEST_F(AccuracyOption, BadSpecsExitTwoWithOneLine) {
  for (const char* spec :
       {"y=mask:0.1", "y=p99", "nope=max:0.1", "y=boxes@0.5:0", "max:1,top3:bad"}) {
    const testing::CommandResult r = Convert(absl::StrCat("--accuracy ", spec));
    EXPECT_EQ(r.exit_code, 2) << spec << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("--accuracy"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(Path("out.onnx")));
  }
  const testing::CommandResult unknown = Convert("--accuracy nope=max:0.1");
  EXPECT_NE(unknown.err.find("no output 'nope'"), std::string::npos) << unknown.err;
}

TEST_F(AccuracyOption, TheCriterionThatFitsTheOutputDecides) {
  // Element by element (max:0.1) y fails; as a mask at 0.26 with 2% of flips allowed, a mean
  // of 0.1 of its range and no more than 0.2 of the range anywhere, it holds.
  const testing::CommandResult fails = Convert("");
  EXPECT_EQ(fails.exit_code, 1) << fails.out << fails.err;
  const testing::CommandResult holds =
      Convert(absl::StrCat("--accuracy y=mask@0.26:0.02,mean:0.1,max:0.2 --accuracy max:1e-3 ",
                           "--report ", Path("r.json")));
  ASSERT_EQ(holds.exit_code, 0) << holds.out << holds.err;
  // One console line per output, with its statistics; y's own criteria named on its line.
  std::string y_line, p_line;
  for (absl::string_view line : absl::StrSplit(holds.out, '\n')) {
    if (absl::StartsWith(line, "  y: ")) y_line = std::string(line);
    if (absl::StartsWith(line, "  p: ")) p_line = std::string(line);
  }
  EXPECT_NE(y_line.find("mean "), std::string::npos) << holds.out;
  EXPECT_NE(y_line.find("p99.9 "), std::string::npos) << holds.out;
  EXPECT_NE(y_line.find("mask@0.26 flips "), std::string::npos) << holds.out;
  EXPECT_NE(y_line.find("(mask@0.26:0.02,mean:0.1,max:0.2)"), std::string::npos) << holds.out;
  EXPECT_NE(p_line.find("max "), std::string::npos) << holds.out;
  EXPECT_NE(p_line.find("(max:0.001)"), std::string::npos) << holds.out;
  const std::string json = testing::Slurp(Path("r.json"));
  EXPECT_NE(json.find("\"criteria\":\"mask@0.26:0.02,mean:0.1,max:0.2\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"masks\":[{\"threshold\":0.26,\"elements\":256,\"flipped\":"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"p99.9\":"), std::string::npos) << json;
  EXPECT_NE(json.find("\"meets\":true"), std::string::npos) << json;
}

}  // namespace
}  // namespace ovfix
