// `ovfix convert IN OUT [--target NAME] ...`: load, run the target's rewrite pipeline with
// validated rewrites, and save. The command owns what every output needs: refusing to
// overwrite the input, checking every output path before the first model run, writing only
// when the conversion kept the outputs (exit 1 when it did not), the model and its report
// written together (both or neither), atomic writes, external data.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/command_files.h"
#include "cli/conversion_flags.h"
#include "cli/convert_summary.h"
#include "cli/interrupt.h"
#include "cli/model_stats.h"
#include "cli/save_progress.h"
#include "converter/conversion_plan.h"
#include "converter/pipeline.h"
#include "converter/report_html.h"
#include "ir/atomic_file.h"
#include "ir/model_io.h"

namespace ovfix::cli {
namespace {

// What `convert` takes beyond the conversion options (the output and how it is written);
// not rules::ConvertOptions, which the passes read.
struct ConvertCommandOptions {
  ConversionFlags flags;
  std::string output;
  bool external_data = false;  // with external_option: --external-data or --no-external-data
  std::string external_location;
  bool in_place = false;
  std::string report;
  bool quiet = false;
  bool plan_only = false;  // --plan
  CLI::Option* external_option = nullptr;
};

int Fail(const std::string& message) { return BadInput("convert", message); }

// The files a conversion reads or writes: its errors name one of them, the model when they
// name none (cli/bad_input.h).
std::vector<std::string> Files(const ConvertCommandOptions& o) {
  std::vector<std::string> files = {o.flags.input, o.output, o.report};
  for (const std::string& f : FlagFiles(o.flags)) files.push_back(f);
  return files;
}

// Every file the conversion reads and writes: nothing is written when an output would
// replace an input or another output (the input model and its data only with --in-place),
// or cannot be written at all (a missing folder): checked before the first model run.
absl::Status CheckFiles(const ConvertCommandOptions& o, const Model& model,
                        const SaveOptions& save) {
  namespace fs = std::filesystem;
  const ConversionFlags& f = o.flags;
  if (!o.in_place && SameFile(f.input, o.output)) {
    return absl::InvalidArgumentError(
        o.output + ": output is the input model; pass --in-place to overwrite it");
  }
  converter::CommandFiles files;
  files.ReadModel(f.input, model, "the input model");
  for (const std::string& r : f.rule_files) files.Read(r, "--rules");
  if (fs::exists(f.target)) files.Read(f.target, "--target");
  for (const std::string& text : f.inputs) {
    std::string name, file;
    if (SplitAssignment(text, name, file)) files.Read(file, "--input " + name);
  }
  for (const std::string& dir : f.calibration_data) files.ReadTestData(dir, "--calibration-data");
  const std::string model_what = "the output model";
  if (o.in_place) {
    files.WriteInPlace(o.output, model_what, {f.input});
  } else {
    files.Write(o.output, model_what);
  }
  if (save.external_data != ExternalDataMode::kNever) {
    absl::StatusOr<std::string> data = ExternalDataFile(o.output, save);
    if (!data.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(o.output, ": ", data.status().message()));
    }
    const std::string what =
        o.external_location.empty() ? "the external data file" : "--external-data-name";
    if (o.in_place) {
      files.WriteInPlace(*data, what, model.external_data_files());
    } else {
      files.Write(*data, what);
    }
  }
  if (!o.report.empty()) files.Write(o.report, "--report");
  return files.Check();
}

int RunConvert(ConvertCommandOptions& o) {
  namespace fs = std::filesystem;
  const ConversionFlags& f = o.flags;
  if (fs::is_directory(o.output)) return Fail(o.output + ": is a folder, not a file name");
  if (o.external_option->count() > 0 && !o.external_data && !o.external_location.empty()) {
    return Fail("--external-data-name names a data file that --no-external-data refuses");
  }

  converter::PipelineOptions p;
  if (absl::Status s = ToPipelineOptions(f, p); !s.ok()) return Fail(std::string(s.message()));
  p.output_path = o.output;
  p.progress = !o.quiet;
  p.write_output = true;
  p.report_path = o.report;
  if (o.external_option->count() > 0) {
    p.save.external_data = o.external_data ? ExternalDataMode::kAlways : ExternalDataMode::kNever;
  } else if (!o.external_location.empty()) {
    p.save.external_data = ExternalDataMode::kAlways;
  }
  p.save.external_location = o.external_location;
  SaveProgress progress(o.quiet ? nullptr : stderr, "writing " + o.output);
  p.save.progress = [&progress](uint64_t done, uint64_t total) { progress.Update(done, total); };

  // What an interrupt's line says was written, or not (the data file once the model says).
  WatchOutputs({o.output, o.report});
  const auto load_start = std::chrono::steady_clock::now();
  auto model = LoadModel(f.input);
  if (!model.ok()) return BadInput("convert", model.status().message(), Files(o));
  if (absl::Status s = CheckFiles(o, **model, p.save); !s.ok()) {
    return BadInput("convert", s.message(), Files(o));
  }
  absl::StatusOr<std::string> data_file = ExternalDataFile(o.output, p.save);
  WatchOutputs({o.output, data_file.ok() && WritesExternalData(**model, p.save) ? *data_file : "",
                o.report});
  // What will run, decided once: printed (--plan, --verbose), its warnings said before the
  // first model run, then executed.
  absl::StatusOr<converter::ConversionPlan> plan = converter::PlanConversion(p, model->get());
  if (!plan.ok()) return BadInput("convert", plan.status().message(), Files(o));
  if (o.plan_only) {
    std::printf("%s", converter::PlanText(*plan).c_str());
    return kExitOk;
  }
  if (f.verbose) std::fprintf(stderr, "%s", converter::PlanText(*plan).c_str());
  for (const std::string& w : plan->warnings) {
    if (!o.quiet) std::fprintf(stderr, "ovfix convert: warning: %s\n", w.c_str());
  }
  ConvertSummaryFacts facts;
  facts.before = converter::MeasureModel(**model);
  facts.before.file_bytes = converter::FileBytes(f.input, (*model)->external_data_files());
  // The load and the checks before the conversion, in its time line.
  p.load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  absl::StatusOr<converter::ConversionReport> report = converter::ConvertModel(**model, p, *plan);
  if (!report.ok()) return BadInput("convert", report.status().message(), Files(o));
  if (!report->outputs_match && !o.report.empty()) {
    // Nothing was written: the report alone says why (exit 1).
    const std::string json = converter::ReportFileText(*report, o.report);
    absl::Status s = WriteFileAtomically(o.report, [&](std::ostream& out) {
      out << json;
      return out ? absl::OkStatus() : absl::InternalError("write failed");
    });
    if (!s.ok()) return Fail(absl::StrCat(o.report, ": ", s.message()));
  }
  if (!o.quiet) {
    facts.after = converter::MeasureModel(**model);
    if (report->written) {
      absl::StatusOr<std::string> data = ExternalDataFile(o.output, p.save);
      std::vector<std::string> data_files;
      if (data.ok() && fs::exists(*data) && WritesExternalData(**model, p.save)) {
        data_files.push_back(*data);
      }
      facts.after.file_bytes = converter::FileBytes(o.output, data_files);
    }
    facts.precision = converter::CountFloatNodes(**model);
    facts.fp16 = plan->ReducesPrecision();
    facts.verbose = f.verbose;
    if (f.verbose) std::printf("%s", converter::SummaryTable(*report).c_str());
    std::printf("%s", ConvertSummary(*report, facts).c_str());
  }
  if (report->repair && report->repair->only_fp32) {
    std::fprintf(stderr,
                 "ovfix convert: only the fp32 model meets the accuracy criterion (every float "
                 "node kept in fp32 by the repair): no fp16 model to write; %s was not written\n",
                 o.output.c_str());
    return kExitMismatch;
  }
  if (!report->outputs_match) {
    std::fprintf(stderr,
                 "ovfix convert: the converted model's outputs do not meet the accuracy criteria "
                 "(see above); %s was not written\n",
                 o.output.c_str());
    return kExitMismatch;
  }
  std::printf("wrote %s (target %s)\n", o.output.c_str(), f.target.c_str());
  return kExitOk;
}

}  // namespace

Command AddConvertCommand(CLI::App& app) {
  auto o = std::make_shared<ConvertCommandOptions>();
  auto* sub = app.add_subcommand("convert", "Rewrite a model for a target and save it");
  sub->add_option("input", o->flags.input, "The .onnx model to read")->required();
  sub->add_option("output", o->output, "Where to write the result")->required();
  AddConversionFlags(sub, o->flags);
  sub->add_option("--report", o->report,
                  "Write a report: FILE.html a page (outputs, fp32 cost, repair rounds), else JSON "
                  "of every rewrite and fp32 island (written with the model, or alone when the "
                  "outputs changed)");
  sub->add_flag("--quiet,-q", o->quiet, "Print only the result line and errors");
  sub->add_flag("--plan", o->plan_only,
                "Print what the conversion would run (the options in effect, each step and "
                "whether it runs, the phases) and exit without converting");
  o->external_option = sub->add_flag(
      "--external-data,!--no-external-data", o->external_data,
      "Write weights to a data file beside the model, or (--no-external-data) all inline. "
      "Default: as the input model has them, and a data file over 2 GB");
  sub->add_option("--external-data-name", o->external_location,
                  "File name of the external data, in the output's folder (default: "
                  "OUTPUT_NAME.data); implies --external-data");
  sub->add_flag("--in-place", o->in_place, "Allow the output to overwrite the input");
  return {sub, [o] { return RunConvert(*o); }, [o] { return Files(*o); }};
}

}  // namespace ovfix::cli
