// The island certificate (converter/repair.h): after a conversion that meets the criteria,
// each fp32 island is tried back in fp16 alone. A decomposed LayerNorm over rows of raw
// pixels, which the island policy keeps in fp32 (its squares reach 1.6e4, past the calm
// limit) but fp16 computes within the criteria, is given back, and onnxruntime with fp16
// storage emulated confirms the written file; a sum of squares of raw pixels (1.6e7 > 65504)
// is certified needed, its first overflowing node named, and the all-fp16 model, written by
// hand, fails the criterion in onnxruntime; --certify off leaves the islands as they were.
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "converter/accuracy.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/fp16_models.h"
#include "tests/support/fp16_storage_emulation.h"
#include "tests/support/ort_peer.h"
#include "tests/support/tensor_checks.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using converter::CertifiedIsland;
using converter::ConversionReport;
using converter::IslandVerdict;
using converter::PipelineOptions;

// Each row of each channel of raw pixel values (0-255) normalized, LayerNorm-style, written
// out as exporters decompose it: the squares reach 1.6e4, so the island policy keeps the
// variance and the tail in fp32; fp16 holds all of it within max:0.02.
constexpr char kRowNorm[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  row_norm (float[1, 3, 32, 32] x) => (float[1, 3, 32, 32] y) {
    mean = ReduceMean <axes = [-1]> (x)
    d = Sub(x, mean)
    two = Constant <value = float {2}> ()
    sq = Pow(d, two)
    var = ReduceMean <axes = [-1]> (sq)
    eps = Constant <value = float {1e-05}> ()
    ve = Add(var, eps)
    sd = Sqrt(ve)
    n = Div(d, sd)
    g = Constant <value = float[1, 3, 1, 1] {1.5, 0.75, 1.25}> ()
    b = Constant <value = float[1, 3, 1, 1] {0.1, -0.2, 0.05}> ()
    gn = Mul(n, g)
    y = Add(gn, b)
  })";

// The energy of each channel of raw pixels, sqrt(sum x^2): the sum reaches 1.6e7, inf in
// fp16. The scaled image beside it computes in fp16.
constexpr char kEnergy[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  energy_model (float[1, 3, 32, 32] x) => (float[1, 3, 1, 1] energy, float[1, 3, 32, 32] y) {
    two = Constant <value = float {2}> ()
    sq = Pow(x, two)
    axes = Constant <value = int64[2] {2, 3}> ()
    ss = ReduceSum <keepdims = 1> (sq, axes)
    energy = Sqrt(ss)
    s = Constant <value = float {0.0078125}> ()
    y = Mul(x, s)
  })";

// The same with that island in fp16 too, as a backend storing float16 computes it, by hand:
// every value rounded to float16 after it is computed (a Cast pair), arithmetic in float.
constexpr char kEnergyFp16Storage[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  energy_fp16 (float[1, 3, 32, 32] x) => (float[1, 3, 1, 1] energy, float[1, 3, 32, 32] y) {
    x16 = Cast <to = 10> (x)
    xr = Cast <to = 1> (x16)
    two = Constant <value = float {2}> ()
    sq = Pow(xr, two)
    sq16 = Cast <to = 10> (sq)
    sqr = Cast <to = 1> (sq16)
    axes = Constant <value = int64[2] {2, 3}> ()
    ss = ReduceSum <keepdims = 1> (sqr, axes)
    ss16 = Cast <to = 10> (ss)
    ssr = Cast <to = 1> (ss16)
    e = Sqrt(ssr)
    e16 = Cast <to = 10> (e)
    energy = Cast <to = 1> (e16)
    s = Constant <value = float {0.0078125}> ()
    y0 = Mul(xr, s)
    y16 = Cast <to = 10> (y0)
    y = Cast <to = 1> (y16)
  })";

constexpr char kCriterion[] = "max:0.02";
constexpr double kBound = 0.02;

// The cat of tests/data/photos as raw pixel values (0-255), NCHW, 32x32 by nearest pixels.
Tensor RawPixels() {
  absl::StatusOr<Tensor> t = test_models::ResizedPhoto("chelsea_96.pb", 32);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : Tensor(DataType::kFloat, {1, 3, 32, 32});
}

struct Case {
  fs::path dir;
  std::string original, converted, input;
  ConversionReport report;
};

// Converts `text` for gpu-fp16 on the photograph, judged by max:0.02, writing the file.
Case Convert(const std::string& name, const char* text, bool certify) {
  Case c;
  c.dir = test_support::ScratchDir("island_certificate", name);
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return c;
  c.original = (c.dir / "original.onnx").string();
  EXPECT_TRUE(SaveModel(**model, c.original).ok());
  c.input = (c.dir / "x.pb").string();
  EXPECT_TRUE(WriteTensorFile(c.input, RawPixels(), "x").ok());
  c.converted = (c.dir / "converted.onnx").string();
  PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.convert.input_files["x"] = c.input;
  options.convert.certify = certify;
  options.input_path = c.original;
  options.output_path = c.converted;
  options.write_output = true;
  EXPECT_TRUE(converter::AddAccuracyOption(kCriterion, options.accuracy).ok());
  absl::StatusOr<ConversionReport> report = converter::ConvertModel(**model, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (report.ok()) c.report = *std::move(report);
  return c;
}

// The worst output error of `candidate` against `original` in onnxruntime on the photograph,
// float16 storage emulated unless `emulate` is false (inf where it gives a non-finite value).
double OrtError(const std::string& modules, const Case& c, const std::string& candidate,
                bool emulate = true) {
  std::string emulated = candidate;
  if (emulate) {
    emulated = (c.dir / "candidate_fp16_storage.onnx").string();
    testing_support::EmulateFp16Storage(candidate, emulated);
  }
  const auto expected = testing_support::RunOrt(modules, c.original, {c.input}, c.dir / "o");
  const auto actual = testing_support::RunOrt(modules, emulated, {c.input}, c.dir / "c");
  return testing_support::WorstOutputError(actual, expected);
}

int Fp32Islands(const ConversionReport& r) { return static_cast<int>(r.islands.size()); }

TEST(IslandCertificate, GivesBackALayerNormThatFp16Holds) {
  OVFIX_REQUIRE_ORT(modules);
  const Case off = Convert("row_norm_off", kRowNorm, /*certify=*/false);
  const Case on = Convert("row_norm_on", kRowNorm, /*certify=*/true);
  ASSERT_TRUE(off.report.outputs_match && on.report.outputs_match);
  // The policy keeps the variance, its square and the tail in fp32.
  ASSERT_GE(Fp32Islands(off.report), 3) << converter::SummaryTable(off.report);
  ASSERT_TRUE(on.report.certificate.has_value()) << converter::SummaryTable(on.report);
  const converter::IslandCertificate& cert = *on.report.certificate;
  EXPECT_GE(cert.given_back, 1) << converter::SummaryTable(on.report);
  EXPECT_EQ(cert.needed, 0) << converter::SummaryTable(on.report);
  EXPECT_EQ(cert.fp32_nodes_before, Fp32Islands(off.report));
  EXPECT_LT(Fp32Islands(on.report), Fp32Islands(off.report));
  EXPECT_EQ(cert.fp32_nodes_after, Fp32Islands(on.report));
  // Runs counted: one fp32 run, one per try, one for the combination (one input set).
  EXPECT_EQ(cert.model_runs, 1 + cert.tried + 1);
  bool variance = false;
  for (const CertifiedIsland& i : cert.islands) {
    for (const std::string& n : i.nodes) variance = variance || absl::StrContains(n, "var");
    EXPECT_GE(i.score, 0);
    EXPECT_GT(i.multiply_add_share, 0);
  }
  EXPECT_TRUE(variance);
  ASSERT_TRUE(on.report.end_to_end.has_value());
  EXPECT_LE(on.report.end_to_end->score, 1);
  // onnxruntime, storing float16 as a GPU backend does, agrees the file meets the criterion.
  EXPECT_LE(OrtError(modules, on, on.converted), kBound);

  // The command line says it in one line; explain lists the units.
  auto r = testing::RunOvfix(
      absl::StrCat("convert ", on.original, " ", (on.dir / "cli.onnx").string(),
                   " --target gpu-fp16 --accuracy ", kCriterion, " --input x=", on.input));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(
      r.out.find(absl::StrCat("certificate: ", cert.tried, " island(s) tried, 0 needed, ",
                              cert.given_back, " given back (", cert.model_runs, " model runs)")),
      std::string::npos)
      << r.out;
  r = testing::RunOvfix(absl::StrCat("explain fp16_islands ", on.original,
                                     " --target gpu-fp16 --accuracy ", kCriterion,
                                     " --input x=", on.input));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("given back: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("certificate: "), std::string::npos) << r.out;
  fs::remove_all(off.dir);
  fs::remove_all(on.dir);
}

TEST(IslandCertificate, CertifiesAnOverflowingSumOfSquaresNeeded) {
  OVFIX_REQUIRE_ORT(modules);
  const Case c = Convert("energy", kEnergy, /*certify=*/true);
  ASSERT_TRUE(c.report.outputs_match) << converter::SummaryTable(c.report);
  ASSERT_TRUE(c.report.certificate.has_value()) << converter::SummaryTable(c.report);
  const converter::IslandCertificate& cert = *c.report.certificate;
  ASSERT_EQ(cert.tried, 1) << converter::SummaryTable(c.report);
  EXPECT_EQ(cert.needed, 1);
  EXPECT_EQ(cert.given_back, 0);
  const CertifiedIsland& island = cert.islands.front();
  EXPECT_EQ(island.verdict, IslandVerdict::kNeeded);
  EXPECT_GT(island.score, 1);
  // The first value that overflowed: the sum, beyond fp16's max.
  EXPECT_TRUE(absl::StartsWith(island.why, "overflow: ReduceSum")) << island.why;
  EXPECT_NE(island.why.find("'ss'"), std::string::npos) << island.why;
  EXPECT_NE(island.why.find("beyond fp16's max 65504"), std::string::npos) << island.why;
  EXPECT_EQ(cert.fp32_nodes_after, cert.fp32_nodes_before);
  EXPECT_NE(converter::SummaryTable(c.report).find("needed: "), std::string::npos);
  // The written file meets the criterion; the model with that island in fp16, written by
  // hand as a backend storing float16 runs it, does not in onnxruntime.
  EXPECT_LE(OrtError(modules, c, c.converted), kBound);
  absl::StatusOr<std::unique_ptr<Model>> fp16 = ParseModelText(kEnergyFp16Storage);
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  const std::string all_fp16 = (c.dir / "all_fp16.onnx").string();
  ASSERT_TRUE(SaveModel(**fp16, all_fp16).ok());
  EXPECT_GT(OrtError(modules, c, all_fp16, /*emulate=*/false), kBound);
  fs::remove_all(c.dir);
}

TEST(IslandCertificate, OffLeavesTheIslandsAsTheyWere) {
  const Case off = Convert("row_norm_only_off", kRowNorm, /*certify=*/false);
  const Case on = Convert("row_norm_only_on", kRowNorm, /*certify=*/true);
  EXPECT_FALSE(off.report.certificate.has_value());
  ASSERT_TRUE(on.report.certificate.has_value());
  EXPECT_EQ(Fp32Islands(off.report), on.report.certificate->fp32_nodes_before);
  EXPECT_GT(Fp32Islands(off.report), Fp32Islands(on.report));
  EXPECT_EQ(converter::ReportToJson(off.report).find("\"island_certificate\""), std::string::npos);
  EXPECT_NE(converter::ReportToJson(on.report).find("\"island_certificate\""), std::string::npos);
  // The command line's flag does the same.
  auto r = testing::RunOvfix(absl::StrCat(
      "convert ", off.original, " ", (off.dir / "cli.onnx").string(),
      " --target gpu-fp16 --certify off --accuracy ", kCriterion, " --input x=", off.input));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("certificate:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(absl::StrCat("fp32 islands: ", Fp32Islands(off.report))), std::string::npos)
      << r.out;
  fs::remove_all(off.dir);
  fs::remove_all(on.dir);
}

}  // namespace
}  // namespace ovfix
