// `--opset N`: the model rewritten at another opset of the default domain, up or down. Below
// opset 17 and up to it, onnx's own version converter does the work; across 17 (onnx 1.12's
// last) ovfix's adapters do, node by node: Reduce* `axes` between attribute and input, Split
// `num_outputs`, Pad `axes`, DFT's `axis`, GridSample's mode names, and the ops opsets 18-26
// added written with older ones where an exact equivalent exists (Gelu, Mish, Swish,
// RMSNormalization, GroupNormalization). A node with no equivalent at the target opset stops
// the conversion, naming the node and the op version it needs. The conversion pipeline
// validates the converted model like any other rewrite.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "ir/model.h"

namespace ovfix::converter {

struct OpsetChange {
  int64_t from = -1, to = -1;
  int nodes_rewritten = 0;  // nodes across opset 17 whose version changed
  std::string note;         // one line for the report and the console
};

// The IR version a model at `opset` needs (onnx's release table: opset 18 -> 8, 19 -> 9, ...).
int64_t IrVersionForOpset(int64_t opset);

// Converts `model` (every graph) to default-domain opset `target`; InvalidArgument naming the
// node when one cannot be expressed at `target`. The IR version follows the opset (raised to
// what the target needs; lowered to it when the opset goes down).
absl::StatusOr<OpsetChange> ConvertOpset(Model& model, int64_t target);

}  // namespace ovfix::converter
