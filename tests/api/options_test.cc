// ovfix::SetOption and ovfix::ConversionOptionList (include/ovfix/ovfix.h) against the
// option table (rules/conversion_options.h): every entry the API carries has its member, of
// the entry's type, and SetOption sets it from the command line's text with the table's
// checks.
#include "api/options.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "ir/tensor_proto.h"
#include "ovfix/onnx.h"
#include "rules/conversion_options.h"

namespace ovfix {
namespace {

TEST(ApiOptions, EveryTableEntryOfTheApiHasItsMemberOfItsType) {
  std::set<std::string> fields;
  for (const rules::OptionSpec& spec : rules::ConversionOptionTable()) {
    if (spec.api_field.empty()) continue;
    fields.insert(std::string(spec.api_field));
    EXPECT_TRUE(api::MemberHasTableType(spec)) << spec.name << " -> " << spec.api_field;
  }
  std::set<std::string> bound;
  for (std::string_view name : api::BoundMembers()) bound.insert(std::string(name));
  EXPECT_EQ(bound, fields);
}

TEST(ApiOptions, ListIsTheTableEntriesTheApiCarries) {
  std::vector<std::string> table, flags;
  for (const rules::OptionSpec& spec : rules::ConversionOptionTable()) {
    if (spec.api_field.empty()) continue;
    table.emplace_back(spec.name);
    flags.push_back(rules::FlagName(spec));
  }
  std::vector<std::string> listed, listed_flags;
  for (const OptionInfo& info : ConversionOptionList()) {
    listed.push_back(info.name);
    listed_flags.push_back(info.flag);
    EXPECT_FALSE(info.help.empty()) << info.name;
  }
  EXPECT_EQ(listed, table);
  EXPECT_EQ(listed_flags, flags);
  const std::vector<OptionInfo> list = ConversionOptionList();
  auto find = [&](std::string_view name) {
    return *std::find_if(list.begin(), list.end(), [&](const auto& i) { return i.name == name; });
  };
  EXPECT_EQ(find("validate").flag, "--no-validate");
  EXPECT_EQ(find("broadcast").type, "choice");
  EXPECT_EQ(find("validate").type, "bool");
  EXPECT_EQ(find("batch").type, "int");
  EXPECT_EQ(find("tolerance").type, "number");
  EXPECT_EQ(find("target").type, "text");
  EXPECT_EQ(find("rules").type, "list");
  EXPECT_EQ(find("input_shape").type, "map");
  EXPECT_EQ(find("broadcast").choices, (std::vector<std::string>{"rank", "full"}));
  EXPECT_EQ(find("input_shape").field, "input_shapes");
}

TEST(ApiOptions, SetOptionSetsTheMemberFromTheCommandLinesText) {
  ConversionOptions o;
  ASSERT_TRUE(SetOptionStatus(o, "target", "tensorrt").ok());
  ASSERT_TRUE(SetOptionStatus(o, "batch", "8").ok());
  ASSERT_TRUE(SetOptionStatus(o, "input_shape", "x=1x3x224x224").ok());
  ASSERT_TRUE(SetOptionStatus(o, "input_shape", "mask=2,5").ok());
  ASSERT_TRUE(SetOptionStatus(o, "keep_fp32", "Softmax").ok());
  ASSERT_TRUE(SetOptionStatus(o, "keep_fp32", "/head/.*").ok());
  ASSERT_TRUE(SetOptionStatus(o, "keep_io_types", "true").ok());
  ASSERT_TRUE(SetOptionStatus(o, "precision", "fp16").ok());
  ASSERT_TRUE(SetOptionStatus(o, "fp16_magnitude_threshold", "0.125").ok());
  ASSERT_TRUE(SetOptionStatus(o, "validate", "false").ok());
  ASSERT_TRUE(SetOptionStatus(o, "tolerance", "0.05").ok());
  ASSERT_TRUE(SetOptionStatus(o, "rules", "my.rules").ok());
  EXPECT_EQ(o.target, "tensorrt");
  EXPECT_EQ(o.batch, 8);
  EXPECT_EQ(o.input_shapes["x"], (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(o.input_shapes["mask"], (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(o.keep_fp32, (std::vector<std::string>{"Softmax", "/head/.*"}));
  EXPECT_EQ(o.keep_io_types, true);
  EXPECT_EQ(o.precision, "fp16");
  EXPECT_EQ(o.fp16_magnitude_threshold, 0.125);
  EXPECT_FALSE(o.validate);
  EXPECT_EQ(o.tolerance, 0.05);
  EXPECT_EQ(o.rule_files, std::vector<std::string>{"my.rules"});
  EXPECT_FALSE(o.broadcast.has_value());  // not given: the target's
}

// `input NAME=FILE.pb` reads the tensor file; naming an input again starts another set, as
// the command line's --input does.
TEST(ApiOptions, InputReadsTheTensorFileIntoCalibrationSets) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ovfix_api_options_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  Tensor a(DataType::kFloat, {2});
  a.data<float>()[0] = 1.5f;
  a.data<float>()[1] = -2.0f;
  const std::string file = (dir / "a.pb").string();
  ASSERT_TRUE(WriteTensorFile(file, a, "stored_name").ok());
  ConversionOptions o;
  ASSERT_TRUE(SetOptionStatus(o, "input", "x=" + file).ok());
  ASSERT_TRUE(SetOptionStatus(o, "input", "y=" + file).ok());
  ASSERT_TRUE(SetOptionStatus(o, "input", "x=" + file).ok());
  ASSERT_EQ(o.calibration_sets.size(), 2u);
  EXPECT_EQ(o.calibration_sets[0].size(), 2u);
  EXPECT_EQ(o.calibration_sets[1].size(), 1u);
  const OnnxTensor& x = o.calibration_sets[0].at("x");
  EXPECT_EQ(x.name(), "x");
  EXPECT_EQ(x.type(), ElementType::kFloat);
  EXPECT_EQ(x.shape(), std::vector<int64_t>{2});
  EXPECT_EQ(x.ToFloats(), (std::vector<float>{1.5f, -2.0f}));
  const absl::Status missing = SetOptionStatus(o, "input", "x=" + (dir / "missing.pb").string());
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("missing.pb"), std::string::npos) << missing;
  std::filesystem::remove_all(dir);
}

TEST(ApiOptions, BadValuesAndNamesAreOneLineErrorsNamingTheOption) {
  ConversionOptions o;
  absl::Status s = SetOptionStatus(o, "batch", "0");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "batch: expected a positive integer, got '0'");
  s = SetOptionStatus(o, "broadcast", "diagonal");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().substr(0, 11), "broadcast: ");
  s = SetOptionStatus(o, "keep_io_types", "yes");
  EXPECT_EQ(s.message(), "keep_io_types: expected true or false, got 'yes'");
  s = SetOptionStatus(o, "tolerance", "-1");
  EXPECT_EQ(s.message(), "tolerance: expected a number >= 0, got '-1'");
  s = SetOptionStatus(o, "input_shape", "x=1xtwo");
  EXPECT_EQ(s.message().substr(0, 13), "input_shape: ");
  EXPECT_FALSE(o.batch.has_value());
  EXPECT_FALSE(o.broadcast.has_value());
  EXPECT_TRUE(o.input_shapes.empty());
  // An unknown name, and the entries the API does not carry (target files' only).
  for (const char* name : {"keep_io_type", "fp16", "islands_honoured"}) {
    s = SetOptionStatus(o, name, "true");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_NE(s.message().find(std::string("unknown option '") + name + "'"), std::string::npos)
        << s;
    EXPECT_NE(s.message().find("(the options: target, precision, batch"), std::string::npos) << s;
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s;
  }
  EXPECT_NE(
      SetOptionStatus(o, "keep_io_type", "true").message().find("did you mean 'keep_io_types'?"),
      std::string::npos);
}

}  // namespace
}  // namespace ovfix
