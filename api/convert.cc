// ConvertFile and Convert: the options of `ovfix convert` into the pipeline's
// (converter/pipeline.h) through the option table, as conversion_flags.cc puts the command
// line's, so that the same options write the same bytes as the command line.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/model_proto.h"
#include "api/options.h"
#include "converter/accuracy.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "converter/report_html.h"
#include "ir/atomic_file.h"
#include "ir/model_io.h"
#include "ir/status_macros.h"
#include "rules/conversion_options.h"

namespace ovfix {
namespace {

// Writes the in-memory calibration sets as tensor files in `folder`: the pipeline reads
// calibration data from files, as the command line's --input does.
absl::Status WriteCalibrationSets(const std::vector<NamedTensors>& sets, const std::string& folder,
                                  std::vector<converter::InputFiles>& input_sets) {
  for (size_t i = 0; i < sets.size(); ++i) {
    converter::InputFiles files;
    int k = 0;
    for (const auto& [name, tensor] : sets[i]) {
      const std::string file = absl::StrCat(folder, "/set_", i, "_input_", k++, ".pb");
      std::ofstream out(file, std::ios::binary);
      if (!tensor.SerializeToOstream(&out) || !out.flush()) {
        return absl::InternalError(absl::StrCat(file, ": cannot write calibration tensor"));
      }
      files[name] = file;
    }
    input_sets.push_back(std::move(files));
  }
  return absl::OkStatus();
}

// The options of the table that the passes read (rules::ConvertOptions), set from the
// members that carry them as the command line sets them from its flags: a given option wins
// over the target's. Errors name the option.
absl::Status SetTableOptions(const ConversionOptions& o, converter::PipelineOptions& p) {
  for (const rules::OptionSpec& spec : rules::ConversionOptionTable()) {
    if (spec.set == nullptr || spec.api_field.empty()) continue;
    const std::vector<std::string> texts = api::MemberTexts(spec, o);
    for (const std::string& text : texts) {
      if (absl::Status s = spec.set(text, p.convert); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(std::string(spec.name), ": ", s.message()));
      }
    }
    if (!texts.empty()) p.set_by_user.insert(std::string(spec.name));
  }
  return absl::OkStatus();
}

absl::StatusOr<converter::PipelineOptions> ToPipelineOptions(const ConversionOptions& o) {
  converter::PipelineOptions p;
  OVFIX_RETURN_IF_ERROR(SetTableOptions(o, p));
  // The options the pipeline reads itself (the table's entries without a setter).
  p.rule_files = o.rule_files;
  if (o.log) p.log = o.log;
  p.calibration_data = o.calibration_data;
  if (o.tolerance) {
    if (!(*o.tolerance >= 0)) return absl::InvalidArgumentError("tolerance: must be >= 0");
    p.tolerance = *o.tolerance;
  }
  for (const std::string& text : o.accuracy) {
    if (absl::Status s = converter::AddAccuracyOption(text, p.accuracy); !s.ok()) return s;
  }
  p.repair = o.repair;
  p.write_output = true;
  p.report_path = o.report_path;
  return p;
}

ConversionReport Summarize(const converter::ConversionReport& r, const Model& model) {
  ConversionReport s;
  s.target = r.target;
  s.outputs_match = r.outputs_match && !(r.repair && r.repair->only_fp32);
  s.validated = r.validated;
  s.validation_note = r.validation_note;
  s.calibration = r.calibration;
  if (r.end_to_end) s.end_to_end_error = r.end_to_end->max_error;
  s.tolerance = r.end_to_end_tolerance;
  for (const converter::StepReport& step : r.steps) {
    s.steps.push_back({step.name, step.rewrites, step.rolled_back});
    s.rewrites += step.rewrites;
  }
  s.fp32_nodes_kept = converter::CountFloatNodes(model).float32;
  if (r.repair) s.repaired_nodes = static_cast<int>(r.repair->kept.size());
  s.written = r.written;
  s.seconds = r.seconds;
  s.json = converter::ReportToJson(r);
  return s;
}

std::string Mismatch(const converter::ConversionReport& r) {
  if (r.repair && r.repair->only_fp32) {
    return "only the fp32 model meets the accuracy criterion (every float node kept in fp32 by "
           "the repair): no fp16 model";
  }
  return absl::StrFormat(
      "the converted model changes the outputs beyond tolerance (error %.3g, tolerance %.3g)",
      r.end_to_end ? r.end_to_end->max_error : 0.0, r.end_to_end_tolerance);
}

// Runs the pipeline on `model` and writes `output` (and the report) when it keeps the outputs.
absl::StatusOr<ConversionReport> ConvertAndWrite(Model& model, converter::PipelineOptions& p,
                                                 const ConversionOptions& o,
                                                 const std::string& output,
                                                 api::ScratchFolder& scratch) {
  if (!o.calibration_sets.empty()) {
    if (!scratch.ok()) return absl::InternalError("cannot make a scratch folder in $TMPDIR");
    if (absl::Status s = WriteCalibrationSets(o.calibration_sets, scratch.path(), p.input_sets);
        !s.ok()) {
      return s;
    }
  }
  p.output_path = output;
  absl::StatusOr<converter::ConversionReport> report = converter::ConvertModel(model, p);
  if (!report.ok()) return report.status();
  if (!report->outputs_match && !o.report_path.empty()) {
    const std::string text = converter::ReportFileText(*report, o.report_path);
    absl::Status s = WriteFileAtomically(o.report_path, [&](std::ostream& out) {
      out << text;
      return out ? absl::OkStatus() : absl::InternalError("write failed");
    });
    if (!s.ok()) return absl::InternalError(absl::StrCat(o.report_path, ": ", s.message()));
  }
  ConversionReport summary = Summarize(*report, model);
  if (!summary.outputs_match && summary.validation_note.empty()) {
    summary.validation_note = Mismatch(*report);
  }
  return summary;
}

absl::StatusOr<ConversionReport> ConvertModelFile(const std::string& input,
                                                  const std::string& output,
                                                  const ConversionOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(output, ec) && fs::equivalent(input, output, ec)) {
    return absl::InvalidArgumentError(output + ": output is the input model");
  }
  if (fs::is_directory(output, ec)) {
    return absl::InvalidArgumentError(output + ": is a folder, not a file name");
  }
  absl::StatusOr<converter::PipelineOptions> p = ToPipelineOptions(options);
  if (!p.ok()) return p.status();
  p->input_path = input;
  absl::StatusOr<std::unique_ptr<Model>> model = ovfix::LoadModel(input);
  if (!model.ok()) return model.status();
  api::ScratchFolder scratch;
  return ConvertAndWrite(**model, *p, options, output, scratch);
}

absl::StatusOr<ConvertedModel> ConvertProto(const onnx::ModelProto& model,
                                            const ConversionOptions& options) {
  absl::StatusOr<converter::PipelineOptions> p = ToPipelineOptions(options);
  if (!p.ok()) return p.status();
  absl::StatusOr<std::unique_ptr<Model>> ir = api::ModelFromMemory(model);
  if (!ir.ok()) return ir.status();
  // The model goes through the file the command line would write: the same bytes.
  api::ScratchFolder scratch;
  if (!scratch.ok()) return absl::InternalError("cannot make a scratch folder in $TMPDIR");
  const std::string output = scratch.path() + "/converted.onnx";
  absl::StatusOr<ConversionReport> report = ConvertAndWrite(**ir, *p, options, output, scratch);
  if (!report.ok()) return report.status();
  if (!report->outputs_match) return absl::FailedPreconditionError(report->validation_note);
  ConvertedModel result;
  result.report = *std::move(report);
  result.report.written = false;
  if (WritesExternalData(**ir, p->save)) {
    absl::StatusOr<onnx::ModelProto> loaded = LoadModelProto(output);
    if (!loaded.ok()) return loaded.status();
    result.model = *std::move(loaded);
  } else {
    std::ifstream in(output, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    if (!in || !result.model.ParseFromString(bytes.str())) {
      return absl::InternalError(output + ": cannot read the converted model back");
    }
  }
  return result;
}

}  // namespace

// The public calls, their errors made one line (api::OneLine).
absl::StatusOr<ConversionReport> ConvertFile(const std::string& input, const std::string& output,
                                             const ConversionOptions& options) {
  return api::OneLine(ConvertModelFile(input, output, options));
}

absl::StatusOr<ConvertedModel> Convert(const onnx::ModelProto& model,
                                       const ConversionOptions& options) {
  return api::OneLine(ConvertProto(model, options));
}

}  // namespace ovfix
