// The files of rules/builtin/*.rules and rules/targets/*.target, compiled into the binary
// (rules/CMakeLists.txt embeds them, embedded_files.cc indexes them), so ovfix needs no source
// tree at run time.
#pragma once

#include <span>
#include <string_view>

namespace ovfix::rules {

struct EmbeddedFile {
  std::string_view path;  // relative to rules/: "builtin/cast_cleanup.rules", "targets/x.target"
  std::string_view contents;
};

// Sorted by path.
std::span<const EmbeddedFile> EmbeddedFiles();
// nullptr when there is no such file.
const EmbeddedFile* FindEmbeddedFile(std::string_view path);

}  // namespace ovfix::rules
