// Helpers about shapes: static shapes and dims, broadcasting, axes, and constants reshaped
// or expanded in place.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"
#include "rules/helpers.h"
#include "rules/matcher.h"

namespace ovfix::rules {
namespace {

using Args = std::span<const HelperValue>;

absl::Status NotApplicable(std::string message) {
  return absl::FailedPreconditionError(std::move(message));
}

// Constants grown by a rule (expanded for full broadcast) stay below this many elements
// unless the conversion options allow more.
constexpr int64_t kDefaultConstantLimit = 1 << 20;
// Ranks a rule may ask for; far above any real model, low enough to refuse nonsense.
constexpr int64_t kMaxRank = 64;

absl::StatusOr<Tensor> ConstantArg(std::string_view helper, Args args, size_t i, Value** source) {
  OVFIX_ASSIGN_OR_RETURN(auto v, ValueArg(helper, args, i));
  if (!IsConstantValue(v))
    return NotApplicable(absl::StrCat("'", v->name(), "' is not a constant"));
  auto t = ReadConstant(v);
  if (!t.ok()) return NotApplicable(std::string(t.status().message()));
  if (t->type() == DataType::kString) {
    return NotApplicable(absl::StrCat("'", v->name(), "' holds strings"));
  }
  *source = v;
  return t;
}

// `t` broadcast to `dims` (numpy rules, same rank or fewer dims on t's side).
absl::StatusOr<Tensor> BroadcastTo(const Tensor& t, const std::vector<int64_t>& dims) {
  const size_t rank = dims.size();
  if (t.rank() > rank) return NotApplicable("constant has a higher rank than the target shape");
  std::vector<int64_t> src(rank, 1);
  for (size_t i = 0; i < t.rank(); ++i) src[rank - t.rank() + i] = t.dim(i);
  for (size_t i = 0; i < rank; ++i) {
    if (src[i] != 1 && src[i] != dims[i]) {
      return NotApplicable(
          absl::StrCat("constant dim ", src[i], " does not broadcast to ", dims[i]));
    }
  }
  Tensor out(t.type(), dims);
  const size_t element = ElementSize(t.type());
  const int64_t n = out.numel();
  std::vector<int64_t> index(rank, 0);
  const auto* in_bytes = static_cast<const std::byte*>(t.raw());
  auto* out_bytes = static_cast<std::byte*>(out.raw());
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset = offset * src[d] + (src[d] == 1 ? 0 : index[d]);
    std::memcpy(out_bytes + flat * element, in_bytes + offset * element, element);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

absl::StatusOr<HelperValue> Shape(const HelperContext&, Args args) {
  OVFIX_ASSIGN_OR_RETURN(auto v, ValueArg("shape", args, 0));
  OVFIX_ASSIGN_OR_RETURN(auto shape, KnownShape(v));
  return shape;
}

absl::StatusOr<HelperValue> Dim(const HelperContext&, Args args) {
  OVFIX_ASSIGN_OR_RETURN(auto v, ValueArg("dim", args, 0));
  OVFIX_ASSIGN_OR_RETURN(auto i, IntArg("dim", args, 1));
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

absl::StatusOr<HelperValue> BroadcastRank(const HelperContext&, Args args) {
  OVFIX_ASSIGN_OR_RETURN(auto v, ValueArg("broadcast_rank", args, 0));
  OVFIX_ASSIGN_OR_RETURN(auto node, ProducerOf(v));
  int64_t rank = 0;
  for (Value* in : node->inputs()) {
    if (in == nullptr) continue;
    OVFIX_ASSIGN_OR_RETURN(auto r, KnownRank(in));
    rank = std::max(rank, r);
  }
  return rank;
}

absl::StatusOr<HelperValue> LeadingAxes(const HelperContext&, Args args) {
  OVFIX_ASSIGN_OR_RETURN(auto v, ValueArg("leading_axes", args, 0));
  OVFIX_ASSIGN_OR_RETURN(auto target, IntArg("leading_axes", args, 1));
  OVFIX_ASSIGN_OR_RETURN(auto rank, KnownRank(v));
  if (target < rank) {
    return NotApplicable(absl::StrCat("'", v->name(), "' already has rank ", rank));
  }
  if (target > kMaxRank) return NotApplicable(absl::StrCat("rank ", target, " is too large"));
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < target - rank; ++i) axes.push_back(i);
  return axes;
}

absl::StatusOr<HelperValue> ConstantWithRank(const HelperContext&, Args args) {
  Value* source = nullptr;
  OVFIX_ASSIGN_OR_RETURN(auto t, ConstantArg("constant_with_rank", args, 0, &source));
  OVFIX_ASSIGN_OR_RETURN(auto target, IntArg("constant_with_rank", args, 1));
  if (target < static_cast<int64_t>(t.rank()) || target > kMaxRank) {
    return NotApplicable(absl::StrCat("cannot give '", source->name(), "' rank ", target));
  }
  std::vector<int64_t> dims(target - t.rank(), 1);
  dims.insert(dims.end(), t.dims().begin(), t.dims().end());
  return ConstantInPlace{source, t.Reshaped(std::move(dims))};
}

absl::StatusOr<HelperValue> ConstantExpanded(const HelperContext& c, Args args) {
  Value* source = nullptr;
  OVFIX_ASSIGN_OR_RETURN(auto t, ConstantArg("constant_expanded", args, 0, &source));
  OVFIX_ASSIGN_OR_RETURN(auto dims, IntsArg("constant_expanded", args, 1));
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
  OVFIX_ASSIGN_OR_RETURN(auto out, BroadcastTo(t, dims));
  return ConstantInPlace{source, std::move(out)};
}

absl::StatusOr<HelperValue> SqueezeAxes(const HelperContext&, Args args) {
  OVFIX_ASSIGN_OR_RETURN(auto v, ValueArg("squeeze_axes", args, 0));
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

absl::StatusOr<HelperValue> ShapeDifference(std::string_view name, Args args, bool inserted) {
  OVFIX_ASSIGN_OR_RETURN(auto x, ValueArg(name, args, 0));
  OVFIX_ASSIGN_OR_RETURN(auto y, ValueArg(name, args, 1));
  OVFIX_ASSIGN_OR_RETURN(auto in, KnownShape(x));
  OVFIX_ASSIGN_OR_RETURN(auto out, KnownShape(y));
  OVFIX_ASSIGN_OR_RETURN(auto axes, inserted ? InsertedAxes(in, out) : InsertedAxes(out, in));
  return axes;
}

absl::StatusOr<HelperValue> NormalizeAxes(const HelperContext&, Args args) {
  OVFIX_ASSIGN_OR_RETURN(auto axes, IntsArg("normalize_axes", args, 0));
  OVFIX_ASSIGN_OR_RETURN(auto rank, IntArg("normalize_axes", args, 1));
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

absl::StatusOr<HelperValue> Filled(std::string_view name, Args args, int64_t fill) {
  OVFIX_ASSIGN_OR_RETURN(auto n, IntArg(name, args, 0));
  if (n < 0 || n > 64)
    return absl::InvalidArgumentError(absl::StrCat(std::string(name), ": bad length"));
  return std::vector<int64_t>(n, fill);
}

}  // namespace

void AddShapeHelpers(std::vector<Helper>& out) {
  out.push_back({"shape", 1, 1, "shape(x) -> ints",
                 "the static shape of x (does not apply when a dim is not known)", Shape});
  out.push_back({"has_static_shape", 1, 1, "has_static_shape(x) -> bool",
                 "whether every dim of x is a known number",
                 [](const HelperContext&, Args args) -> absl::StatusOr<HelperValue> {
                   OVFIX_ASSIGN_OR_RETURN(auto v, ValueArg("has_static_shape", args, 0));
                   return v->static_shape().has_value();
                 }});
  out.push_back(
      {"dim", 2, 2, "dim(x, i) -> int", "dim i of x (negative i counts from the end)", Dim});
  out.push_back({"numel", 1, 1, "numel(x) -> int", "the number of elements of x (static shape)",
                 [](const HelperContext&, Args args) -> absl::StatusOr<HelperValue> {
                   OVFIX_ASSIGN_OR_RETURN(auto v, ValueArg("numel", args, 0));
                   OVFIX_ASSIGN_OR_RETURN(auto shape, KnownShape(v));
                   return Tensor::NumElements(shape);
                 }});
  out.push_back({"broadcast_rank", 1, 1, "broadcast_rank(y) -> int",
                 "the largest rank among the inputs of the node producing y", BroadcastRank});
  out.push_back({"leading_axes", 2, 2, "leading_axes(x, r) -> ints",
                 "[0, 1, ..., r - rank(x) - 1]: the axes an Unsqueeze adds in front of x to "
                 "give it rank r",
                 LeadingAxes});
  out.push_back({"constant_with_rank", 2, 2, "constant_with_rank(c, r) -> constant",
                 "constant c with leading 1-dims up to rank r, reshaped in place (no new node)",
                 ConstantWithRank});
  out.push_back({"constant_expanded", 2, 2, "constant_expanded(c, dims) -> constant",
                 "constant c broadcast to dims, replaced in place (bounded by the fold size "
                 "limit)",
                 ConstantExpanded});
  out.push_back({"squeeze_axes", 1, 1, "squeeze_axes(x) -> ints",
                 "the axes of x whose dim is 1 (every dim must be known)", SqueezeAxes});
  out.push_back({"inserted_axes", 2, 2, "inserted_axes(x, y) -> ints",
                 "the axes of y that an Unsqueeze from x to y inserts (static shapes)",
                 [](const HelperContext&, Args args) {
                   return ShapeDifference("inserted_axes", args, true);
                 }});
  out.push_back({"removed_axes", 2, 2, "removed_axes(x, y) -> ints",
                 "the axes of x that a Squeeze from x to y removes (static shapes)",
                 [](const HelperContext&, Args args) {
                   return ShapeDifference("removed_axes", args, false);
                 }});
  out.push_back({"changed_axes", 2, 2, "changed_axes(x, y) -> ints",
                 "removed_axes(x, y) when y has the lower rank, else inserted_axes(x, y)",
                 [](const HelperContext&, Args args) -> absl::StatusOr<HelperValue> {
                   OVFIX_ASSIGN_OR_RETURN(auto x, ValueArg("changed_axes", args, 0));
                   OVFIX_ASSIGN_OR_RETURN(auto y, ValueArg("changed_axes", args, 1));
                   OVFIX_ASSIGN_OR_RETURN(auto in, KnownShape(x));
                   OVFIX_ASSIGN_OR_RETURN(auto out, KnownShape(y));
                   return ShapeDifference("changed_axes", args, out.size() > in.size());
                 }});
  out.push_back({"normalize_axes", 2, 2, "normalize_axes(axes, r) -> ints",
                 "axes with negative entries counted from the end of rank r", NormalizeAxes});
  out.push_back({"range", 1, 1, "range(n) -> ints", "[0, 1, ..., n - 1]",
                 [](const HelperContext&, Args args) -> absl::StatusOr<HelperValue> {
                   OVFIX_ASSIGN_OR_RETURN(auto n, IntArg("range", args, 0));
                   if (n < 0 || n > 64) return absl::InvalidArgumentError("range: bad length");
                   std::vector<int64_t> out;
                   for (int64_t i = 0; i < n; ++i) out.push_back(i);
                   return out;
                 }});
  out.push_back({"ones", 1, 1, "ones(n) -> ints", "n ones",
                 [](const HelperContext&, Args args) { return Filled("ones", args, 1); }});
  out.push_back({"zeros", 1, 1, "zeros(n) -> ints", "n zeros",
                 [](const HelperContext&, Args args) { return Filled("zeros", args, 0); }});
}

}  // namespace ovfix::rules
