// Converting a model whose weights are external data streams them: the float16 weights are
// made and written one piece at a time from the mapped float weights, so the converter's
// anonymous memory stays bounded whatever the model's size, and the file it writes holds the
// same weights, bit for bit, as a conversion that makes every weight in memory.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "converter/pipeline.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/model_io.h"
#include "tests/support/child_memory.h"
#include "tests/support/transformer_model.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMB = 1 << 20;

class StreamingConversion : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("ovfix_streaming_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // 384 MB of float weights in 16 MB tensors: held in memory, their 192 MB of float16
    // would exceed the bound below.
    spec_ = {.blocks = 12, .width = 2048, .tokens = 4};
    ASSERT_TRUE(testing::WriteTransformerModel(Input(), spec_).ok());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string Input() { return (dir_ / "model.onnx").string(); }
  static std::string Path(const std::string& name) { return (dir_ / name).string(); }

  // Runs `ovfix convert` on the generated model and returns what it measured.
  static testing::ChildRun Convert(const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> argv = {OVFIX_BINARY, "convert", Input(), out, "--target", "gpu-fp16"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return testing::RunWatchingMemory(argv);
  }

  static fs::path dir_;
  static testing::TransformerSpec spec_;
};
fs::path StreamingConversion::dir_;
testing::TransformerSpec StreamingConversion::spec_;

// The bound the converter keeps: a fixed allowance for the program, the graph and a batch-1
// run's activations, plus the largest tensor (a weight a kernel needs whole).
int64_t AnonymousBound(const testing::TransformerSpec& spec) {
  const int64_t largest = spec.width * spec.width * 4;
  return 128 * kMB + largest;
}

TEST_F(StreamingConversion, AnonymousMemoryStaysBoundedWithAndWithoutValidation) {
  ASSERT_GT(testing::TransformerWeightBytes(spec_) / 2, AnonymousBound(spec_))
      << "the model must be large enough for held float16 weights to break the bound";
  for (const bool validate : {true, false}) {
    SCOPED_TRACE(validate ? "validated" : "--no-validate");
    const std::string out = Path(validate ? "validated.onnx" : "unvalidated.onnx");
    testing::ChildRun run = Convert(
        out, validate ? std::vector<std::string>{} : std::vector<std::string>{"--no-validate"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_GT(run.peak_anonymous_bytes, 0) << "no RssAnon sample";
    EXPECT_LT(run.peak_anonymous_bytes, AnonymousBound(spec_));
    std::printf("peak RssAnon %lld MB (bound %lld MB), %.1f s\n",
                static_cast<long long>(run.peak_anonymous_bytes / kMB),
                static_cast<long long>(AnonymousBound(spec_) / kMB), run.seconds);
    // External data in, external data out.
    EXPECT_TRUE(fs::exists(out + ".data"));
    EXPECT_LT(fs::file_size(out), 1 * kMB);
  }
}

TEST_F(StreamingConversion, WeightsEqualAnInMemoryConversionBitForBit) {
  const std::string streamed = Path("streamed.onnx");
  testing::ChildRun run = Convert(streamed, {});
  ASSERT_EQ(run.exit_code, 0) << run.output;

  // The same conversion in this process, with every weight made in memory before saving.
  auto in_memory = LoadModel(Input());
  ASSERT_TRUE(in_memory.ok()) << in_memory.status();
  PipelineOptions options;
  options.convert.target = "gpu-fp16";
  absl::StatusOr<ConversionReport> report = ConvertModel(**in_memory, options);
  ASSERT_TRUE(report.ok()) << report.status();
  for (Value* v : (*in_memory)->graph().initializers()) (void)v->tensor().raw();

  auto written = LoadModel(streamed);
  ASSERT_TRUE(written.ok()) << written.status();
  auto source = LoadModel(Input());
  ASSERT_TRUE(source.ok()) << source.status();
  const Graph& made = (*in_memory)->graph();
  const Graph& read = (*written)->graph();
  ASSERT_EQ(read.initializers().size(), made.initializers().size());
  int float16_weights = 0;
  for (const Value* expected : made.initializers()) {
    SCOPED_TRACE(expected->name());
    const Value* actual = read.FindValue(expected->name());
    ASSERT_NE(actual, nullptr);
    const Tensor& a = actual->tensor();
    const Tensor& e = expected->tensor();
    ASSERT_EQ(a.type(), e.type());
    ASSERT_EQ(a.dims(), e.dims());
    ASSERT_EQ(std::memcmp(a.raw(), e.raw(), a.nbytes()), 0);
    if (a.type() != DataType::kFloat16 || a.numel() < 1024) continue;
    // And both are the float weights rounded to float16, element by element.
    const Value* original = (*source)->graph().FindValue(expected->name());
    ASSERT_NE(original, nullptr);
    const float* f = original->tensor().data<float>();
    const uint16_t* h = a.data<uint16_t>();
    for (int64_t i = 0; i < a.numel(); i += 997) {
      ASSERT_EQ(h[i], FloatToHalfBits(f[i])) << "element " << i;
    }
    ++float16_weights;
  }
  EXPECT_EQ(float16_weights, 4 * spec_.blocks);  // w1, w2, gamma, beta
}

// The text after `"key":` in `json` from `from` on, up to the next , } or ].
std::string JsonField(const std::string& json, const std::string& key, size_t from = 0) {
  const size_t at = json.find("\"" + key + "\":", from);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size() + 3;
  return json.substr(start, json.find_first_of(",}]", start) - start);
}

TEST_F(StreamingConversion, PrecisionStepIsMeasuredByTheRunOfTheFileWritten) {
  // The weights pass what makes a run costly: the fp16 step is not run on its own, and the
  // error it reports is that of the file written, measured end to end (a run fewer).
  const std::string out = Path("measured.onnx");
  const std::string json = Path("measured.json");
  testing::ChildRun run = Convert(out, {"--report", json});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream in(json);
  const std::string report((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t record = report.find("\"rule\":\"fp16_islands\"");
  ASSERT_NE(record, std::string::npos) << report.substr(0, 2000);
  EXPECT_EQ(JsonField(report, "validated", record), "true");
  double step = -1, end_to_end = -1;
  ASSERT_TRUE(absl::SimpleAtod(JsonField(report, "error", record), &step));
  const size_t validation = report.find("\"validation\":");
  ASSERT_NE(validation, std::string::npos);
  ASSERT_TRUE(absl::SimpleAtod(JsonField(report, "max_error", validation), &end_to_end));
  EXPECT_GT(step, 0);  // fp16 weights change the outputs a little
  EXPECT_EQ(step, end_to_end);
  const size_t note = report.find("on the file written", record);
  EXPECT_LT(note, report.find("\"rule\":", record + 1));  // said in the step's own record
  // The reference run and the file's run; nothing else ran the whole model.
  EXPECT_EQ(JsonField(report, "model_runs"), "2");
}

}  // namespace
}  // namespace ovfix::converter
