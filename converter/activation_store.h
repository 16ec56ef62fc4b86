// Where a conversion keeps the activations it holds for long (the reference run's, the values a
// rewrite computed, the repair's fp32 run), so that its anonymous memory does not grow with the
// model's activations: a model at a high resolution computes gigabytes of them in one run
// (docs/memory.md). Tensors are kept as they are while those held in memory stay within a
// budget; past it, a tensor's bytes go to an unlinked temporary file and the tensor kept views
// them through a read-only map of it. Those are file pages: the kernel writes them back and
// drops them under pressure, and reads them again when the tensor is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace ovfix::converter {

class ActivationStore {
 public:
  // What a conversion keeps in memory of its activations: with the program, the graph, one
  // run's live tensors and the weights, within docs/memory.md's 768 MB.
  static constexpr size_t kDefaultBudget = size_t{128} << 20;
  // Smaller tensors are never moved to the file (a map of its own each would cost more than
  // they hold); they count against the budget all the same.
  static constexpr size_t kSmallestMoved = size_t{64} << 10;

  explicit ActivationStore(size_t budget = kDefaultBudget) : budget_(budget) {}
  ~ActivationStore();
  ActivationStore(const ActivationStore&) = delete;
  ActivationStore& operator=(const ActivationStore&) = delete;

  // The tensor to keep in place of `t`: `t` itself while the tensors kept in memory stay
  // within the budget, else a copy of it in the file. Where the file cannot be written (no
  // space in the temporary folder) `t` is kept as it is: the bound is given up, not the
  // conversion.
  Tensor Keep(Tensor t);

  // Bytes moved to the file so far (also those since let go), for logs and tests.
  int64_t moved_bytes() const { return moved_bytes_; }

 private:
  struct Region {
    uint64_t offset = 0;
    size_t capacity = 0;                   // page multiple
    std::weak_ptr<const MappedFile> view;  // of the tensor it holds
    bool free = false;                     // its tensor was let go and its pages given back
  };
  // Whether `t` is anonymous memory of its own that the file could hold instead.
  static bool Movable(const Tensor& t);
  // Counts again the bytes of the buffers kept in memory that someone still holds.
  void Recount();
  absl::StatusOr<Tensor> MoveToFile(const Tensor& t);
  absl::StatusOr<uint64_t> Allocate(size_t capacity, size_t& region);

  size_t budget_;
  size_t memory_bytes_ = 0;  // of `memory_`, expired ones included until Recount
  struct Held {
    std::weak_ptr<const Buffer> buffer;
    size_t bytes = 0;
  };
  absl::flat_hash_map<const Buffer*, Held> memory_;
  int fd_ = -1;
  std::string path_;  // the temporary folder, for messages
  uint64_t end_ = 0;  // of the file
  std::vector<Region> regions_;
  int64_t moved_bytes_ = 0;
};

}  // namespace ovfix::converter
