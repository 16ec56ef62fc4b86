// Concat without copies (cpu session). A Concat along an axis with only 1s before it (the
// channels of one image, or axis 0) lays its inputs out one after another: input i is the byte
// range [offset_i, offset_i + bytes_i) of the output. So each input's producer can write
// straight into that range of the output's buffer (a Buffer::Slice of it), and the Concat,
// finding its inputs already side by side in one buffer, makes its output a view of them.
// DenseNet's x = Concat(x, conv(x)) chains nest: the earlier Concat's output is itself a range
// of the later one's, so a whole block writes into the buffer of its last Concat.
//
// Plan time picks, per value, the one Concat it is written into (its home): a value made by a
// plain tensor step of the main plan, read by that Concat once, and no graph output; read by
// several Concats, the last one (a torchvision DenseNet block's per-layer Concats of all
// earlier features are then views of prefixes of the block's last Concat).
//
// Where each value goes needs every size before the first of them is made; they are learned
// from the last run that completed (a session runs the same shapes again and again): the
// first run copies as before. Nothing of this is trusted at run time:
//   - a producer gets its range only when it asks for exactly that many bytes, else a buffer
//     of its own;
//   - a Concat is a view only when its inputs lie back to back, in order, in one buffer;
//     otherwise it copies into a buffer of its own (never into its range: its inputs may
//     be there);
// and the ranges the producers write are the leaves of one layout, disjoint, each written
// once per run. Buffers stay alive while any range of them does (Buffer::Slice), and the
// recycler takes a buffer back only once no slice of it is left (buffer_recycler.cc).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "exec/kernel.h"
#include "ir/node.h"
#include "ir/tensor.h"

namespace ovfix::exec {

class ConcatPlacement {
 public:
  // A Concat step some value is written into: its input slots and output slot.
  struct Concat {
    std::vector<int> inputs;
    int output = -1;
  };
  // The input position of a Concat a slot is written into.
  struct Home {
    int concat = -1;  // index into the Concats; -1: none
    int input = -1;
  };
  // Where a slot's producer writes it this run: bytes [offset, offset + bytes) of the buffer
  // made for slot `root` (the output of the outermost Concat of its nest).
  struct Range {
    int root = -1;  // -1: not placed
    size_t offset = 0;
    size_t bytes = 0;
  };

  ConcatPlacement(int num_slots, std::vector<Concat> concats, std::vector<Home> home_of_slot);

  // What Concat `concat` made in this run (its output view or copy), for the next runs'
  // layout.
  void Record(int concat, const Node& node, int opset, const std::vector<const Tensor*>& inputs,
              const Tensor& output);
  // After a run that completed: the ranges of the next runs, from what this one recorded.
  void Commit();

  const Range& RangeOf(int slot) const { return range_[slot]; }
  // The byte size of a root's buffer.
  size_t RootBytes(int root) const { return root_bytes_[root]; }

 private:
  struct Seen {
    bool laid_out = false;  // the Concat's inputs were back to back in its output
    std::vector<size_t> input_bytes;
  };

  std::vector<Concat> concats_;
  std::vector<Home> home_;
  std::vector<Seen> seen_;
  std::vector<Range> range_;
  std::vector<size_t> root_bytes_;
};

// The output of a Concat whose inputs already lie back to back, in order, in slices of one
// buffer along an axis with only 1s before it: a view of them (the whole buffer when they
// fill it). nullopt when they do not, or when anything about the node or its inputs is not
// plainly valid (the kernel then runs and reports it).
std::optional<Tensor> ConcatAsView(const Node& node, int opset,
                                   const std::vector<const Tensor*>& inputs);

}  // namespace ovfix::exec
