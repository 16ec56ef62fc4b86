// `--target tensorrt --precision fp16` and `--precision bf16` on models written the way PyTorch's
// exporter writes them (bench/exporter_models.h: a BERT-style encoder, ConvNeXt, DenseNet), at a
// small size: the written model has TensorRT's legal forms (equal-rank element-wise inputs
// everywhere), 16-bit float tensors with fp32 islands behind Casts, and meets the default
// precision criteria (docs/validation.md) by ovfix's measurement; the fp16 file also meets them
// when onnxruntime runs it, against onnxruntime's run of the original fp32 file (the
// independent reference). onnxruntime's CPU provider has no bfloat16 kernels for most ops, so
// the bf16 files are measured by ovfix only. The onnxruntime part skips without
// node/onnxruntime-node (tests/support/ort_peer.h).
#include <cmath>
#include <filesystem>
#include <functional>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "bench/exporter_models.h"
#include "converter/accuracy.h"
#include "converter/output_verdict.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"
#include "rules/conversion_options.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/ort_peer.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

struct Export {
  std::string name;
  std::function<onnx::ModelProto()> make;
};

std::vector<Export> Exports() {
  return {
      {"x_bert", [] { return bench::ExportedBertModelSized(32, 64, 4, 2); }},
      {"x_convnext",
       [] {
         return bench::ExportedConvNextModelSized(64, {32, 64}, {1, 1});
       }},
      {"x_densenet", [] { return bench::ExportedDenseNetModelSized(32, 8, 2); }},
  };
}

// Inputs a user would feed: images normalized as ImageNet's (a smooth scene plus sensor noise,
// about [-2, 2]), token embeddings of unit scale, an attention mask whose last quarter is
// padding.
Tensor InputFor(const Value& v, std::mt19937& rng) {
  const std::vector<int64_t> dims = v.static_shape().value_or(std::vector<int64_t>{});
  Tensor t(v.elem_type(), dims);
  float* x = t.data<float>();
  const int64_t n = t.numel();
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (v.name() == "attention_mask") {
    for (int64_t i = 0; i < n; ++i) x[i] = i < n * 3 / 4 ? 1.0f : 0.0f;
  } else if (v.name() == "image") {
    const int64_t side = dims.back();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = i / (side * side), y = (i / side) % side, col = i % side;
      const float scene = 0.5f + 0.3f * std::sin(0.2f * y + 0.7f * c) * std::cos(0.15f * col);
      x[i] = (scene + 0.02f * normal(rng) - 0.45f) / 0.225f;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] = normal(rng);
  }
  return t;
}

struct Written {
  fs::path dir;
  std::string model;                // the original, fp32
  std::vector<std::string> inputs;  // test_data_set_0/input_K.pb
};

Written WriteExport(const Export& e, const std::string& tag) {
  Written w;
  w.dir = fs::temp_directory_path() / absl::StrCat("ovfix_trt_exports_", ::getpid(), "_", tag);
  fs::create_directories(w.dir / "test_data_set_0");
  w.model = (w.dir / "model.onnx").string();
  auto model = ModelFromProto(e.make(), "", e.name);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return w;
  EXPECT_TRUE(SaveModel(**model, w.model).ok());
  std::mt19937 rng(7);
  for (const Value* v : (*model)->graph().inputs()) {
    if (v->is_initializer()) continue;
    w.inputs.push_back(
        (w.dir / "test_data_set_0" / absl::StrCat("input_", w.inputs.size(), ".pb")).string());
    EXPECT_TRUE(WriteTensorFile(w.inputs.back(), InputFor(*v, rng), v->name()).ok());
  }
  return w;
}

struct Case {
  std::string precision;  // fp16, bf16
  Export model;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return absl::StrCat(info.param.model.name, "_", info.param.precision);
}

class TensorrtPrecisionExports : public ::testing::TestWithParam<Case> {};

TEST_P(TensorrtPrecisionExports, EqualRanksHalfTensorsWithIslandsWithinTheDefaultCriteria) {
  const Case& c = GetParam();
  const Written w = WriteExport(c.model, CaseName({c, 0}));
  ASSERT_EQ(w.inputs.empty(), false);
  const std::string output = (w.dir / "converted.onnx").string();

  const PipelineOptions options =
      test_support::TensorRtConversion(w.model, output, w.dir.string(), c.precision);
  auto model = LoadModel(w.model);
  ASSERT_TRUE(model.ok()) << model.status();
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  std::printf("%s %s:\n%s", c.model.name.c_str(), c.precision.c_str(),
              SummaryTable(*report).c_str());
  // ovfix's measurement of the written file meets the default criteria.
  ASSERT_TRUE(report->outputs_match) << SummaryTable(*report);
  ASSERT_TRUE(report->written);
  // The cost (console line, --report r.html) names the 16-bit type the model computes in.
  ASSERT_TRUE(report->cost.has_value());
  EXPECT_EQ(report->cost->half_name, c.precision);

  const DataType half = c.precision == "bf16" ? DataType::kBfloat16 : DataType::kFloat16;
  auto written = LoadModel(output);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(CheckModel(**written).ok()) << CheckModel(**written);
  const test_support::WrittenPrecision p = test_support::CountWrittenPrecision(**written, half);
  const int elementwise = p.elementwise, half_values = p.half_values,
            fp32_computing = p.fp32_computing, casts_to_float = p.casts_to_float;
  EXPECT_GT(elementwise, 0);
  EXPECT_GT(half_values, 0) << "no 16-bit float tensor: the precision phase did not run";
  // Most of the model computes in 16 bits; what stays fp32 is an island behind Casts (the
  // outputs' Casts back to float are Casts too, hence >= 1 even without an island).
  std::string islands;
  int without_bf16_kernel = 0;  // the ONNX spec has no bfloat16 for the op at this opset
  for (const rules::IslandNode& i : report->islands) {
    absl::StrAppend(&islands, "  ", i.node, ": ", i.reason, "\n");
    without_bf16_kernel += i.reason.find("no bfloat16 in the ONNX spec") != std::string::npos;
  }
  if (without_bf16_kernel == 0) {
    EXPECT_GT(half_values, fp32_computing) << SummaryTable(*report) << islands;
  } else {
    // Conv and pooling gain bfloat16 only at opset 22 (onnx's schemas): at the exporter's
    // opset 14 they stay fp32 (with the ops between them), and the report says how many.
    EXPECT_EQ(c.precision, "bf16");
    EXPECT_NE(report->opset_note.find(absl::StrCat(
                  without_bf16_kernel, " float node(s) whose op has no bfloat16 at opset 14")),
              std::string::npos)
        << report->opset_note << "\n"
        << islands;
    std::printf("%s bf16 opset note: %s\n", c.model.name.c_str(), report->opset_note.c_str());
  }
  EXPECT_GT(casts_to_float, 0);
  EXPECT_EQ(report->islands.empty(), fp32_computing == 0) << SummaryTable(*report);
  if (c.model.name == "x_bert") {
    // Softmax sums and LayerNorm statistics: fp32 islands under both policies, which the
    // island certificate then tries back in fp16 (on this input they meet the criteria).
    ASSERT_TRUE(report->certificate.has_value()) << SummaryTable(*report);
    EXPECT_GT(report->certificate->fp32_nodes_before, 0) << SummaryTable(*report);
    EXPECT_EQ(report->certificate->fp32_nodes_after, static_cast<int>(report->islands.size()));
  }

  if (c.precision != "fp16") {
    fs::remove_all(w.dir);
    return;
  }
  // onnxruntime runs the fp16 file; onnxruntime's run of the original is the reference.
  OVFIX_REQUIRE_ORT(modules);
  const std::vector<Tensor> expected =
      testing_support::RunOrt(modules, w.model, w.inputs, w.dir / "ort_fp32");
  const std::vector<Tensor> actual =
      testing_support::RunOrt(modules, output, w.inputs, w.dir / "ort_fp16");
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) {
    Tensor got = actual[k];
    if (got.type() == DataType::kFloat16) got = ConvertTensor(got, DataType::kFloat);
    const Criteria criteria = DefaultPrecisionCriteria(expected[k].numel());
    const OutputStatistics stats =
        MeasureOutput(got, expected[k], exec::kFloat16Resolution, criteria, kReportedBeyondError);
    EXPECT_LE(CriteriaScore(criteria, stats), 1.0)
        << c.model.name << " output " << k << ": " << DescribeStatistics(stats);
  }
  fs::remove_all(w.dir);
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const char* precision : {"fp16", "bf16"}) {
    for (const Export& e : Exports()) cases.push_back({precision, e});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(ExporterModels, TensorrtPrecisionExports, ::testing::ValuesIn(Cases()),
                         CaseName);

}  // namespace
}  // namespace ovfix::converter
