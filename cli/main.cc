// ovfix: rewrites ONNX models so they run correctly on GPU and fp16 backends.
#include <malloc.h>

#include <cctype>
#include <cstdio>
#include <exception>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/interrupt.h"
#include "rules/closest_name.h"

namespace {

// What exit code 1 means for each command (the others: 0 success, 2 bad input or usage).
const std::map<std::string, std::string>& MismatchMeaning() {
  static const std::map<std::string, std::string> kMeaning = {
      {"run", "an output fails its accuracy criteria against --test-data's output_K.pb"},
      {"convert",
       "the converted model changes the outputs beyond the accuracy criteria: the model (and "
       "its external data) is not written, the --report file is (it says why)"},
      {"compare",
       "a final output fails its accuracy criteria (or, with --rtol/--atol, a value diverges "
       "beyond them)"},
  };
  return kMeaning;
}

std::string ExitCodes(const std::string& command) {
  auto it = MismatchMeaning().find(command);
  return absl::StrCat("Exit codes: 0 success", it == MismatchMeaning().end() ? "" : ", 1 ",
                      it == MismatchMeaning().end() ? "" : it->second,
                      ", 2 bad input or usage (one line on stderr naming the file and the "
                      "problem; no output written), 130 interrupted by Ctrl-C (143 SIGTERM, 129 "
                      "SIGHUP; one line on stderr says what was written, no temporary file is "
                      "left)");
}

bool IsOptionLike(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' &&
         (std::isalpha(static_cast<unsigned char>(arg[1])) || (arg[1] == '-' && arg.size() > 2));
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// The command named on the command line ("convert", "rules check"), followed down from the
// app: the first word that is not an option at each level. An unknown word where a command
// is required is `unknown`.
struct CommandPath {
  CLI::App* app;
  std::string name;  // "ovfix convert"
  std::string unknown;
  std::vector<std::string> known;  // the commands the unknown word was not
};

CommandPath FindCommand(CLI::App& root, const std::vector<std::string>& args) {
  CommandPath path{&root, "ovfix", "", {}};
  for (const std::string& arg : args) {
    if (IsOptionLike(arg) || arg == "-") continue;
    std::vector<std::string> names = SubcommandNames(*path.app);
    if (names.empty()) break;
    CLI::App* sub = nullptr;
    for (CLI::App* a : path.app->get_subcommands([](CLI::App*) { return true; })) {
      if (a->check_name(arg)) sub = a;
    }
    if (sub == nullptr) {
      if (path.app->get_require_subcommand_min() > 0) {
        path.unknown = arg;
        path.known = names;
      }
      break;
    }
    path.app = sub;
    path.name += " " + arg;
  }
  return path;
}

// The first option on the command line that `app` (and its parents) do not know.
std::string UnknownOption(const CLI::App& app, const std::vector<std::string>& args,
                          std::vector<std::string>& known) {
  std::vector<const CLI::App*> chain;
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent()) chain.push_back(a);
  for (const CLI::App* a : chain) {
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& n : o->get_lnames()) known.push_back("--" + n);
    }
  }
  for (const std::string& arg : args) {
    if (!absl::StartsWith(arg, "--") || arg == "--") continue;
    const std::string name = arg.substr(0, arg.find('='));
    bool found = false;
    for (const CLI::App* a : chain) found = found || a->get_option_no_throw(name) != nullptr;
    if (!found) return name;
  }
  return "";
}

int Usage(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "%s\n",
               ovfix::cli::BadInputLine(
                   "", absl::StrCat(command, ": ", message, " (see '", command, " --help')"), {})
                   .c_str());
  return ovfix::cli::kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  // glibc raises its mmap threshold each time a large block is freed, after which blocks of
  // weights and activations come from arenas that keep their pages: a conversion of a large
  // model then held hundreds of MB it had freed. A fixed threshold returns them at free.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  // A fixed mmap threshold also freezes the trim threshold at its 128 KB default, so every
  // free at the top of the heap gave pages back that the next allocation faulted in again:
  // on a 200k-node graph that churn took more than half of a conversion.
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
  CLI::App app{"ovfix: rewrite ONNX models so they run correctly on GPU and fp16 backends"};
  app.name("ovfix");
  app.set_version_flag("--version", std::string("ovfix ") + OVFIX_VERSION);
  app.require_subcommand(1);
  std::vector<ovfix::cli::Command> commands = {
      ovfix::cli::AddInspectCommand(app), ovfix::cli::AddRunCommand(app),
      ovfix::cli::AddConvertCommand(app), ovfix::cli::AddExplainCommand(app),
      ovfix::cli::AddRulesCommand(app),   ovfix::cli::AddCompareCommand(app),
      ovfix::cli::AddDevicesCommand(app),
  };
  for (const auto& c : commands) {
    c.app->footer(ExitCodes(c.app->get_name()));
    for (CLI::App* sub : c.app->get_subcommands([](CLI::App*) { return true; })) {
      sub->footer(ExitCodes(c.app->get_name()));
    }
  }
  app.footer(
      "Exit codes: 0 success, 1 the outputs changed (convert, run --test-data) or diverge "
      "(compare), 2 bad input or usage. 'ovfix help COMMAND' or 'ovfix COMMAND --help' shows "
      "a command's options.");
  auto* help = app.add_subcommand("help", "Show the commands, or a command's options");
  std::vector<std::string> help_topic;
  help->add_option("command", help_topic, "A command (e.g. convert, or rules check)");
  help->footer(ExitCodes("help"));

  const std::vector<std::string> args(argv + 1, argv + argc);
  // A misspelt command would otherwise read as "a subcommand is required".
  if (CommandPath path = FindCommand(app, args); !path.unknown.empty()) {
    return Usage(path.name, absl::StrCat("unknown command '", path.unknown, "'",
                                         ovfix::rules::DidYouMean(path.unknown, path.known),
                                         "; commands: ", absl::StrJoin(path.known, ", ")));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const CommandPath path = FindCommand(app, args);
    std::vector<std::string> known;
    if (const std::string option = UnknownOption(*path.app, args, known); !option.empty()) {
      return Usage(path.name, absl::StrCat("unknown option '", option, "'",
                                           ovfix::rules::DidYouMean(option, known)));
    }
    return Usage(path.name, e.what());
  }
  if (help->parsed()) {
    // `ovfix help CMD` is `ovfix CMD --help`.
    CommandPath path = FindCommand(app, help_topic);
    if (!path.unknown.empty()) {
      return Usage("ovfix help", absl::StrCat("unknown command '", path.unknown, "'",
                                              ovfix::rules::DidYouMean(path.unknown, path.known),
                                              "; commands: ", absl::StrJoin(path.known, ", ")));
    }
    if (path.app != &app) {
      const std::string prefix = path.name.substr(0, path.name.rfind(' '));
      std::printf("%s", path.app->help(prefix).c_str());
      return ovfix::cli::kExitOk;
    }
    // app.help() would describe the parsed subcommand ("help" itself): format the app's.
    std::printf("%s",
                app.get_formatter()->make_help(&app, "ovfix", CLI::AppFormatMode::Normal).c_str());
    return ovfix::cli::kExitOk;
  }
  for (auto& c : commands) {
    if (!c.app->parsed()) continue;
    ovfix::cli::HandleInterrupts(c.app->get_name());
    // Sizes are checked before allocation and errors are statuses; this is the last resort
    // that keeps an error no check foresaw to the promised one line and exit code.
    try {
      return c.run();
    } catch (const std::bad_alloc&) {
      return ovfix::cli::BadInput(c.app->get_name(), "out of memory", c.files());
    } catch (const std::exception& e) {
      return ovfix::cli::BadInput(
          c.app->get_name(),
          absl::StrCat("unexpected error (a bug in ovfix, please report it): ", e.what()),
          c.files());
    }
  }
  return ovfix::cli::kExitBadInput;
}
