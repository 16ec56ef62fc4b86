// The light surface (include/ovfix/ovfix.h, issue 42): a header with nothing of ONNX, protobuf
// or absl; tensors as bytes with typed accessors, read from and written to TensorProto files;
// models as bytes; errors as Error, an accuracy failure with its report; Run and Session in
// the graph's order; an op no executor implements is Unimplemented by its code.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/defs/parser.h"
#include "ovfix/onnx.h"

namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

ovfix::OnnxModel Parse(const std::string& text) {
  onnx::ModelProto model;
  const onnx::Status status = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  return ovfix::OnnxModel::FromBytes(model.SerializeAsString());
}

// z = x * 2 and y = relu(x + b), declared in that order (not the alphabetical one).
ovfix::OnnxModel TwoOutputs() {
  return Parse(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2,3] z, float[2,3] y)
        <float[3] b = {-1.0, 0.5, 2.0}, float two = {2.0}> {
      z = Mul(x, two)
      s = Add(x, b)
      y = Relu(s)
    })");
}

ovfix::OnnxTensor Input() {
  return ovfix::OnnxTensor::FromFloats({2, 3}, {10.1f, -20.3f, 30.7f, 0.33f, 51.9f, -7.7f});
}

struct Folder {
  Folder() : path(fs::temp_directory_path() / ("ovfix_light_" + std::to_string(getpid()))) {
    fs::create_directories(path);
  }
  ~Folder() { fs::remove_all(path); }
  fs::path path;
};

// The header includes standard headers only: a program that uses it needs no ONNX, protobuf
// or absl on its include path (tests/library/install_example_test.sh builds one without).
TEST(LightHeader, IncludesOnlyStandardHeaders) {
  std::ifstream in(std::string(OVFIX_SOURCE_DIR) + "/include/ovfix/ovfix.h");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string header = text.str();
  const std::regex include(R"(#\s*include\s*([<"][^>"]+[>"]))");
  int includes = 0;
  for (auto it = std::sregex_iterator(header.begin(), header.end(), include);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    EXPECT_EQ(name[0], '<') << name << ": not a standard header";
    EXPECT_EQ(name.find('/'), std::string::npos) << name << ": not a standard header";
    EXPECT_NE(name, "<functional>") << "costs compile time: LogSink instead";
    ++includes;
  }
  EXPECT_GT(includes, 0);
}

TEST(LightTensor, TypedValuesRoundTrip) {
  const ovfix::OnnxTensor f = ovfix::OnnxTensor::FromFloats({3}, {1.5f, -2.0f, 3.25f}, "x");
  EXPECT_EQ(f.type(), ovfix::ElementType::kFloat);
  EXPECT_EQ(f.bytes().size(), 12u);
  EXPECT_EQ(f.name(), "x");
  EXPECT_EQ(f.ToFloats(), (std::vector<float>{1.5f, -2.0f, 3.25f}));
  EXPECT_EQ(f.ToInt64s(), (std::vector<int64_t>{1, -2, 3}));
  // float16: rounded to half (0.1 is not a half) and widened back.
  const ovfix::OnnxTensor h = ovfix::OnnxTensor::FromFloat16s({2}, {0.1f, 70000.0f});
  EXPECT_EQ(h.type(), ovfix::ElementType::kFloat16);
  EXPECT_EQ(h.bytes().size(), 4u);
  const std::vector<float> back = h.ToFloats();
  ASSERT_EQ(back.size(), 2u);
  EXPECT_NEAR(back[0], 0.1f, 1e-4);
  EXPECT_NE(back[0], 0.1f);
  EXPECT_TRUE(std::isinf(back[1]));
  const ovfix::OnnxTensor i = ovfix::OnnxTensor::FromInt64s({2, 1}, {7, -9});
  EXPECT_EQ(i.element_count(), 2);
  EXPECT_EQ(i.ToDoubles(), (std::vector<double>{7.0, -9.0}));
  const int32_t raw[] = {4, 5, 6};
  const ovfix::OnnxTensor r =
      ovfix::OnnxTensor::FromBytes(ovfix::ElementType::kInt32, {3}, raw, sizeof(raw));
  EXPECT_EQ(r.ToInt64s(), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_STREQ(ovfix::ElementTypeName(ovfix::ElementType::kBfloat16), "bfloat16");
  EXPECT_EQ(ovfix::ElementSize(ovfix::ElementType::kFloat16), 2u);
  // Bytes that do not fit the shape: no values, and a call refuses the tensor.
  const ovfix::OnnxTensor bad = ovfix::OnnxTensor::FromFloats({2, 3}, {1.0f});
  EXPECT_TRUE(bad.ToFloats().empty());
  ovfix::Result<std::vector<ovfix::OnnxTensor>> ran = ovfix::Run(TwoOutputs(), {{"x", bad}});
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.error().code, ovfix::ErrorCode::kInvalidArgument);
  EXPECT_THAT(ran.error().message, HasSubstr("input 'x'"));
}

// LoadTensor reads test data's TensorProto files, typed fields (float_data) or raw_data;
// SaveTensor writes one that LoadTensor and ONNX read back.
TEST(LightTensor, LoadsAndSavesTensorProtoFiles) {
  Folder dir;
  onnx::TensorProto typed;
  typed.set_name("input_name");
  typed.set_data_type(onnx::TensorProto::FLOAT);
  typed.add_dims(2);
  typed.add_float_data(0.5f);
  typed.add_float_data(-4.0f);
  const std::string file = (dir.path / "input_0.pb").string();
  std::ofstream(file, std::ios::binary) << typed.SerializeAsString();
  ovfix::Result<ovfix::OnnxTensor> t = ovfix::LoadTensor(file);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->name(), "input_name");
  EXPECT_EQ(t->shape(), std::vector<int64_t>{2});
  EXPECT_EQ(t->ToFloats(), (std::vector<float>{0.5f, -4.0f}));

  const ovfix::OnnxTensor h = ovfix::OnnxTensor::FromFloat16s({1, 2}, {1.0f, -2.5f}, "h");
  const std::string saved = (dir.path / "h.pb").string();
  ASSERT_TRUE(ovfix::SaveTensor(h, saved).ok());
  ovfix::Result<ovfix::OnnxTensor> reread = ovfix::LoadTensor(saved);
  ASSERT_TRUE(reread.ok()) << reread.error().message;
  EXPECT_EQ(reread->type(), ovfix::ElementType::kFloat16);
  EXPECT_EQ(reread->shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(reread->bytes(), h.bytes());
  EXPECT_EQ(reread->name(), "h");

  ovfix::Result<ovfix::OnnxTensor> missing = ovfix::LoadTensor((dir.path / "no.pb").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ovfix::ErrorCode::kNotFound);
  EXPECT_THAT(missing.error().message, HasSubstr("no.pb"));
}

TEST(LightModel, LoadsSavesAndConvertsAsTheProtoSurface) {
  Folder dir;
  const std::string path = (dir.path / "m.onnx").string();
  ASSERT_TRUE(TwoOutputs().Save(path).ok());
  ovfix::Result<ovfix::OnnxModel> loaded = ovfix::OnnxModel::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ovfix::ConversionOptions options;
  options.target = "gpu-fp16";
  options.calibration_sets = {{{"x", Input()}}};
  ovfix::Result<ovfix::ConvertedModel> light = ovfix::Convert(*loaded, options);
  ASSERT_TRUE(light.ok()) << light.error().message;
  absl::StatusOr<ovfix::ConvertedModelProto> proto =
      ovfix::Convert(*ovfix::ToModelProto(*loaded), options);
  ASSERT_TRUE(proto.ok()) << proto.status();
  EXPECT_EQ(light->model.bytes(), proto->model.SerializeAsString());
  EXPECT_EQ(light->report.target, "gpu-fp16");

  ovfix::Result<ovfix::OnnxModel> none = ovfix::OnnxModel::Load((dir.path / "no.onnx").string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ovfix::ErrorCode::kNotFound);
  EXPECT_EQ(none.error().kind, "model");
  ovfix::Result<ovfix::ConvertedModel> garbage =
      ovfix::Convert(ovfix::OnnxModel::FromBytes("not a model"));
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code, ovfix::ErrorCode::kInvalidArgument);
  EXPECT_EQ(garbage.error().kind, "model");
}

// The accuracy failure is an Error that holds the report, with each output's statistics.
TEST(LightErrors, AccuracyFailureCarriesTheReport) {
  ovfix::ConversionOptions o;
  o.target = "gpu-fp16";
  o.repair = false;
  o.accuracy = {"y=max:1e-7"};
  o.calibration_sets = {{{"x", Input()}}};
  ovfix::Result<ovfix::ConvertedModel> c = ovfix::Convert(TwoOutputs(), o);
  ASSERT_FALSE(c.ok());
  const ovfix::Error& e = c.error();
  EXPECT_EQ(e.code, ovfix::ErrorCode::kFailedPrecondition);
  EXPECT_STREQ(ovfix::ErrorCodeName(e.code), "FailedPrecondition");
  EXPECT_EQ(e.kind, "accuracy");
  EXPECT_THAT(e.message, HasSubstr("output 'y' fails max:1e-07 (measured "));
  ASSERT_TRUE(e.report.has_value());
  EXPECT_FALSE(e.report->outputs_match);
  ASSERT_EQ(e.report->outputs.size(), 2u);
  EXPECT_EQ(e.report->outputs[0].name, "z");
  EXPECT_EQ(e.report->outputs[1].name, "y");
  EXPECT_FALSE(e.report->outputs[1].meets);
  EXPECT_GT(e.report->outputs[1].relative_error, 1e-7);
  EXPECT_THAT(e.message, HasSubstr(e.report->failure));
  // As a status: the code, the kind and the JSON report.
  const absl::Status status = ovfix::ToStatus(e);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ovfix::ErrorKind(status), "accuracy");
  EXPECT_EQ(ovfix::ConversionReportJson(status), e.report->json);
}

// An op no executor implements is Unimplemented, and the executor's code says so (the API
// reads no message): a custom op, and a model-local function the executor does not run.
TEST(LightErrors, UnimplementedOpByItsCode) {
  const ovfix::OnnxModel custom =
      Parse(R"(<ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>
    g (float[2,3] x) => (float[2,3] y) {
      y = com.example.Frobnicate(x)
    })");
  ovfix::Result<std::vector<ovfix::OnnxTensor>> ran = ovfix::Run(custom, {{"x", Input()}});
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.error().code, ovfix::ErrorCode::kUnimplemented) << ran.error().message;
  EXPECT_THAT(ran.error().message, HasSubstr("Frobnicate"));
  ovfix::Result<ovfix::Session> session = ovfix::Session::Create(custom);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.error().code, ovfix::ErrorCode::kUnimplemented);
}

TEST(LightRun, OutputsInTheGraphsOrderAsTheSessionGives) {
  ovfix::Result<std::vector<ovfix::OnnxTensor>> once = ovfix::Run(TwoOutputs(), {{"x", Input()}});
  ASSERT_TRUE(once.ok()) << once.error().message;
  ASSERT_EQ(once->size(), 2u);
  EXPECT_EQ((*once)[0].name(), "z");
  EXPECT_EQ((*once)[1].name(), "y");
  const ovfix::OnnxTensor* y = ovfix::FindTensor(*once, "y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y, &(*once)[1]);
  EXPECT_EQ(ovfix::FindTensor(*once, "w"), nullptr);

  ovfix::Result<ovfix::Session> created = ovfix::Session::Create(TwoOutputs());
  ASSERT_TRUE(created.ok()) << created.error().message;
  ovfix::Session session = std::move(created).value();
  EXPECT_EQ(session.input_names(), std::vector<std::string>{"x"});
  EXPECT_EQ(session.output_names(), (std::vector<std::string>{"z", "y"}));
  EXPECT_EQ(session.input_types(), std::vector<ovfix::ElementType>{ovfix::ElementType::kFloat});
  for (int i = 0; i < 10; ++i) {
    const ovfix::OnnxTensor x =
        ovfix::OnnxTensor::FromFloats({2, 3}, {1.0f * i, -2.0f, 3.0f, -0.5f, 0.25f, -4.0f});
    ovfix::Result<std::vector<ovfix::OnnxTensor>> out = session.Run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.error().message;
    ovfix::Result<std::vector<ovfix::OnnxTensor>> ref = ovfix::Run(TwoOutputs(), {{"x", x}});
    ASSERT_TRUE(ref.ok());
    ASSERT_EQ(out->size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ((*out)[k].name(), (*ref)[k].name());
      EXPECT_EQ((*out)[k].ToFloats(), (*ref)[k].ToFloats());
    }
    EXPECT_FLOAT_EQ((*out)[0].ToFloats()[0], 2.0f * i);
  }
  // Moved: the new owner runs, the old one says it was moved from.
  ovfix::Session moved = std::move(session);
  EXPECT_TRUE(moved.Run({{"x", Input()}}).ok());
  ovfix::Result<std::vector<ovfix::OnnxTensor>> stale = session.Run({{"x", Input()}});
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, ovfix::ErrorCode::kFailedPrecondition);
  // Another element type is refused unless cast.
  const ovfix::OnnxTensor d = ovfix::OnnxTensor::FromDoubles({2, 3}, {1, 2, 3, 4, 5, 6});
  ovfix::Result<std::vector<ovfix::OnnxTensor>> refused = moved.Run({{"x", d}});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("the model declares float, got double"));
  EXPECT_TRUE(moved.Run({{"x", d}}, /*cast=*/true).ok());
}

// The option table's defaults are the struct's: the same conversion as the command line's
// without flags (python/tests check the Python module takes them too).
TEST(LightOptions, DefaultsAreTheTables) {
  const ovfix::ConversionOptions defaults;
  for (const ovfix::OptionInfo& info : ovfix::ConversionOptionList()) {
    if (info.field == "target") {
      EXPECT_EQ(defaults.target, info.default_value);
    }
  }
  ovfix::ConversionOptions o;
  ovfix::Result<void> set = ovfix::SetOption(o, "batch", "0");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().code, ovfix::ErrorCode::kInvalidArgument);
  EXPECT_EQ(set.error().kind, "option");
  EXPECT_THAT(set.error().message, HasSubstr("batch: "));
}

// What each pass did reaches a LogSink.
TEST(LightOptions, LogLinesReachTheSink) {
  struct Lines : ovfix::LogSink {
    void Write(const std::string& line) override { lines.push_back(line); }
    std::vector<std::string> lines;
  } sink;
  ovfix::ConversionOptions o;
  o.target = "gpu-fp16";
  o.log = &sink;
  o.calibration_sets = {{{"x", Input()}}};
  ASSERT_TRUE(ovfix::Convert(TwoOutputs(), o).ok());
  EXPECT_FALSE(sink.lines.empty());
}

}  // namespace
