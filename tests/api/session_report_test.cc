// The API as a user program meets it (issue 42 points 1, 2, 3 and 5): a conversion that misses
// its criteria says which output and criterion, with the report; each kind of failure has its
// status code; the report holds the per-output verdicts as structs; a Session loads a model
// once and returns the outputs in the graph's order.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/defs/parser.h"
#include "ovfix/onnx.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

onnx::ModelProto Parse(const std::string& text) {
  onnx::ModelProto model;
  const onnx::Status status = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  return model;
}

// z = x * 2 and y = relu(x + b), declared in that order (not the alphabetical one).
onnx::ModelProto TwoOutputs() {
  return Parse(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2,3] z, float[2,3] y)
        <float[3] b = {-1.0, 0.5, 2.0}, float two = {2.0}> {
      z = Mul(x, two)
      s = Add(x, b)
      y = Relu(s)
    })");
}

onnx::TensorProto FloatTensor(const std::string& name, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.add_dims(3);
  for (float v : values) t.add_float_data(v);
  return t;
}

ovfix::OnnxTensor Light(const onnx::TensorProto& t) { return *ovfix::ToOnnxTensor(t); }

onnx::TensorProto Input() { return FloatTensor("x", {10.1f, -20.3f, 30.7f, 0.33f, 51.9f, -7.7f}); }

// The conversion to fp16 of TwoOutputs, with y held to a bound fp16's rounding cannot meet.
ovfix::ConversionOptions FailingOptions() {
  ovfix::ConversionOptions o;
  o.target = "gpu-fp16";
  o.repair = false;
  o.accuracy = {"y=max:1e-7"};
  o.calibration_sets = {{{"x", Light(Input())}}};
  return o;
}

TEST(ConvertFailure, NamesTheOutputAndCriterionAndCarriesTheReport) {
  ovfix::ConversionReport report;
  absl::StatusOr<ovfix::ConvertedModelProto> c =
      ovfix::Convert(TwoOutputs(), FailingOptions(), &report);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(c.status().message(), HasSubstr("output 'y' fails max:1e-07 (measured "));
  EXPECT_THAT(c.status().message(), HasSubstr("keep_fp32"));
  EXPECT_EQ(ovfix::ErrorKind(c.status()), "accuracy");
  // The payload: the JSON report.
  std::optional<std::string> json = ovfix::ConversionReportJson(c.status());
  ASSERT_TRUE(json.has_value());
  EXPECT_THAT(*json, HasSubstr("\"outputs_match\":false"));
  // The report as structs: each output's verdict, in the graph's order.
  EXPECT_FALSE(report.outputs_match);
  ASSERT_EQ(report.outputs.size(), 2u);
  EXPECT_EQ(report.outputs[0].name, "z");
  EXPECT_TRUE(report.outputs[0].meets);
  const ovfix::OutputComparison& y = report.outputs[1];
  EXPECT_EQ(y.name, "y");
  EXPECT_FALSE(y.meets);
  EXPECT_EQ(y.criteria, "max:1e-07");
  ASSERT_EQ(y.checks.size(), 1u);
  EXPECT_FALSE(y.checks[0].meets);
  EXPECT_GT(y.checks[0].measured, 1e-7);
  EXPECT_DOUBLE_EQ(y.checks[0].measured, y.relative_error);
  EXPECT_GT(y.elements, 0);
  EXPECT_THAT(report.failure, HasSubstr("output 'y' fails max:1e-07"));
  EXPECT_FALSE(report.suggestion.empty());
  EXPECT_FALSE(report.written);
  // Convert without the report pointer fails the same way: the same error and the same report,
  // but for the "time" it measured (the report's last object).
  absl::StatusOr<ovfix::ConvertedModelProto> again = ovfix::Convert(TwoOutputs(), FailingOptions());
  EXPECT_EQ(again.status().code(), c.status().code());
  EXPECT_EQ(again.status().message(), c.status().message());
  std::optional<std::string> again_json = ovfix::ConversionReportJson(again.status());
  ASSERT_TRUE(again_json.has_value());
  auto without_time = [](const std::string& report) {
    return report.substr(0, report.find(",\"time\":{"));
  };
  EXPECT_NE(json->find(",\"time\":{"), std::string::npos);
  EXPECT_EQ(without_time(*again_json), without_time(*json));
}

TEST(ConvertReport, HoldsPerOutputVerdictsIslandsAndNoScratchPaths) {
  ovfix::ConversionOptions o;
  o.target = "gpu-fp16";
  o.calibration_sets = {{{"x", Light(Input())}}};
  absl::StatusOr<ovfix::ConvertedModelProto> c = ovfix::Convert(TwoOutputs(), o);
  ASSERT_TRUE(c.ok()) << c.status();
  const ovfix::ConversionReport& r = c->report;
  EXPECT_TRUE(r.outputs_match);
  ASSERT_EQ(r.outputs.size(), 2u);
  for (const ovfix::OutputComparison& out : r.outputs) {
    EXPECT_TRUE(out.meets) << out.name;
    EXPECT_FALSE(out.criteria.empty());
    EXPECT_FALSE(out.checks.empty());
    EXPECT_THAT(out.statistics, HasSubstr("max "));
  }
  EXPECT_TRUE(r.failure.empty());
  EXPECT_FALSE(r.written);  // nothing the user named was written
  const std::string tmp = std::filesystem::temp_directory_path().string();
  EXPECT_THAT(r.json, Not(HasSubstr(tmp + "/ovfix-")));
  EXPECT_THAT(r.json, Not(HasSubstr("converted.onnx")));
}

TEST(ConvertErrors, CalibrationArraysAreNamedNotTheirScratchFiles) {
  ovfix::ConversionOptions o;
  o.target = "gpu-fp16";
  o.calibration_sets = {{{"ids", Light(Input())}}};
  absl::StatusOr<ovfix::ConvertedModelProto> c = ovfix::Convert(TwoOutputs(), o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("calibration array 'ids'"));
  EXPECT_THAT(c.status().message(), Not(HasSubstr(".pb")));
  EXPECT_THAT(c.status().message(), Not(HasSubstr("--input")));
}

TEST(ConvertErrors, EachKindHasItsCode) {
  const std::string missing = "/nonexistent-ovfix-test/model.onnx";
  EXPECT_EQ(ovfix::LoadModelProto(missing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ovfix::ConvertFileStatus(missing, "/tmp/out.onnx").status().code(),
            absl::StatusCode::kNotFound);

  // A rule file and an output folder that do not exist.
  const std::string dir = std::filesystem::temp_directory_path() / "ovfix_session_report_test";
  std::filesystem::create_directories(dir);
  const std::string input = dir + "/model.onnx";
  ASSERT_TRUE(ovfix::SaveModelProto(TwoOutputs(), input).ok());
  ovfix::ConversionOptions rules;
  rules.rule_files = {dir + "/missing.rules"};
  EXPECT_EQ(ovfix::ConvertFileStatus(input, dir + "/out.onnx", rules).status().code(),
            absl::StatusCode::kNotFound);
  absl::StatusOr<ovfix::ConversionReport> no_folder =
      ovfix::ConvertFileStatus(input, dir + "/no/such/folder/out.onnx");
  EXPECT_EQ(no_folder.status().code(), absl::StatusCode::kNotFound);

  // A bad option: InvalidArgument, kind "option".
  ovfix::ConversionOptions bad;
  absl::Status set = ovfix::SetOptionStatus(bad, "batch", "0");
  EXPECT_EQ(set.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ovfix::ErrorKind(set), "option");
  bad.tolerance = -1;
  absl::StatusOr<ovfix::ConvertedModelProto> c = ovfix::Convert(TwoOutputs(), bad);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ovfix::ErrorKind(c.status()), "option");

  ovfix::ConversionOptions target;
  target.target = "no-such-target";
  absl::StatusOr<ovfix::ConvertedModelProto> unknown = ovfix::Convert(TwoOutputs(), target);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ovfix::ErrorKind(unknown.status()), "option");
  ovfix::ConversionOptions accuracy;
  accuracy.accuracy = {"nope=max:1"};
  absl::StatusOr<ovfix::ConvertedModelProto> no_output = ovfix::Convert(TwoOutputs(), accuracy);
  EXPECT_EQ(ovfix::ErrorKind(no_output.status()), "option");
  EXPECT_THAT(no_output.status().message(), Not(HasSubstr("--accuracy")));

  // A model that does not parse: InvalidArgument, kind "model".
  const std::string garbage = dir + "/garbage.onnx";
  std::ofstream(garbage) << "not a model";
  absl::StatusOr<onnx::ModelProto> parsed = ovfix::LoadModelProto(garbage);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ovfix::ErrorKind(parsed.status()), "model");

  // An op no executor implements: Unimplemented.
  onnx::ModelProto custom = Parse(R"(<ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>
    g (float[2,3] x) => (float[2,3] y) {
      y = com.example.Frobnicate(x)
    })");
  absl::StatusOr<std::vector<onnx::TensorProto>> ran = ovfix::Run(custom, {{"x", Input()}});
  EXPECT_EQ(ran.status().code(), absl::StatusCode::kUnimplemented) << ran.status();
  std::filesystem::remove_all(dir);
}

std::vector<float> Floats(const onnx::TensorProto& t) {
  return std::vector<float>(t.float_data().begin(), t.float_data().end());
}

TEST(ApiSession, LoadsOnceAndReturnsTheGraphsOrder) {
  absl::StatusOr<std::unique_ptr<ovfix::ProtoSession>> session =
      ovfix::ProtoSession::Create(TwoOutputs());
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ((*session)->input_names(), std::vector<std::string>{"x"});
  EXPECT_EQ((*session)->output_names(), (std::vector<std::string>{"z", "y"}));
  EXPECT_EQ((*session)->input_types(), std::vector<int32_t>{onnx::TensorProto::FLOAT});
  for (int i = 0; i < 20; ++i) {
    std::vector<float> x = {1.0f * i, -2.0f, 3.0f, -0.5f, 0.25f, -4.0f};
    absl::StatusOr<std::vector<onnx::TensorProto>> out =
        (*session)->Run({{"x", FloatTensor("x", x)}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 2u);
    // The first output is z = 2x, the second y = relu(x + b), as the graph lists them.
    // The one-shot Run returns the same, in the same (graph) order, each output named.
    absl::StatusOr<std::vector<onnx::TensorProto>> reference =
        ovfix::Run(TwoOutputs(), {{"x", FloatTensor("x", x)}});
    ASSERT_TRUE(reference.ok());
    ASSERT_EQ(reference->size(), 2u);
    EXPECT_EQ((*reference)[0].name(), "z");
    EXPECT_EQ((*reference)[1].name(), "y");
    EXPECT_EQ((*out)[0].SerializeAsString(), (*reference)[0].SerializeAsString());
    EXPECT_EQ((*out)[1].SerializeAsString(), (*reference)[1].SerializeAsString());
    std::vector<float> z = Floats((*out)[0]), y = Floats((*out)[1]);
    if (z.empty()) continue;  // raw_data: compared as bytes above
    const std::vector<float> b = {-1.0f, 0.5f, 2.0f};
    for (int k = 0; k < 6; ++k) {
      EXPECT_FLOAT_EQ(z[k], 2 * x[k]);
      EXPECT_FLOAT_EQ(y[k], std::max(0.0f, x[k] + b[k % 3]));
    }
  }
}

TEST(ApiSession, RefusesAnotherTypeUnlessCast) {
  absl::StatusOr<std::unique_ptr<ovfix::ProtoSession>> session =
      ovfix::ProtoSession::Create(TwoOutputs());
  ASSERT_TRUE(session.ok()) << session.status();
  onnx::TensorProto x = Input();
  x.set_data_type(onnx::TensorProto::DOUBLE);
  x.clear_float_data();
  for (double v : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}) x.add_double_data(v);
  absl::StatusOr<std::vector<onnx::TensorProto>> refused = (*session)->Run({{"x", x}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("input 'x'"));
  EXPECT_THAT(refused.status().message(), HasSubstr("declares float, got double"));
  absl::StatusOr<std::vector<onnx::TensorProto>> cast = (*session)->Run({{"x", x}}, /*cast=*/true);
  EXPECT_TRUE(cast.ok()) << cast.status();
}

}  // namespace
