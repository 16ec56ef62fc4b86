// Converts a model for a target with calibration data, in memory, writes it, and checks it:
// the outputs of the converted model on the calibration inputs against the original's.
//   convert_model INPUT.onnx OUTPUT.onnx [TARGET [CALIBRATION_FOLDER]]
#include <cstdio>
#include <string>

#include "ovfix/ovfix.h"

namespace {

int Fail(const ovfix::Error& error) {
  std::fprintf(stderr, "%s: %s\n", ovfix::ErrorCodeName(error.code), error.message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s INPUT.onnx OUTPUT.onnx [TARGET [CALIBRATION_FOLDER]]\n",
                 argv[0]);
    return 2;
  }
  ovfix::Result<ovfix::OnnxModel> original = ovfix::OnnxModel::Load(argv[1]);
  if (!original.ok()) return Fail(original.error());

  ovfix::ConversionOptions options;
  if (argc > 3) options.target = argv[3];
  if (argc > 4) options.calibration_data.push_back(argv[4]);
  ovfix::Result<ovfix::ConvertedModel> converted = ovfix::Convert(*original, options);
  if (!converted.ok()) return Fail(converted.error());
  const ovfix::ConversionReport& report = converted->report;
  std::printf("ovfix %s, target %s: %d rewrites, end-to-end error %.3g (tolerance %.3g)\n",
              ovfix::Version(), report.target.c_str(), report.rewrites, report.end_to_end_error,
              report.tolerance);

  if (ovfix::Result<void> saved = converted->model.Save(argv[2]); !saved.ok()) {
    return Fail(saved.error());
  }

  // The converted model against the original, on random inputs (fixed seed), judged by the
  // criteria convert judged it by.
  ovfix::Result<ovfix::Comparison> comparison = ovfix::CompareModels(*original, converted->model);
  if (!comparison.ok()) return Fail(comparison.error());
  for (const ovfix::OutputComparison& o : comparison->outputs) {
    std::printf("output %s: %s (%s)%s\n", o.name.c_str(), o.statistics.c_str(), o.criteria.c_str(),
                o.meets ? "" : " FAILS");
  }
  std::printf("wrote %s\n", argv[2]);
  return 0;
}
