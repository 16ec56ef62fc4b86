// The files of rules/builtin/*.rules and rules/targets/*.target, compiled into the binary
// (rules/CMakeLists.txt embeds them, embedded_files.cc indexes them), so ovfix needs no source
// tree at run time.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ovfix::rules {

struct EmbeddedFile {
  std::string_view path;  // relative to rules/: "builtin/cast_cleanup.rules", "targets/x.target"
  std::string_view contents;
};

// Sorted by path.
std::span<const EmbeddedFile> EmbeddedFiles();
// nullptr when there is no such file.
const EmbeddedFile* FindEmbeddedFile(std::string_view path);

// The built-in targets' names (targets/NAME.target), sorted: the one list of them, which
// converter::BuiltinTargets, --target's help and through them explain, `rules list`, the API's
// option list and the fuzzer read, so that a new target is its file alone.
std::vector<std::string> BuiltinTargetNames();

}  // namespace ovfix::rules
