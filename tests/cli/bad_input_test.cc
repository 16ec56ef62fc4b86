// The one line a command prints for bad input: it names a file the command was given (the
// model when the message names none), keeps a usage error as it is, and escapes what would
// break the line or drive the terminal.
#include "cli/bad_input.h"

#include "gtest/gtest.h"

namespace ovfix::cli {
namespace {

TEST(BadInputLine, NamesTheModelWhenTheMessageNamesNoFile) {
  const std::vector<std::string> files = {"in.onnx", "out.onnx", "x.pb"};
  EXPECT_EQ(BadInputLine("convert", "Gather 'g': indices out of range", files),
            "ovfix convert: in.onnx: Gather 'g': indices out of range");
  EXPECT_EQ(BadInputLine("convert", "x.pb: not a serialized TensorProto", files),
            "ovfix convert: x.pb: not a serialized TensorProto");
  EXPECT_EQ(BadInputLine("convert", "out.onnx: is a folder, not a file name", files),
            "ovfix convert: out.onnx: is a folder, not a file name");
  EXPECT_EQ(BadInputLine("convert", "--input-shape x=1x2: the input has rank 3", files),
            "ovfix convert: --input-shape x=1x2: the input has rank 3");
  EXPECT_EQ(BadInputLine("run", "no model given", {}), "ovfix run: no model given");
  // Rule file errors keep their FILE:LINE:COL form.
  EXPECT_EQ(BadInputLine("", "my.rules:3:1: unknown helper", {}), "my.rules:3:1: unknown helper");
}

TEST(BadInputLine, EscapesControlCharacters) {
  EXPECT_EQ(
      BadInputLine("run", "value 'a\nb\x1b[2J' is read before anything produces it", {"m.onnx"}),
      "ovfix run: m.onnx: value 'a\\nb\\x1b[2J' is read before anything produces it");
}

}  // namespace
}  // namespace ovfix::cli
