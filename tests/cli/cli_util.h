// Runs the ovfix binary and captures its exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ovfix::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `args` is appended to the binary's path as is (quote paths with spaces yourself). With a
// timeout, a command still running after that many seconds is killed (exit code 124).
inline CommandResult RunOvfix(const std::string& args, int timeout_seconds = 0) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto out = dir / ("ovfix_cli_out_" + std::to_string(::getpid()));
  const auto err = dir / ("ovfix_cli_err_" + std::to_string(::getpid()));
  const std::string timeout =
      timeout_seconds > 0 ? "timeout -k 5 " + std::to_string(timeout_seconds) + " " : "";
  const std::string command = timeout + std::string(OVFIX_BINARY) + " " + args + " >" +
                              out.string() + " 2>" + err.string() + " </dev/null";
  const int status = std::system(command.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = Slurp(out);
  r.err = Slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace ovfix::testing
