// The checks a node passes before anything works on it: what holds of a well-formed node
// whatever its inputs' values are. The converter runs them on every node before onnx's shape
// inference (which trusts them: a stride of 0 divides by zero there) and, with the ranks
// inference found, before the first pass; the executor runs them on every node it compiles.
// So no pass, no inference and no kernel meets a malformed node. Kernels call the attribute
// checks below for the same rules at run time, where the input ranks are known for certain.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/model.h"
#include "ir/node.h"

namespace ovfix {

// `node` at `opset` (of its domain):
// - its op's schema, where onnx has one: input and output counts, required inputs present,
//   attribute names and types (onnx's OpSchema::Verify);
// - every tensor attribute holds as many bytes or values as its dims need;
// - the spatial attributes of convolutions and pooling (CheckSpatialAttributes, the lists
//   against each other).
// Errors name the node.
absl::Status CheckNode(const Node& node, int64_t opset);

// CheckNode on every node of the model, the bodies of If/Loop/Scan included.
absl::Status CheckNodes(const Model& model);

// Where the type of a node's first input has a rank (declared or inferred): spatial
// attributes and an explicit axis against it, on every node of the model. The executor
// leaves ranks to its kernels, which see the real ones.
absl::Status CheckNodesAgainstRanks(const Model& model);

// kernel_shape, strides, dilations, pads and auto_pad of Conv, ConvTranspose, ConvInteger,
// QLinearConv and the pooling ops: one value per spatial axis (pads two), kernel dims,
// strides and dilations positive, pads not negative, all far below where sizes computed from
// them overflow. `spatial_rank` < 0 (unknown): the lists are checked against each other.
absl::Status CheckSpatialAttributes(const Node& node, int64_t spatial_rank);

// `axis` in [-rank, rank), as a position in [0, rank).
absl::StatusOr<int64_t> NormalizedAxis(const Node& node, int64_t axis, int64_t rank);

}  // namespace ovfix
