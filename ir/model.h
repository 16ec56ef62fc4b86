// Model: the top graph plus everything else of the file (opset imports, metadata, functions,
// training info), kept as read so a load/save round trip changes nothing that matters.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

class Model {
 public:
  Model() : graph_(std::make_unique<Graph>()) {}
  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }
  // ModelProto without its graph.
  onnx::ModelProto& extras() { return extras_; }
  const onnx::ModelProto& extras() const { return extras_; }
  // Opset version imported for a domain ("" and "ai.onnx" are the same), -1 if none.
  int64_t OpsetVersion(std::string_view domain) const;
  void SetOpsetVersion(std::string_view domain, int64_t version);
  // Folder of the model file (external data locations are relative to it).
  const std::string& base_dir() const { return base_dir_; }
  void set_base_dir(std::string d) { base_dir_ = std::move(d); }
  // Whether the file it was loaded from kept weights in external data: saving keeps them
  // external (ExternalDataMode::kAuto).
  bool loaded_with_external_data() const { return !external_data_files_.empty(); }
  // The external data files it was loaded from (paths as opened): a command that writes
  // files checks that none of them is overwritten.
  const std::vector<std::string>& external_data_files() const { return external_data_files_; }
  void set_external_data_files(std::vector<std::string> paths) {
    external_data_files_ = std::move(paths);
  }

 private:
  onnx::ModelProto extras_;
  std::unique_ptr<Graph> graph_;
  std::string base_dir_;
  std::vector<std::string> external_data_files_;
};

}  // namespace ovfix
