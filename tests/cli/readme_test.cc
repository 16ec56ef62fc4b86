// The README's "Use" section, walked as a newcomer would: every command line of its shell
// blocks is run from the source folder, exactly as printed and with nothing prepared (the
// folder the examples write to is removed first: the README's own `mkdir` makes it), and must
// exit as the README says (0 unless a `#> exit N` line follows); a `build/ovfix ...` line must
// also print every line the README shows after it (`#> TEXT`: TEXT appears in its output).
// Commands on ../shared are skipped where the shared models are missing, OpenCL ones where
// there is no OpenCL device.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;

struct Example {
  std::string command;  // after "build/ovfix ", or the whole line when `shell`
  bool shell = false;   // a line other than build/ovfix (mkdir ...), run by sh
  int line = 0;
  int exit_code = 0;
  std::vector<std::string> shows;
};

// The examples of the README's "## Use" section.
std::vector<Example> UseExamples(const std::string& readme) {
  std::vector<Example> out;
  bool in_use = false, in_block = false;
  std::string pending;  // a command continued with '\'
  int line_number = 0;
  for (absl::string_view raw : absl::StrSplit(readme, '\n')) {
    ++line_number;
    std::string line(absl::StripTrailingAsciiWhitespace(raw));
    if (absl::StartsWith(line, "## ")) in_use = line == "## Use";
    if (!in_use) continue;
    if (absl::StartsWith(line, "```")) {
      in_block = !in_block && line != "```";
      continue;
    }
    if (!in_block) continue;
    if (!pending.empty()) {
      pending += " " + std::string(absl::StripAsciiWhitespace(line));
    } else if (absl::StartsWith(line, "build/ovfix ") || line == "build/ovfix") {
      pending = line;
      out.push_back({"", false, line_number, 0, {}});
    } else if (!line.empty() && !absl::StartsWith(line, "#")) {
      out.push_back({line, true, line_number, 0, {}});
      continue;
    } else if (absl::StartsWith(line, "#> ") && !out.empty()) {
      absl::string_view shown = absl::string_view(line).substr(3);
      int code;
      if (absl::ConsumePrefix(&shown, "exit ") && absl::SimpleAtoi(shown, &code)) {
        out.back().exit_code = code;
      } else {
        out.back().shows.push_back(line.substr(3));
      }
      continue;
    } else {
      continue;
    }
    if (absl::EndsWith(pending, "\\")) {
      pending.pop_back();
      continue;
    }
    // A comment after the command ("  # what it does") is not part of it.
    if (size_t hash = pending.find("  #"); hash != std::string::npos) pending.resize(hash);
    pending = std::string(absl::StripAsciiWhitespace(pending));
    out.back().command = pending.substr(std::string("build/ovfix").size());
    pending.clear();
  }
  return out;
}

TEST(Readme, UseExamplesRunAsShown) {
  const std::string readme = testing::Slurp(fs::path(OVFIX_SOURCE_DIR) / "README.md");
  const std::vector<Example> examples = UseExamples(readme);
  ASSERT_GE(examples.size(), 10u) << "the README's Use section lost its examples";
  const fs::path previous = fs::current_path();
  fs::current_path(OVFIX_SOURCE_DIR);
  fs::remove_all("/tmp/ovfix-readme");
  const bool shared = fs::exists("../shared/models");
  const bool opencl =
      testing::RunOvfix("devices --json").out.find("\"index\":") != std::string::npos;
  for (const Example& e : examples) {
    SCOPED_TRACE("README.md:" + std::to_string(e.line) + ": " +
                 (e.shell ? e.command : "build/ovfix" + e.command));
    if (e.shell) {
      EXPECT_EQ(std::system(e.command.c_str()), 0);
      continue;
    }
    if (!shared && absl::StrContains(e.command, "../shared/")) continue;
    if (!opencl && absl::StrContains(e.command, "opencl")) continue;
    const testing::CommandResult r = testing::RunOvfix(e.command, 300);
    EXPECT_EQ(r.exit_code, e.exit_code) << r.out << r.err;
    for (const std::string& shown : e.shows) {
      EXPECT_TRUE(absl::StrContains(r.out, shown) || absl::StrContains(r.err, shown))
          << "does not print: " << shown << "\n"
          << r.out << r.err;
    }
  }
  fs::remove_all("/tmp/ovfix-readme");
  fs::current_path(previous);
}

}  // namespace
}  // namespace ovfix
