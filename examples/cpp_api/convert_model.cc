// Converts a model for a target with calibration data, in memory, writes it, and checks it:
// the outputs of the converted model on the calibration inputs against the original's.
//   convert_model INPUT.onnx OUTPUT.onnx [TARGET [CALIBRATION_FOLDER]]
#include <cstdio>
#include <fstream>
#include <string>

#include "ovfix/ovfix.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s INPUT.onnx OUTPUT.onnx [TARGET [CALIBRATION_FOLDER]]\n",
                 argv[0]);
    return 2;
  }
  absl::StatusOr<onnx::ModelProto> original = ovfix::LoadModelProto(argv[1]);
  if (!original.ok()) {
    std::fprintf(stderr, "%s\n", std::string(original.status().message()).c_str());
    return 2;
  }

  ovfix::ConversionOptions options;
  if (argc > 3) options.target = argv[3];
  if (argc > 4) options.calibration_data.push_back(argv[4]);
  absl::StatusOr<ovfix::ConvertedModel> converted = ovfix::Convert(*original, options);
  if (!converted.ok()) {
    std::fprintf(stderr, "%s\n", std::string(converted.status().message()).c_str());
    return 2;
  }
  const ovfix::ConversionReport& report = converted->report;
  std::printf("ovfix %s, target %s: %d rewrites, end-to-end error %.3g (tolerance %.3g)\n",
              ovfix::Version(), report.target.c_str(), report.rewrites, report.end_to_end_error,
              report.tolerance);

  std::ofstream out(argv[2], std::ios::binary);
  if (!converted->model.SerializeToOstream(&out) || !out.flush()) {
    std::fprintf(stderr, "%s: cannot write\n", argv[2]);
    return 2;
  }

  // The converted model against the original, on random inputs (fixed seed), judged by the
  // criteria convert judged it by.
  absl::StatusOr<ovfix::Comparison> comparison = ovfix::CompareModels(*original, converted->model);
  if (!comparison.ok()) {
    std::fprintf(stderr, "%s\n", std::string(comparison.status().message()).c_str());
    return 2;
  }
  for (const ovfix::OutputComparison& o : comparison->outputs) {
    std::printf("output %s: %s (%s)%s\n", o.name.c_str(), o.statistics.c_str(), o.criteria.c_str(),
                o.meets ? "" : " FAILS");
  }
  std::printf("wrote %s\n", argv[2]);
  return 0;
}
