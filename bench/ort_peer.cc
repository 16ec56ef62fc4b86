#include "bench/ort_peer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

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

namespace {

// The next line the child printed (without its newline); false at its end.
bool ReadLine(FILE* from, std::string* line) {
  char* text = nullptr;
  size_t capacity = 0;
  const ssize_t n = ::getline(&text, &capacity, from);
  if (n >= 0) line->assign(text, n > 0 && text[n - 1] == '\n' ? n - 1 : n);
  std::free(text);
  return n >= 0;
}

}  // namespace

OrtServer::OrtServer(const std::string& modules, const std::string& model,
                     const std::vector<RawInput>& inputs, int threads) {
  scratch_ = fs::temp_directory_path() / ("ovfix_bench_ort_serve_" + std::to_string(::getpid()));
  fs::create_directories(scratch_);
  std::vector<std::string> args = {"node", std::string(OVFIX_SOURCE_DIR) + "/bench/ort_serve.js",
                                   model, std::to_string(threads)};
  for (size_t k = 0; k < inputs.size(); ++k) {
    const RawInput& in = inputs[k];
    const fs::path file = scratch_ / ("input_" + std::to_string(k) + ".bin");
    std::ofstream(file, std::ios::binary)
        .write(static_cast<const char*>(in.data), static_cast<std::streamsize>(in.bytes));
    std::string dims;
    for (size_t d = 0; d < in.dims.size(); ++d) {
      dims += (d == 0 ? "" : ",") + std::to_string(in.dims[d]);
    }
    args.push_back(in.name + "=" + std::to_string(in.onnx_type) + ":" + dims + ":" + file.string());
  }
  int to_child[2], from_child[2];
  if (::pipe(to_child) != 0) return;
  if (::pipe(from_child) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return;
  }
  child_ = ::fork();
  if (child_ == 0) {
    ::dup2(to_child[0], STDIN_FILENO);
    ::dup2(from_child[1], STDOUT_FILENO);
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) ::close(fd);
    ::setenv("NODE_PATH", modules.c_str(), 1);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp("node", argv.data());
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (child_ < 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    return;
  }
  to_child_ = ::fdopen(to_child[1], "w");
  from_child_ = ::fdopen(from_child[0], "r");
  std::string line;
  ready_ = ReadLine(from_child_, &line) && line.find("\"ready\":true") != std::string::npos;
}

OrtServer::~OrtServer() {
  if (to_child_ != nullptr) std::fclose(to_child_);  // its stdin ends: the child exits
  if (from_child_ != nullptr) std::fclose(from_child_);
  if (child_ > 0) ::waitpid(child_, nullptr, 0);
  std::error_code ignored;
  fs::remove_all(scratch_, ignored);
}

std::vector<double> OrtServer::Time(int runs) {
  std::vector<double> ms;
  if (!ready_) return ms;
  std::fprintf(to_child_, "%d\n", runs);
  std::fflush(to_child_);
  std::string line;
  const size_t open = ReadLine(from_child_, &line) ? line.find("\"ms\":[") : std::string::npos;
  if (open == std::string::npos) {
    ready_ = false;
    return ms;
  }
  const char* p = line.c_str() + open + 6;
  while (*p != ']' && *p != '\0') {
    char* end = nullptr;
    ms.push_back(std::strtod(p, &end));
    if (end == p) break;
    p = *end == ',' ? end + 1 : end;
  }
  if (static_cast<int>(ms.size()) != runs) {
    ready_ = false;
    ms.clear();
  }
  return ms;
}

}  // namespace ovfix::bench
