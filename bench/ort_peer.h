// onnxruntime as the executor benchmarks' peer: ../shared/tools/ort/run.js in a child process
// (onnxruntime-node, installed once under build/ort or where OVFIX_ORT_MODULES points).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace ovfix::bench {

// The node_modules folder holding onnxruntime-node; empty when it is not installed (after
// printing how to install it).
std::string OrtModules();

struct OrtTiming {
  double min_ms = -1;  // fastest of the timed runs (after one untimed run)
  double median_ms = -1;
};

// Times `repeat` runs of the model on `threads` intra-op threads (graph optimizations at
// their default, all). When `outputs_dir` is not empty the outputs are written there as
// output_K.pb. min_ms < 0 when the run failed.
OrtTiming RunOrt(const std::string& modules, const std::string& model,
                 const std::vector<std::string>& input_files, int threads, int repeat,
                 const std::string& outputs_dir = "");

// One graph input for OrtServer: its name, onnx data type number, dimensions and bytes.
struct RawInput {
  std::string name;
  int onnx_type = 0;
  std::vector<int64_t> dims;
  const void* data = nullptr;
  size_t bytes = 0;
};

// onnxruntime with one model loaded, in a child process kept for the server's lifetime
// (bench/ort_serve.js; graph optimizations at their default, all, `threads` intra-op
// threads): a benchmark alternates short windows of its own runs with Time(), neither side
// reloading, so that both see the same machine load.
class OrtServer {
 public:
  // Starts the child and waits for its first, untimed run; ready() is false when it failed.
  OrtServer(const std::string& modules, const std::string& model,
            const std::vector<RawInput>& inputs, int threads);
  ~OrtServer();
  OrtServer(const OrtServer&) = delete;
  OrtServer& operator=(const OrtServer&) = delete;

  bool ready() const { return ready_; }
  // The times of `runs` runs in ms, in the order they ran; empty when the child failed.
  std::vector<double> Time(int runs);

 private:
  pid_t child_ = -1;
  FILE* to_child_ = nullptr;
  FILE* from_child_ = nullptr;
  bool ready_ = false;
  std::filesystem::path scratch_;
};

}  // namespace ovfix::bench
