// `ovfix convert IN OUT`: load, rewrite, save. The rewrite pipeline (targets, rules) plugs in
// here; the command owns what every output needs: refusing to overwrite the input, atomic
// writes, external data.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "converter/command.h"
#include "ir/atomic_file.h"
#include "ir/model_io.h"

namespace ovfix::cli {
namespace {

struct ConvertOptions {
  std::string input;
  std::string output;
  bool external_data = false;
  std::string external_location;
  bool in_place = false;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "ovfix convert: %s\n", message.c_str());
  return kExitBadInput;
}

int RunConvert(const ConvertOptions& o) {
  namespace fs = std::filesystem;
  if (!o.in_place && (o.input == o.output || SameFile(o.input, o.output))) {
    return Fail(o.output + ": output is the input model; pass --in-place to overwrite it");
  }
  if (fs::is_directory(o.output)) return Fail(o.output + ": is a folder, not a file name");
  auto model = LoadModel(o.input);
  if (!model.ok()) return Fail(std::string(model.status().message()));
  SaveOptions save;
  if (o.external_data) save.external_data = ExternalDataMode::kAlways;
  save.external_location = o.external_location;
  if (auto s = SaveModel(**model, o.output, save); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  std::printf("wrote %s\n", o.output.c_str());
  return kExitOk;
}

}  // namespace

Command AddConvertCommand(CLI::App& app) {
  auto options = std::make_shared<ConvertOptions>();
  auto* sub = app.add_subcommand("convert", "Rewrite a model for a target and save it");
  sub->add_option("input", options->input, "The .onnx model to read")->required();
  sub->add_option("output", options->output, "Where to write the result")->required();
  sub->add_flag("--external-data", options->external_data,
                "Write weights to a data file beside the model (automatic over 2 GB)");
  sub->add_option("--external-data-name", options->external_location,
                  "File name of the external data (default: OUTPUT_NAME.data)");
  sub->add_flag("--in-place", options->in_place, "Allow the output to overwrite the input");
  return {sub, [options] { return RunConvert(*options); }};
}

}  // namespace ovfix::cli
