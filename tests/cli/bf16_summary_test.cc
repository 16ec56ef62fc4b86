// A bfloat16 conversion says what it gave: where most of the model stays fp32 (its ops have
// no bfloat16 at the model's opset, and the opset could not be raised), the console says so
// in one line with the alternative, and onnx's own assertion texts never reach the user.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunOvfix;

// An opset-7 BatchNormalization with spatial = 0: onnx 1.12's version converter refuses to
// raise it ("Assertion `node->i(attr) == value` failed: Attribute spatial must have value
// 1"), and at opset 7 neither node takes bfloat16.
constexpr char kOpset7[] = R"(<ir_version: 4, opset_import: ["" : 7]>
  g (float[1,3,4,4] x) => (float[1,3,4,4] y)
    <float[3,4,4] sc = {1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1}, float[3,4,4] b = {0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0},
     float[3,4,4] mean = {0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}, float[3,4,4] var = {1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1}> {
    t = Relu(x)
    y = BatchNormalization <spatial = 0> (t, sc, b, mean, var)
  })";

TEST(Bf16Summary, MostlyFp32IsSaidWithTheAlternativeAndOnnxsReasonOnly) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("ovfix_bf16_summary_", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(kOpset7);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string in = (dir / "bn.onnx").string(), out = (dir / "out.onnx").string();
  ASSERT_TRUE(SaveModel(**model, in).ok());
  testing::CommandResult r = RunOvfix(absl::StrCat("convert ", in, " ", out, " --precision bf16"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("could not be raised to"));
  EXPECT_THAT(r.out, HasSubstr("Attribute spatial must have value 1)"));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("Assertion")));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("version_converter/")));
  EXPECT_THAT(r.out, HasSubstr("bf16: 2 of 2 float node(s) (100%) stay fp32, so the file "
                               "computes mostly in fp32; --precision fp16 computes them in fp16 "
                               "with fp32 islands instead"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
