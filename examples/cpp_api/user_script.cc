// What a user's program does with the light header and nothing else (issue 42): converts a
// model for fp16 with a criterion per output, meets an accuracy failure and reads each
// output's statistics from the error, converts again with criteria it meets, runs the result
// many times in a session against the original, and compares the two models. Exits 1 where
// the library does not behave as docs/api.md says (tests/library/install_example_test.sh).
//   user_script MODEL_FOLDER   (model.onnx and test_data_set_0/input_0.pb)
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ovfix/ovfix.h"

namespace {

int failures = 0;

void Check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  ++failures;
}

int Fail(const ovfix::Error& error) {
  std::fprintf(stderr, "%s: %s\n", ovfix::ErrorCodeName(error.code), error.message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL_FOLDER\n", argv[0]);
    return 2;
  }
  const std::string folder = argv[1];
  ovfix::Result<ovfix::OnnxModel> model = ovfix::OnnxModel::Load(folder + "/model.onnx");
  if (!model.ok()) return Fail(model.error());
  ovfix::Result<ovfix::OnnxTensor> x = ovfix::LoadTensor(folder + "/test_data_set_0/input_0.pb");
  if (!x.ok()) return Fail(x.error());
  ovfix::Result<ovfix::Session> probe = ovfix::Session::Create(*model);
  if (!probe.ok()) return Fail(probe.error());
  const std::string input = probe->input_names().at(0);
  const std::vector<std::string> outputs = probe->output_names();

  // A bound fp16 cannot meet on every output, the repair off: an accuracy error.
  ovfix::ConversionOptions strict;
  strict.target = "gpu-fp16";
  strict.repair = false;
  strict.calibration_sets = {{{input, *x}}};
  for (const std::string& name : outputs) strict.accuracy.push_back(name + "=max:1e-9");
  ovfix::Result<ovfix::ConvertedModel> failed = ovfix::Convert(*model, strict);
  Check(!failed.ok(), "a conversion held to max:1e-9 fails");
  if (!failed.ok()) {
    const ovfix::Error& e = failed.error();
    std::printf("accuracy error (%s, kind %s): %s\n", ovfix::ErrorCodeName(e.code), e.kind.c_str(),
                e.message.c_str());
    Check(e.code == ovfix::ErrorCode::kFailedPrecondition, "the code is FailedPrecondition");
    Check(e.kind == "accuracy", "the kind is accuracy");
    Check(e.report.has_value(), "the error holds the report");
    if (e.report) {
      Check(e.report->outputs.size() == outputs.size(), "one comparison per output");
      for (const ovfix::OutputComparison& o : e.report->outputs) {
        std::printf("  %s: %s (%s)%s\n", o.name.c_str(), o.statistics.c_str(), o.criteria.c_str(),
                    o.meets ? "" : " FAILS");
        Check(o.criteria == "max:1e-09", "the output's own criteria: " + o.criteria);
        Check(!o.meets && o.relative_error > 1e-9 && o.max_abs_error > 0,
              "the statistics say why " + o.name + " fails");
      }
      Check(e.message.find(e.report->failure) != std::string::npos, "the message names it");
    }
  }

  // Criteria it meets: converted.
  ovfix::ConversionOptions options = strict;
  options.accuracy.clear();
  for (const std::string& name : outputs) options.accuracy.push_back(name + "=max:0.01,p99:0.01");
  ovfix::Result<ovfix::ConvertedModel> converted = ovfix::Convert(*model, options);
  if (!converted.ok()) return Fail(converted.error());
  Check(converted->report.outputs_match, "the second conversion meets its criteria");
  std::printf("converted: %d rewrites, end-to-end error %.3g\n", converted->report.rewrites,
              converted->report.end_to_end_error);

  // Both models in sessions, run many times on scaled inputs, the outputs in the graph's order.
  ovfix::Result<ovfix::Session> original = ovfix::Session::Create(*model);
  ovfix::Result<ovfix::Session> fp16 = ovfix::Session::Create(converted->model);
  if (!original.ok()) return Fail(original.error());
  if (!fp16.ok()) return Fail(fp16.error());
  Check(fp16->output_names() == outputs, "the converted model keeps the outputs' names");
  const std::vector<float> values = x->ToFloats();
  double worst = 0;
  for (int run = 0; run < 50; ++run) {
    std::vector<float> scaled = values;
    for (float& v : scaled) v *= 0.5f + 0.02f * run;
    const ovfix::NamedTensors feeds = {
        {input, ovfix::OnnxTensor::FromFloats(x->shape(), scaled, input)}};
    ovfix::Result<std::vector<ovfix::OnnxTensor>> a = original->Run(feeds);
    ovfix::Result<std::vector<ovfix::OnnxTensor>> b = fp16->Run(feeds, /*cast=*/true);
    if (!a.ok()) return Fail(a.error());
    if (!b.ok()) return Fail(b.error());
    for (size_t k = 0; k < outputs.size(); ++k) {
      Check((*a)[k].name() == outputs[k] && (*b)[k].name() == outputs[k], "graph order");
      const std::vector<float> want = (*a)[k].ToFloats(), got = (*b)[k].ToFloats();
      Check(want.size() == got.size() && !want.empty(), "outputs of the same size");
      for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
        worst = std::fmax(worst, std::fabs(double(want[i]) - got[i]));
      }
    }
  }
  std::printf("50 runs: largest difference %.3g\n", worst);
  Check(worst < 0.05, "the fp16 model computes what the original computes");

  // The two models compared by the library, on the calibration input.
  ovfix::Result<ovfix::Comparison> comparison =
      ovfix::CompareModels(*model, converted->model, {{input, *x}});
  if (!comparison.ok()) return Fail(comparison.error());
  Check(comparison->outputs_match, "compare agrees with convert");
  for (const ovfix::OutputComparison& o : comparison->outputs) {
    std::printf("compare %s: %s (%s)\n", o.name.c_str(), o.statistics.c_str(), o.criteria.c_str());
  }
  std::printf("%s\n", failures == 0 ? "user script: all checks hold" : "user script: FAILED");
  return failures == 0 ? 0 : 1;
}
