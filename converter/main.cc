// ovfix: rewrites ONNX models so they run correctly on GPU and fp16 backends.
#include <malloc.h>

#include <cstdio>
#include <exception>
#include <new>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "converter/command.h"

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
  auto* help = app.add_subcommand("help", "Show the commands and their options");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s\n",
                 ovfix::converter::BadInputLine(
                     "", absl::StrCat("ovfix: ", e.what(), " (see 'ovfix help')"), {})
                     .c_str());
    return ovfix::cli::kExitBadInput;
  }
  if (help->parsed()) {
    // app.help() would describe the parsed subcommand ("help" itself): format the app's.
    std::printf("%s",
                app.get_formatter()->make_help(&app, "ovfix", CLI::AppFormatMode::Normal).c_str());
    return ovfix::cli::kExitOk;
  }
  for (auto& c : commands) {
    if (!c.app->parsed()) continue;
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
