#include "bench/ort_peer.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace fs = std::filesystem;

namespace ovfix::bench {

std::string OrtModules() {
  const char* env = std::getenv("OVFIX_ORT_MODULES");
  const std::string modules =
      env != nullptr ? env : std::string(OVFIX_BINARY_DIR) + "/ort/node_modules";
  if (fs::exists(modules + "/onnxruntime-node")) return modules;
  std::printf(
      "\nonnxruntime-node not found in %s: install it with\n  npm install --prefix "
      "%s/ort --ignore-scripts onnxruntime-node@1.30.0\n",
      modules.c_str(), OVFIX_BINARY_DIR);
  return "";
}

namespace {

double NumberAfter(const char* line, const char* key) {
  const char* at = std::strstr(line, key);
  return at != nullptr ? std::atof(at + std::strlen(key)) : -1;
}

}  // namespace

OrtTiming RunOrt(const std::string& modules, const std::string& model,
                 const std::vector<std::string>& input_files, int threads, int repeat,
                 const std::string& outputs_dir) {
  const std::string script = std::string(OVFIX_SHARED_DIR) + "/tools/ort/run.js";
  const fs::path scratch =
      fs::temp_directory_path() / ("ovfix_bench_ort_" + std::to_string(::getpid()));
  const std::string out = outputs_dir.empty() ? scratch.string() : outputs_dir;
  fs::create_directories(out);
  std::string command =
      "NODE_PATH='" + modules + "' node '" + script + "' '" + model + "' '" + out + "'";
  for (const auto& f : input_files) command += " '" + f + "'";
  command += " --repeat " + std::to_string(repeat) + " --threads " + std::to_string(threads);
  command += " 2>/dev/null";
  OrtTiming timing;
  if (FILE* p = ::popen(command.c_str(), "r"); p != nullptr) {
    char line[4096];
    while (std::fgets(line, sizeof(line), p) != nullptr) {
      if (std::strstr(line, "\"run_ms_min\":") == nullptr) continue;
      timing.min_ms = NumberAfter(line, "\"run_ms_min\":");
      timing.median_ms = NumberAfter(line, "\"run_ms_median\":");
    }
    ::pclose(p);
  }
  if (outputs_dir.empty()) fs::remove_all(scratch);
  return timing;
}

}  // namespace ovfix::bench
