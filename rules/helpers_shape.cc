// Helpers about shapes: static shapes and dims, broadcasting, axes, and constants reshaped
// or expanded in place.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/constant.h"
#include "ir/status_macros.h"
#include "rules/helper_registration.h"
#include "rules/helpers.h"
#include "rules/matcher.h"
#include "rules/passes/explicit_broadcast_full.h"

namespace ovfix::rules {
namespace {

// Constants grown by a rule (expanded for full broadcast) stay below this many elements
// unless the conversion options allow more.
constexpr int64_t kDefaultConstantLimit = 1 << 20;
// Ranks a rule may ask for; far above any real model, low enough to refuse nonsense.
constexpr int64_t kMaxRank = 64;

// `t` broadcast to `dims` (numpy rules, same rank or fewer dims on t's side).
absl::StatusOr<Tensor> BroadcastTo(const Tensor& t, const std::vector<int64_t>& dims) {
  const size_t rank = dims.size();
  if (t.rank() > rank) return NotApplicable("constant has a higher rank than the target shape");
  for (size_t i = 0; i < t.rank(); ++i) {
    const int64_t from = t.dim(i), to = dims[rank - t.rank() + i];
    if (from != 1 && from != to) {
      return NotApplicable(absl::StrCat("constant dim ", from, " does not broadcast to ", to));
    }
  }
  return BroadcastTensor(t, dims);
}

absl::StatusOr<int64_t> Dim(Value* v, int64_t i) {
  auto shape = v->shape();
  if (!shape) return NotApplicable(absl::StrCat("rank of '", v->name(), "' is unknown"));
  const int64_t rank = static_cast<int64_t>(shape->size());
  const int64_t axis = i < 0 ? i + rank : i;
  if (axis < 0 || axis >= rank) {
    return NotApplicable(absl::StrCat("'", v->name(), "' has no dim ", i));
  }
  if (!(*shape)[axis].known()) {
    return NotApplicable(absl::StrCat("dim ", i, " of '", v->name(), "' is unknown"));
  }
  return (*shape)[axis].value;
}

absl::StatusOr<int64_t> BroadcastRank(Value* v) {
  OVFIX_ASSIGN_OR_RETURN(Node * node, ProducerOf(v));
  int64_t rank = 0;
  for (Value* in : node->inputs()) {
    if (in == nullptr) continue;
    OVFIX_ASSIGN_OR_RETURN(int64_t r, KnownRank(in));
    rank = std::max(rank, r);
  }
  return rank;
}

absl::StatusOr<std::vector<int64_t>> LeadingAxes(Value* v, int64_t target) {
  OVFIX_ASSIGN_OR_RETURN(int64_t rank, KnownRank(v));
  if (target < rank) {
    return NotApplicable(absl::StrCat("'", v->name(), "' already has rank ", rank));
  }
  if (target > kMaxRank) return NotApplicable(absl::StrCat("rank ", target, " is too large"));
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < target - rank; ++i) axes.push_back(i);
  return axes;
}

absl::StatusOr<ConstantInPlace> ConstantWithRank(Value* source, int64_t target) {
  OVFIX_ASSIGN_OR_RETURN(Tensor t, ConstantOf(source));
  if (target < static_cast<int64_t>(t.rank()) || target > kMaxRank) {
    return NotApplicable(absl::StrCat("cannot give '", source->name(), "' rank ", target));
  }
  std::vector<int64_t> dims(target - t.rank(), 1);
  dims.insert(dims.end(), t.dims().begin(), t.dims().end());
  return ConstantInPlace{source, t.Reshaped(std::move(dims))};
}

absl::StatusOr<ConstantInPlace> ConstantExpanded(const HelperContext& c, Value* source,
                                                 std::vector<int64_t> dims) {
  OVFIX_ASSIGN_OR_RETURN(Tensor t, ConstantOf(source));
  for (int64_t d : dims) {
    if (d < 0) return NotApplicable("constant_expanded: negative dim");
  }
  if (static_cast<int64_t>(dims.size()) > kMaxRank) {
    return NotApplicable("constant_expanded: rank too large");
  }
  const int64_t limit = c.options != nullptr ? c.options->fold_size_limit : kDefaultConstantLimit;
  if (Tensor::NumElements(dims) > limit) {
    return NotApplicable(
        absl::StrCat("expanding '", source->name(), "' would exceed ", limit, " elements"));
  }
  OVFIX_ASSIGN_OR_RETURN(Tensor out, BroadcastTo(t, dims));
  return ConstantInPlace{source, std::move(out)};
}

absl::StatusOr<std::vector<int64_t>> SqueezeAxes(Value* v) {
  auto shape = v->shape();
  if (!shape) return NotApplicable(absl::StrCat("rank of '", v->name(), "' is unknown"));
  std::vector<int64_t> axes;
  for (size_t i = 0; i < shape->size(); ++i) {
    // A dim not known might be 1 when the model runs: which axes go is then unknown.
    if (!(*shape)[i].known()) {
      return NotApplicable(absl::StrCat("dim ", i, " of '", v->name(), "' is unknown"));
    }
    if ((*shape)[i].value == 1) axes.push_back(static_cast<int64_t>(i));
  }
  return axes;
}

// The axes an Unsqueeze from `in` to `out` inserts: any choice that keeps the dims of `in`
// in order gives the same tensor, so the first one found is as good as any.
absl::StatusOr<std::vector<int64_t>> InsertedAxes(const std::vector<int64_t>& in,
                                                  const std::vector<int64_t>& out) {
  std::vector<int64_t> axes;
  size_t i = 0;
  for (size_t j = 0; j < out.size(); ++j) {
    if (i < in.size() && out[j] == in[i]) {
      ++i;
    } else if (out[j] == 1) {
      axes.push_back(static_cast<int64_t>(j));
    } else {
      return NotApplicable("the shapes do not differ by 1-dims only");
    }
  }
  if (i != in.size()) return NotApplicable("the shapes do not differ by 1-dims only");
  return axes;
}

// inserted_axes(x, y) when `inserted`, else removed_axes(x, y); changed_axes picks one.
absl::StatusOr<std::vector<int64_t>> ShapeDifference(Value* x, Value* y,
                                                     std::optional<bool> inserted) {
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> in, KnownShape(x));
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> out, KnownShape(y));
  if (!inserted) inserted = out.size() > in.size();
  return *inserted ? InsertedAxes(in, out) : InsertedAxes(out, in);
}

absl::StatusOr<std::vector<int64_t>> NormalizeAxes(std::vector<int64_t> axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    const int64_t axis = a < 0 ? a + rank : a;
    if (axis < 0 || axis >= rank) {
      return NotApplicable(absl::StrCat("axis ", a, " is out of range for rank ", rank));
    }
    out.push_back(axis);
  }
  return out;
}

// n values from `first` on, each `step` more than the last (range, ones, zeros).
auto Sequence(std::string name, int64_t first, int64_t step) {
  return [name, first, step](int64_t n) -> absl::StatusOr<std::vector<int64_t>> {
    if (n < 0 || n > 64) return absl::InvalidArgumentError(absl::StrCat(name, ": bad length"));
    std::vector<int64_t> out;
    for (int64_t i = 0; i < n; ++i) out.push_back(first + i * step);
    return out;
  };
}

}  // namespace

void AddShapeHelpers(std::vector<Helper>& out) {
  out.push_back(MakeHelper("shape(x) -> ints",
                           "the static shape of x (does not apply when a dim is not known)",
                           [](Value* v) { return KnownShape(v); }));
  out.push_back(MakeHelper("has_static_shape(x) -> bool",
                           "whether every dim of x is a known number",
                           [](Value* v) { return v->static_shape().has_value(); }));
  out.push_back(MakeHelper("dim(x, i) -> int", "dim i of x (negative i counts from the end)", Dim));
  out.push_back(MakeHelper("numel(x) -> int", "the number of elements of x (static shape)",
                           [](Value* v) -> absl::StatusOr<int64_t> {
                             OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, KnownShape(v));
                             return Tensor::NumElements(shape);
                           }));
  out.push_back(MakeHelper("broadcast_rank(y) -> int",
                           "the largest rank among the inputs of the node producing y",
                           BroadcastRank));
  out.push_back(MakeHelper("leading_axes(x, r) -> ints",
                           "[0, 1, ..., r - rank(x) - 1]: the axes an Unsqueeze adds in front of "
                           "x to give it rank r",
                           LeadingAxes));
  out.push_back(
      MakeHelper("constant_with_rank(c, r) -> constant",
                 "constant c with leading 1-dims up to rank r, reshaped in place (no new node)",
                 ConstantWithRank));
  out.push_back(MakeHelper("constant_expanded(c, dims) -> constant",
                           "constant c broadcast to dims, replaced in place (bounded by the fold "
                           "size limit)",
                           ConstantExpanded));
  out.push_back(MakeHelper("squeeze_axes(x) -> ints",
                           "the axes of x whose dim is 1 (every dim must be known)", SqueezeAxes));
  out.push_back(MakeHelper("inserted_axes(x, y) -> ints",
                           "the axes of y that an Unsqueeze from x to y inserts (static shapes)",
                           [](Value* x, Value* y) { return ShapeDifference(x, y, true); }));
  out.push_back(MakeHelper("removed_axes(x, y) -> ints",
                           "the axes of x that a Squeeze from x to y removes (static shapes)",
                           [](Value* x, Value* y) { return ShapeDifference(x, y, false); }));
  out.push_back(MakeHelper("changed_axes(x, y) -> ints",
                           "removed_axes(x, y) when y has the lower rank, else inserted_axes(x, y)",
                           [](Value* x, Value* y) { return ShapeDifference(x, y, std::nullopt); }));
  out.push_back(MakeHelper("normalize_axes(axes, r) -> ints",
                           "axes with negative entries counted from the end of rank r",
                           NormalizeAxes));
  out.push_back(MakeHelper(
      "composed_perm(inner, outer) -> ints",
      "the perm of Transpose(Transpose(x, inner), outer) as one Transpose: inner[outer[i]]",
      [](std::vector<int64_t> inner,
         std::vector<int64_t> outer) -> absl::StatusOr<std::vector<int64_t>> {
        std::vector<int64_t> out;
        for (int64_t i : outer) {
          if (inner.size() != outer.size() || i < 0 || i >= static_cast<int64_t>(inner.size())) {
            return NotApplicable("the perms do not compose");
          }
          out.push_back(inner[i]);
        }
        return out;
      }));
  out.push_back(MakeHelper(
      "swaps_last_two(perm) -> bool",
      "whether a Transpose by perm swaps the last two axes and keeps the others in place",
      [](std::vector<int64_t> perm) {
        const size_t n = perm.size();
        if (n < 2 || perm[n - 2] != static_cast<int64_t>(n - 1) ||
            perm[n - 1] != static_cast<int64_t>(n - 2)) {
          return false;
        }
        for (size_t i = 0; i + 2 < n; ++i) {
          if (perm[i] != static_cast<int64_t>(i)) return false;
        }
        return true;
      }));
  out.push_back(MakeHelper("range(n) -> ints", "[0, 1, ..., n - 1]", Sequence("range", 0, 1)));
  out.push_back(MakeHelper("ones(n) -> ints", "n ones", Sequence("ones", 1, 0)));
  out.push_back(MakeHelper("zeros(n) -> ints", "n zeros", Sequence("zeros", 0, 0)));
}

}  // namespace ovfix::rules
