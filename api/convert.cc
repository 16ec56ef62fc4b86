// ConvertFile and Convert: the options of `ovfix convert` into the pipeline's
// (converter/pipeline.h) through the translation the command line's flags go through too
// (converter/user_options.h), so that the same options write the same bytes as the command
// line.
#include "api/convert.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "api/model_proto.h"
#include "api/options.h"
#include "converter/accuracy.h"
#include "converter/output_verdict.h"
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
      absl::StatusOr<onnx::TensorProto> proto = ToTensorProto(tensor);
      if (!proto.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("calibration array '", name, "' (set ", i,
                                                       "): ", proto.status().message()));
      }
      const std::string file = absl::StrCat(folder, "/set_", i, "_input_", k++, ".pb");
      std::ofstream out(file, std::ios::binary);
      if (!proto->SerializeToOstream(&out) || !out.flush()) {
        return absl::InternalError(absl::StrCat(file, ": cannot write calibration tensor"));
      }
      files[name] = file;
    }
    input_sets.push_back(std::move(files));
  }
  return absl::OkStatus();
}

// The options as the pipeline takes them; an error is an option's ("option", ErrorKind).
absl::StatusOr<converter::PipelineOptions> ToPipelineOptions(const ConversionOptions& o) {
  absl::StatusOr<converter::PipelineOptions> p = api::PipelineOptionsOf(o);
  if (!p.ok()) return api::Tagged(p.status(), "option");
  return p;
}

// An output of the end-to-end comparison as a verdict (converter/output_verdict.h): its checks
// measured as JudgeOutput measures them.
converter::OutputVerdict AsVerdict(const converter::OutputComparison& c) {
  converter::OutputVerdict v;
  v.name = c.name;
  v.stats = c.stats;
  v.criteria = c.criteria;
  v.score = c.score;
  v.meets = c.meets;
  for (const converter::Criterion& criterion : c.criteria) {
    const double measured = converter::CriterionMeasure(criterion, c.stats);
    v.checks.push_back(
        {criterion, measured, measured <= criterion.bound && c.stats.non_finite == 0});
  }
  return v;
}

// The first output that fails its criteria, in one line: "output 'y' fails p99:0.01 (measured
// 0.028)", and what to try. Empty when every output meets them.
std::pair<std::string, std::string> Failure(const converter::ConversionReport& r,
                                            const ConversionReport& s, bool repair) {
  if (r.repair && r.repair->only_fp32) {
    return {
        "only the fp32 model meets the accuracy criteria (every float node kept in fp32 by "
        "the repair): no fp16 model",
        "loosen the criteria (accuracy), or run the model in fp32 (precision fp32)"};
  }
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    const OutputComparison& o = s.outputs[i];
    // An output beyond fp16's range in the original itself is reported, not judged.
    if (o.meets || r.end_to_end->outputs[i].beyond_fp16) continue;
    std::string what;
    if (o.non_finite > 0) {
      what = absl::StrFormat("output '%s' has %d NaN or infinite element(s) the original lacks",
                             o.name, o.non_finite);
    } else {
      for (const CriterionCheck& c : o.checks) {
        if (c.meets) continue;
        what = absl::StrFormat("output '%s' fails %s (measured %.3g)", o.name, c.criterion,
                               c.measured);
        break;
      }
      if (what.empty()) what = absl::StrFormat("output '%s' fails %s", o.name, o.criteria);
    }
    std::string hint = absl::StrCat("keep the nodes that compute '", o.name,
                                    "' in fp32 (option keep_fp32), or loosen its criteria "
                                    "(option accuracy, '",
                                    o.name, "=...')");
    if (!repair) hint = absl::StrCat("let the repair keep nodes in fp32 (option repair), ", hint);
    // The console's way out for a backend that ignores fp32 islands.
    if (r.islands_ignored && !r.fp32_runtime.empty()) {
      hint = absl::StrCat("precision fp32 writes the file for the backend set to compute in fp32 (",
                          r.fp32_runtime, "); or ", hint);
    }
    return {what, hint};
  }
  return {absl::StrFormat(
              "the converted model changes the outputs beyond tolerance (error %.3g, tolerance "
              "%.3g)",
              r.end_to_end ? r.end_to_end->max_error : 0.0, r.end_to_end_tolerance),
          ""};
}

ConversionReport Summarize(const converter::ConversionReport& r, const Model& model, bool repair) {
  ConversionReport s;
  s.target = r.target;
  s.outputs_match = r.outputs_match && !(r.repair && r.repair->only_fp32);
  s.validated = r.validated;
  s.validation_note = r.validation_note;
  s.calibration = r.calibration;
  if (r.end_to_end) {
    s.end_to_end_error = r.end_to_end->max_error;
    for (const converter::OutputComparison& c : r.end_to_end->outputs) {
      s.outputs.push_back(api::FromVerdict(AsVerdict(c)));
    }
  }
  s.tolerance = r.end_to_end_tolerance;
  s.warnings = r.warnings;
  for (const converter::StepReport& step : r.steps) {
    s.steps.push_back({step.name, step.rewrites, step.rolled_back, step.runs, step.why_not});
    s.rewrites += step.rewrites;
  }
  for (const rules::IslandNode& i : r.islands) s.islands.push_back({i.node, i.op_type, i.reason});
  s.fp32_nodes_kept = converter::CountFloatNodes(model).float32;
  if (r.repair) {
    s.repaired_nodes = static_cast<int>(r.repair->kept.size());
    for (const converter::RepairRound& round : r.repair->history) {
      const char* action = round.round == 0  ? "first conversion"
                           : round.give_back ? "give back"
                                             : "add";
      s.repair_rounds.push_back({round.round, action, round.nodes_changed, round.fp32_nodes,
                                 round.fp32_share, round.score, round.error, round.kept});
    }
    for (const converter::RepairedNode& k : r.repair->kept) {
      s.repaired.push_back({k.node, k.op_type, k.round, k.error_before, k.error_after});
    }
  }
  if (!s.outputs_match) std::tie(s.failure, s.suggestion) = Failure(r, s, repair);
  s.written = r.written;
  s.seconds = r.seconds;
  s.json = converter::ReportToJson(r);
  return s;
}

std::string Mismatch(const ConversionReport& s) {
  return s.suggestion.empty() ? s.failure : absl::StrCat(s.failure, "; try: ", s.suggestion);
}

// A message of the pipeline about the calibration sets `input_sets` (scratch files written by
// WriteCalibrationSets) in the API's terms: "--input NAME=FILE" and FILE become "calibration
// array 'NAME' (set N)"; no scratch path or command-line flag reaches the user.
absl::Status WithoutScratchFiles(const absl::Status& status,
                                 const std::vector<converter::InputFiles>& input_sets,
                                 const std::string& scratch) {
  if (status.ok() || scratch.empty()) return status;
  std::string message(status.message());
  for (size_t i = 0; i < input_sets.size(); ++i) {
    for (const auto& [name, file] : input_sets[i]) {
      const std::string array = absl::StrCat("calibration array '", name, "' (set ", i, ")");
      message = absl::StrReplaceAll(message, {{absl::StrCat("--input ", name, "=", file), array}});
      message = absl::StrReplaceAll(message, {{file, array}});
    }
  }
  message = absl::StrReplaceAll(message, {{scratch + "/", ""}, {scratch, "the scratch folder"}});
  return absl::Status(status.code(), message);
}

absl::Status WriteReportFile(const converter::ConversionReport& report, const std::string& path) {
  const std::string text = converter::ReportFileText(report, path);
  absl::Status s = WriteFileAtomically(path, [&](std::ostream& out) {
    out << text;
    return out ? absl::OkStatus() : absl::InternalError("write failed");
  });
  if (!s.ok()) return absl::InternalError(absl::StrCat(path, ": ", s.message()));
  return absl::OkStatus();
}

// Runs the pipeline on `model` and writes `output` (and the report) when it keeps the outputs.
// `in_memory`: `output` is a scratch file the user never sees; the report names no output and
// is written here rather than by the pipeline.
absl::StatusOr<ConversionReport> ConvertAndWrite(Model& model, converter::PipelineOptions& p,
                                                 const ConversionOptions& o,
                                                 const std::string& output,
                                                 api::ScratchFolder& scratch, bool in_memory) {
  if (!o.calibration_sets.empty()) {
    if (!scratch.ok()) return absl::InternalError("cannot make a scratch folder in $TMPDIR");
    if (absl::Status s = WriteCalibrationSets(o.calibration_sets, scratch.path(), p.input_sets);
        !s.ok()) {
      return s;
    }
  }
  p.output_path = output;
  if (in_memory) p.report_path.clear();
  absl::StatusOr<converter::ConversionReport> report = converter::ConvertModel(model, p);
  if (!report.ok()) return WithoutScratchFiles(report.status(), p.input_sets, scratch.path());
  if (in_memory) {
    report->output.clear();
    report->calibration = std::string(
        WithoutScratchFiles(absl::UnknownError(report->calibration), p.input_sets, scratch.path())
            .message());
    report->written = false;
  }
  if ((!report->outputs_match || in_memory) && !o.report_path.empty()) {
    OVFIX_RETURN_IF_ERROR(WriteReportFile(*report, o.report_path));
  }
  ConversionReport summary = Summarize(*report, model, o.repair);
  if (!summary.outputs_match && summary.validation_note.empty()) {
    summary.validation_note = Mismatch(summary);
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
  for (const std::string& file : {output, options.report_path}) {
    const fs::path folder = fs::absolute(file, ec).parent_path();
    if (!file.empty() && !fs::is_directory(folder, ec)) {
      return absl::NotFoundError(absl::StrCat(folder.string(), ": no such folder"));
    }
  }
  absl::StatusOr<converter::PipelineOptions> p = ToPipelineOptions(options);
  if (!p.ok()) return p.status();
  p->input_path = input;
  absl::StatusOr<std::unique_ptr<Model>> model = ovfix::LoadModel(input);
  if (!model.ok()) return api::Tagged(model.status(), "model");
  api::ScratchFolder scratch;
  return ConvertAndWrite(**model, *p, options, output, scratch, /*in_memory=*/false);
}

absl::StatusOr<ConvertedModelProto> ConvertProto(const onnx::ModelProto& model,
                                                 const ConversionOptions& options,
                                                 ConversionReport* report_out) {
  absl::StatusOr<converter::PipelineOptions> p = ToPipelineOptions(options);
  if (!p.ok()) return p.status();
  absl::StatusOr<std::unique_ptr<Model>> ir = api::ModelFromMemory(model);
  if (!ir.ok()) return ir.status();
  // The model goes through the file the command line would write: the same bytes.
  api::ScratchFolder scratch;
  if (!scratch.ok()) return absl::InternalError("cannot make a scratch folder in $TMPDIR");
  const std::string output = scratch.path() + "/converted.onnx";
  absl::StatusOr<ConversionReport> report =
      ConvertAndWrite(**ir, *p, options, output, scratch, /*in_memory=*/true);
  if (!report.ok()) return report.status();
  if (report_out != nullptr) *report_out = *report;
  if (!report->outputs_match) {
    absl::Status failed = absl::FailedPreconditionError(report->validation_note);
    failed.SetPayload(kConversionReportPayload, absl::Cord(report->json));
    return failed;
  }
  ConvertedModelProto result;
  result.report = *std::move(report);
  if (WritesExternalData(**ir, p->save)) {
    absl::StatusOr<onnx::ModelProto> loaded = LoadModelProto(output);
    if (!loaded.ok()) return loaded.status();
    result.model = *std::move(loaded);
  } else {
    std::ifstream in(output, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    if (!in || !result.model.ParseFromString(bytes.str())) {
      return absl::InternalError("cannot read the converted model back");
    }
  }
  return result;
}

// A file error is NotFound where the file named does not exist, whichever layer found it
// (include/ovfix/ovfix.h): `read` (the model) and the rule files and calibration folders the
// options name.
absl::Status WithFileCode(absl::Status status, const ConversionOptions& o,
                          std::vector<std::string> read) {
  if (status.ok() || status.code() == absl::StatusCode::kNotFound) return status;
  read.insert(read.end(), o.rule_files.begin(), o.rule_files.end());
  read.insert(read.end(), o.calibration_data.begin(), o.calibration_data.end());
  for (const std::string& path : read) {
    std::error_code ec;
    if (path.empty() || !absl::StartsWith(status.message(), path + ":") ||
        std::filesystem::exists(path, ec)) {
      continue;
    }
    absl::Status found(absl::StatusCode::kNotFound, status.message());
    status.ForEachPayload(
        [&](absl::string_view url, const absl::Cord& payload) { found.SetPayload(url, payload); });
    return found;
  }
  return status;
}

}  // namespace

namespace api {

converter::UserOptions GivenOptions(const ConversionOptions& o) {
  converter::UserOptions user;
  user.spelling = converter::UserOptions::Spelling::kName;
  for (const rules::OptionSpec& spec : rules::ConversionOptionTable()) {
    if (spec.api_field.empty()) continue;
    std::vector<std::string> texts = MemberTexts(spec, o);
    if (!texts.empty()) user.given[std::string(spec.name)] = std::move(texts);
  }
  return user;
}

absl::StatusOr<converter::PipelineOptions> PipelineOptionsOf(const ConversionOptions& o) {
  converter::PipelineOptions p;
  OVFIX_RETURN_IF_ERROR(converter::TranslateUserOptions(GivenOptions(o), p));
  if (o.log != nullptr) p.log = [sink = o.log](const std::string& line) { sink->Write(line); };
  p.write_output = true;
  p.report_path = o.report_path;
  return p;
}

}  // namespace api

// The public calls, their errors made one line (api::OneLine).
absl::StatusOr<ConversionReport> ConvertFileStatus(const std::string& input,
                                                   const std::string& output,
                                                   const ConversionOptions& options) {
  absl::StatusOr<ConversionReport> report = ConvertModelFile(input, output, options);
  if (!report.ok()) return api::OneLine(WithFileCode(report.status(), options, {input}));
  return report;
}

absl::StatusOr<ConvertedModelProto> Convert(const onnx::ModelProto& model,
                                            const ConversionOptions& options) {
  return Convert(model, options, nullptr);
}

absl::StatusOr<ConvertedModelProto> Convert(const onnx::ModelProto& model,
                                            const ConversionOptions& options,
                                            ConversionReport* report) {
  absl::StatusOr<ConvertedModelProto> result = ConvertProto(model, options, report);
  if (result.ok()) return result;
  return api::OneLine(WithFileCode(result.status(), options, {}));
}

std::optional<std::string> ConversionReportJson(const absl::Status& status) {
  auto json = status.GetPayload(kConversionReportPayload);
  if (!json) return std::nullopt;
  return std::string(*json);
}

}  // namespace ovfix
