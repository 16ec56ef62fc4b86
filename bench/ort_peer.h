// onnxruntime as the executor benchmarks' peer: ../shared/tools/ort/run.js in a child process
// (onnxruntime-node, installed once under build/ort or where OVFIX_ORT_MODULES points).
#pragma once

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

}  // namespace ovfix::bench
