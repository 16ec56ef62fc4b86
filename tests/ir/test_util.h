// Helpers shared by the IR tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace ovfix::testing {

inline std::string SharedDir() { return OVFIX_SHARED_DIR; }

// Every model.onnx under ../shared/models and ../shared/onnx-node-tests.
inline std::vector<std::string> AllSharedModels() {
  std::vector<std::string> out;
  for (const char* sub : {"/models", "/onnx-node-tests"}) {
    const std::filesystem::path root = SharedDir() + sub;
    if (!std::filesystem::exists(root)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(root)) {
      const auto model = entry.path() / "model.onnx";
      if (std::filesystem::exists(model)) out.push_back(model.string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline bool ReadProto(const std::string& path, google::protobuf::Message& message) {
  std::ifstream in(path, std::ios::binary);
  return in && message.ParseFromIstream(&in);
}

// A fresh empty folder under the system temp dir.
inline std::filesystem::path TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("ovfix_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace ovfix::testing
