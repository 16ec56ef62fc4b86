// One subcommand of the ovfix CLI: it registers its options on the app and returns the
// function that runs it when chosen. Exit codes: 0 ok, 1 validation found changed outputs,
// 2 bad input or usage.
#pragma once

#include <functional>

#include "CLI/CLI.hpp"

namespace ovfix::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitMismatch = 1;
inline constexpr int kExitBadInput = 2;

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command AddInspectCommand(CLI::App& app);
Command AddRunCommand(CLI::App& app);
Command AddConvertCommand(CLI::App& app);
Command AddExplainCommand(CLI::App& app);
Command AddRulesCommand(CLI::App& app);
Command AddCompareCommand(CLI::App& app);
Command AddDevicesCommand(CLI::App& app);

}  // namespace ovfix::cli
