#include "exec/concat_in_place.h"

#include <utility>

namespace ovfix::exec {
namespace {

// The output dims of a Concat of `inputs` when its inputs are laid out back to back in its
// output: a valid Concat along an axis with only 1s before it, of a type of whole bytes per
// element, no input empty (an empty one has no address to line up). nullopt otherwise.
std::optional<std::vector<int64_t>> LaidOutDims(const Node& node, int opset,
                                                const std::vector<const Tensor*>& inputs) {
  if (inputs.empty() || inputs[0] == nullptr) return std::nullopt;
  const Tensor& first = *inputs[0];
  const int64_t rank = static_cast<int64_t>(first.rank());
  if (rank == 0 || ElementSize(first.type()) == 0) return std::nullopt;
  if (opset >= 4 && !node.HasAttribute("axis")) return std::nullopt;
  int64_t axis = node.GetInt("axis", 1);
  if (axis < -rank || axis >= rank) return std::nullopt;
  if (axis < 0) axis += rank;
  for (int64_t d = 0; d < axis; ++d) {
    if (first.dim(d) != 1) return std::nullopt;
  }
  std::vector<int64_t> dims = first.dims();
  dims[axis] = 0;
  for (const Tensor* t : inputs) {
    if (t == nullptr || t->type() != first.type() || t->rank() != first.rank() || t->numel() == 0)
      return std::nullopt;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && t->dim(d) != first.dim(d)) return std::nullopt;
    }
    dims[axis] += t->dim(axis);
  }
  return dims;
}

}  // namespace

ConcatPlacement::ConcatPlacement(int num_slots, std::vector<Concat> concats,
                                 std::vector<Home> home_of_slot)
    : concats_(std::move(concats)),
      home_(std::move(home_of_slot)),
      seen_(concats_.size()),
      range_(num_slots),
      root_bytes_(num_slots, 0) {}

void ConcatPlacement::Record(int concat, const Node& node, int opset,
                             const std::vector<const Tensor*>& inputs, const Tensor& output) {
  Seen& seen = seen_[concat];
  seen.input_bytes.clear();
  size_t total = 0;
  for (const Tensor* t : inputs) {
    seen.input_bytes.push_back(t != nullptr ? t->nbytes() : 0);
    total += seen.input_bytes.back();
  }
  seen.laid_out = LaidOutDims(node, opset, inputs).has_value() && output.nbytes() == total;
}

void ConcatPlacement::Commit() {
  // Each slot's range within the output of its home Concat, when that Concat laid its inputs
  // out last run.
  constexpr int kNone = -1;
  std::vector<int> parent(range_.size(), kNone);
  std::vector<size_t> offset_in_parent(range_.size(), 0), bytes(range_.size(), 0);
  for (size_t c = 0; c < concats_.size(); ++c) {
    const Seen& seen = seen_[c];
    if (!seen.laid_out || seen.input_bytes.size() != concats_[c].inputs.size()) continue;
    size_t offset = 0;
    for (size_t i = 0; i < seen.input_bytes.size(); ++i) {
      const int slot = concats_[c].inputs[i];
      if (home_[slot].concat == static_cast<int>(c) && home_[slot].input == static_cast<int>(i)) {
        parent[slot] = concats_[c].output;
        offset_in_parent[slot] = offset;
        bytes[slot] = seen.input_bytes[i];
      }
      offset += seen.input_bytes[i];
    }
    // A root's size: its Concat's output, the sum of its inputs.
    bytes[concats_[c].output] = offset;
  }
  // Nested ranges add up to the outermost Concat's output (homes come later in the plan than
  // their values, so the walk ends).
  for (size_t s = 0; s < range_.size(); ++s) {
    range_[s] = Range();
    if (parent[s] == kNone) continue;
    size_t offset = offset_in_parent[s];
    int root = parent[s];
    while (parent[root] != kNone) {
      offset += offset_in_parent[root];
      root = parent[root];
    }
    range_[s] = Range{root, offset, bytes[s]};
    root_bytes_[root] = bytes[root];
  }
}

std::optional<Tensor> ConcatAsView(const Node& node, int opset,
                                   const std::vector<const Tensor*>& inputs) {
  // Cheap refusals first: most Concats (shape arithmetic, copies) have inputs of their own.
  if (inputs.empty()) return std::nullopt;
  for (const Tensor* t : inputs) {
    if (t == nullptr || t->buffer() == nullptr || t->buffer()->whole() == nullptr) {
      return std::nullopt;
    }
  }
  const std::shared_ptr<Buffer>& whole = inputs[0]->buffer()->whole();
  const std::byte* next = inputs[0]->buffer()->address();
  size_t total = 0;
  for (const Tensor* t : inputs) {
    // Back to back in one buffer: exactly the bytes of the concatenation along an axis with
    // only 1s before it.
    if (t->buffer()->whole() != whole || t->buffer()->address() != next) return std::nullopt;
    if (t->buffer()->size() != t->nbytes()) return std::nullopt;
    next += t->nbytes();
    total += t->nbytes();
  }
  std::optional<std::vector<int64_t>> dims = LaidOutDims(node, opset, inputs);
  if (!dims) return std::nullopt;
  const size_t offset = static_cast<size_t>(inputs[0]->buffer()->address() - whole->address());
  // The whole buffer when they fill it: then it goes back to the recycler like any other
  // once released.
  std::shared_ptr<Buffer> bytes =
      offset == 0 && total == whole->size() ? whole : Buffer::Slice(whole, offset, total);
  return Tensor(inputs[0]->type(), *std::move(dims), std::move(bytes));
}

}  // namespace ovfix::exec
