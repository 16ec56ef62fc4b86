// One subcommand of the ovfix CLI: it registers its options on the app and returns the
// function that runs it when chosen. Exit codes: 0 ok, 1 validation found changed outputs,
// 2 bad input or usage.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/bad_input.h"

namespace ovfix::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitMismatch = 1;
inline constexpr int kExitBadInput = 2;

struct Command {
  CLI::App* app;
  std::function<int()> run;
  // The files the command was given, the one its errors are about first (for main's last
  // resort: an error no check foresaw).
  std::function<std::vector<std::string>()> files = [] { return std::vector<std::string>{}; };
};

// Prints the command's one line for bad input or usage (cli/bad_input.h) on stderr and
// returns kExitBadInput.
inline int BadInput(absl::string_view command, absl::string_view message,
                    const std::vector<std::string>& files = {}) {
  std::fprintf(stderr, "%s\n", BadInputLine(command, message, files).c_str());
  return kExitBadInput;
}

Command AddInspectCommand(CLI::App& app);
Command AddRunCommand(CLI::App& app);
Command AddConvertCommand(CLI::App& app);
Command AddExplainCommand(CLI::App& app);
Command AddRulesCommand(CLI::App& app);
Command AddCompareCommand(CLI::App& app);
Command AddDevicesCommand(CLI::App& app);

}  // namespace ovfix::cli
