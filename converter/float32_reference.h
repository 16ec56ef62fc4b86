// The reference a model that already computes in float16 is judged against: the same graph
// with every float16 value, weight, Cast and constant in float32. Run as typed, such a
// model's outputs are its own fp16 computation, so a conversion that keeps (or repeats) that
// computation reported "max error 0" for every output while the file, run beside the
// float32 math its test data came from (`ovfix run --test-data`, onnxruntime), was 0.003 of
// the range off. The end-to-end comparison takes its reference outputs from this copy, so
// the error reported is the file's fp16 error, whatever precision the input held.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "ir/model.h"

namespace ovfix::converter {

// `model` with float16 replaced by float32 throughout (graph inputs, initializers, value
// types, Cast/CastLike targets, Constant and ConstantOfShape values, dtype attributes),
// subgraphs included. Inputs fed as float16 are read as float32 (MatchInputTypes).
absl::StatusOr<std::unique_ptr<Model>> Float32Copy(const Model& model);

}  // namespace ovfix::converter
