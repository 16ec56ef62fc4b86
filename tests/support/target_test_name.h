// The name of a test instantiated per conversion target: gtest allows only letters, digits and
// '_' in names, so "gpu-fp16" runs as .../gpu_fp16.
#pragma once

#include <algorithm>
#include <string>

#include "gtest/gtest.h"

namespace ovfix::test_support {

inline std::string TargetTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

}  // namespace ovfix::test_support
