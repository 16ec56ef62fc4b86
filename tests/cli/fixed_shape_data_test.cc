// Calibration data that contradicts --batch or --input-shape is the user's mistake, named as
// such: exit 2 and one line naming the file, its shape, the input and the option (it used to
// surface as a shape-inference failure of fix_input_shapes).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunOvfix;

TEST(FixedShapeData, DataThatContradictsTheFixedShapeIsNamed) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("ovfix_fixed_shape_", ::getpid());
  fs::create_directories(dir);
  absl::StatusOr<std::unique_ptr<Model>> model =
      ParseModelText("g (float[N,6,8] x) => (float[N,6,8] y) { y = Relu(x) }");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string path = (dir / "m.onnx").string(), out = (dir / "out.onnx").string();
  ASSERT_TRUE(SaveModel(**model, path).ok());
  const std::string data = (dir / "x.pb").string();
  ASSERT_TRUE(WriteTensorFile(data, Tensor(DataType::kFloat, {2, 6, 8}), "x").ok());
  struct Case {
    std::string options, says;
  };
  for (const Case& c :
       {Case{"--target openvino-gpu --batch 1",
             "x.pb: holds float[2,6,8], a batch of 2, but --batch 1 fixes the first dim of input "
             "'x' to 1"},
        Case{"--input-shape x=1x6x8",
             "x.pb: holds float[2,6,8], but --input-shape x=1x6x8 fixes input 'x' to that "
             "shape"}}) {
    const testing::CommandResult r =
        RunOvfix(absl::StrCat("convert ", path, " ", out, " ", c.options, " --input x=", data));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("bug in ovfix")));
    EXPECT_FALSE(fs::exists(out));
  }
  // Data of the fixed batch converts.
  ASSERT_TRUE(WriteTensorFile(data, Tensor(DataType::kFloat, {1, 6, 8}), "x").ok());
  EXPECT_EQ(
      RunOvfix(absl::StrCat("convert ", path, " ", out, " --batch 1 --input x=", data)).exit_code,
      0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
