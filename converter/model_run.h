// Running a model the way `ovfix run` does: the CPU executor, precision as typed (float16
// tensors are float16), inputs converted to the float type each graph input declares.
// Validation's end-to-end check runs the written model through here, so the error ovfix
// reports is the error a user measures on the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/executor.h"
#include "ir/model.h"

namespace ovfix::converter {

// `given` with each float tensor converted to the float type its graph input declares
// (float32 data for a float16 input: a converted model checked on the original's inputs);
// `notes` gets one line per conversion. Other type mismatches are left to the session,
// which names the input.
exec::TensorMap MatchInputTypes(const Graph& g, const exec::TensorMap& given,
                                std::vector<std::string>* notes = nullptr);

// Runs `model` on the CPU as `ovfix run` does and returns its outputs in graph order: the
// optimized session graph (converter/session_graph.h), which is what a backend runs too, unless
// `as_written`. `random_seed` seeds random ops without a seed attribute (0: fresh entropy).
absl::StatusOr<std::vector<Tensor>> RunAsTyped(const Model& model, const exec::TensorMap& feeds,
                                               uint64_t random_seed = 0, bool as_written = false);

// Runs `model` as a backend that ignores fp32 islands does (OpenVINO GPU, ncnn on Vulkan with
// fp16 storage): the CPU executor in fp16-storage precision with every float tensor rounded to
// fp16 when produced, the outputs of Casts to float included.
absl::StatusOr<std::vector<Tensor>> RunEveryFloatInFp16(const Model& model,
                                                        const exec::TensorMap& feeds,
                                                        uint64_t random_seed = 0);

// The model as its serialized bytes read back: what a file written from it holds.
absl::StatusOr<std::unique_ptr<Model>> SerializedCopy(const Model& model);
// SerializedCopy for the repair's many copies: only the graph goes through the bytes, and
// every weight is shared with `model` in the form it was read in (CopyGraphSharingWeights), so
// that a copy runs, and is written, as one through the bytes would be.
absl::StatusOr<std::unique_ptr<Model>> SerializedGraphCopy(const Model& model);

}  // namespace ovfix::converter
