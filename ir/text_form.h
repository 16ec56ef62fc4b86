// The text form of models and graphs: onnx's own text syntax, read by onnx's OnnxParser and
// written by its printer. Tests and rule files use it.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/model.h"

namespace ovfix {

// Parses "<ir_version: 8, opset_import: [\"\" : 17]> name (inputs) => (outputs) { ... }".
// A text without the <...> header gets ir_version 8 and opset 17.
absl::StatusOr<std::unique_ptr<Model>> ParseModelText(std::string_view text);
std::string PrintModelText(const Model& model);

}  // namespace ovfix
