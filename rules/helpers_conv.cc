// Helpers for convolution and pooling geometry: the kernel shape, strides, dilations and
// explicit pads that a Conv/MaxPool/AveragePool/LpPool uses, whatever it leaves implicit.
#include <algorithm>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"
#include "rules/helper_registration.h"
#include "rules/helpers.h"

namespace ovfix::rules {
namespace {

bool IsConv(const Node& n) {
  return n.op_type() == "Conv" || n.op_type() == "ConvInteger" || n.op_type() == "ConvTranspose";
}

absl::StatusOr<Node*> ConvNode(std::string_view helper, const Value* v) {
  OVFIX_ASSIGN_OR_RETURN(Node * node, ProducerOf(v));
  static const std::set<std::string> kOps = {"Conv",    "ConvInteger", "ConvTranspose",
                                             "MaxPool", "AveragePool", "LpPool"};
  if (!kOps.count(node->op_type())) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(helper), ": ", node->Describe(),
                                                   " is not a convolution or pooling"));
  }
  return node;
}

absl::StatusOr<std::vector<int64_t>> KernelShape(const Node& n) {
  if (n.HasAttribute("kernel_shape")) return n.GetInts("kernel_shape");
  if (!IsConv(n) || n.input(1) == nullptr) {
    return NotApplicable(absl::StrCat(n.Describe(), " has no kernel_shape"));
  }
  auto shape = n.input(1)->shape();
  if (!shape || shape->size() < 3) {
    return NotApplicable(absl::StrCat("the weight shape of ", n.Describe(), " is unknown"));
  }
  std::vector<int64_t> kernel;
  for (size_t i = 2; i < shape->size(); ++i) {
    if (!(*shape)[i].known()) {
      return NotApplicable(absl::StrCat("the kernel of ", n.Describe(), " is not static"));
    }
    kernel.push_back((*shape)[i].value);
  }
  return kernel;
}

// strides or dilations: the attribute, or ones.
absl::StatusOr<std::vector<int64_t>> PerAxis(const Node& n, std::string_view name) {
  OVFIX_ASSIGN_OR_RETURN(auto kernel, KernelShape(n));
  std::vector<int64_t> out = n.GetInts(name, std::vector<int64_t>(kernel.size(), 1));
  if (out.size() != kernel.size()) {
    return NotApplicable(absl::StrCat(n.Describe(), " has ", out.size(), " ", std::string(name),
                                      " for ", kernel.size(), " spatial axes"));
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ExplicitPads(const Node& n) {
  OVFIX_ASSIGN_OR_RETURN(auto kernel, KernelShape(n));
  const size_t spatial = kernel.size();
  const std::string auto_pad = n.GetString("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = n.GetInts("pads", std::vector<int64_t>(2 * spatial, 0));
    if (pads.size() != 2 * spatial) {
      return NotApplicable(absl::StrCat(n.Describe(), " has ", pads.size(), " pads"));
    }
    return pads;
  }
  if (auto_pad == "VALID") return std::vector<int64_t>(2 * spatial, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return NotApplicable(absl::StrCat(n.Describe(), " has auto_pad '", auto_pad, "'"));
  }
  if (n.op_type() == "ConvTranspose") {
    return NotApplicable("ConvTranspose's auto_pad depends on output_shape; not computed");
  }
  OVFIX_ASSIGN_OR_RETURN(auto strides, PerAxis(n, "strides"));
  // Pools have dilations only from MaxPool-10; the attribute is absent (ones) elsewhere.
  OVFIX_ASSIGN_OR_RETURN(auto dilations, PerAxis(n, "dilations"));
  auto x = n.input(0) != nullptr ? n.input(0)->shape() : std::nullopt;
  if (!x || x->size() != spatial + 2) {
    return NotApplicable(absl::StrCat("the input rank of ", n.Describe(), " is unknown"));
  }
  std::vector<int64_t> pads(2 * spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    const Dim& d = (*x)[i + 2];
    if (!d.known()) {
      return NotApplicable(
          absl::StrCat("spatial dim ", i, " of the input of ", n.Describe(), " is unknown"));
    }
    const int64_t in = d.value, stride = strides[i];
    if (stride <= 0 || kernel[i] <= 0 || dilations[i] <= 0) {
      return NotApplicable(absl::StrCat(n.Describe(), " has a kernel, stride or dilation <= 0"));
    }
    const int64_t out = (in + stride - 1) / stride;
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - in);
    // SAME_UPPER puts the odd pixel at the end, SAME_LOWER at the beginning.
    const int64_t small = total / 2, large = total - total / 2;
    pads[i] = auto_pad == "SAME_UPPER" ? small : large;
    pads[i + spatial] = auto_pad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

// A helper reading the conv/pool that produces its argument.
Helper ConvHelper(std::string signature, std::string description,
                  std::function<absl::StatusOr<std::vector<int64_t>>(const Node&)> compute) {
  const std::string name = signature.substr(0, signature.find('('));
  return MakeHelper(std::move(signature), std::move(description),
                    [name, compute](Value* y) -> absl::StatusOr<std::vector<int64_t>> {
                      OVFIX_ASSIGN_OR_RETURN(Node * node, ConvNode(name, y));
                      return compute(*node);
                    });
}

}  // namespace

void AddConvHelpers(std::vector<Helper>& out) {
  out.push_back(ConvHelper(
      "conv_kernel_shape(y) -> ints",
      "the kernel_shape of the conv/pool producing y (from the weight when absent)", KernelShape));
  out.push_back(ConvHelper("conv_strides(y) -> ints",
                           "the strides of the conv/pool producing y (ones when absent)",
                           [](const Node& n) { return PerAxis(n, "strides"); }));
  out.push_back(ConvHelper("conv_dilations(y) -> ints",
                           "the dilations of the conv/pool producing y (ones when absent)",
                           [](const Node& n) { return PerAxis(n, "dilations"); }));
  out.push_back(ConvHelper("conv_pads(y) -> ints",
                           "explicit pads [begin..., end...] of the conv/pool producing y, "
                           "computed from auto_pad (SAME_UPPER, SAME_LOWER, VALID) and the input "
                           "shape",
                           ExplicitPads));
}

}  // namespace ovfix::rules
