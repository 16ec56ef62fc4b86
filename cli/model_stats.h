// What a model is made of, for the before -> after table `convert` ends with (onnxsim's
// summary): nodes per op type, weight bytes, and the size of its files on disk.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/model.h"

namespace ovfix::converter {

struct ModelStats {
  int64_t nodes = 0;                   // in every graph, bodies of If/Loop/Scan included
  std::map<std::string, int64_t> ops;  // op type (domain-qualified outside ai.onnx) -> nodes
  int64_t weight_bytes = 0;            // initializers, in every graph
  int64_t file_bytes = -1;             // the model file and its external data; -1 unknown
};

ModelStats MeasureModel(const Model& model);
// The bytes of `path` and of `data_files` (external data) on disk, or -1 when one is missing.
int64_t FileBytes(const std::string& path, const std::vector<std::string>& data_files);

}  // namespace ovfix::converter
