// The native passes, in one explicit list (registry.cc). Their names are the names used in
// target files and by --disable.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rules/pass.h"

namespace ovfix::rules {

struct NativePassInfo {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<Pass>()> make;
  // The options the pass reads, as target files spell them, with the command line's flag:
  // "batch (--batch N)".
  std::vector<std::string> options = {};
};

// Every native pass, in the order of the list.
const std::vector<NativePassInfo>& NativePasses();
// A new instance of the named pass, or nullptr when there is none.
std::unique_ptr<Pass> MakeNativePass(std::string_view name);

}  // namespace ovfix::rules
