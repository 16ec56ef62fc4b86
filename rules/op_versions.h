// Op versions for rules: the version of an op that a model's opset selects (onnx's schema
// registry: the largest version of the op not above the opset), the ranges a rule declares
// (`ops Squeeze 13..`, `for Op in Add 7.., Max 8..`, an op group's members), and the opset-aware
// builders a replacement may use (`unsqueeze(a, axes)` writes Unsqueeze with an `axes` input
// from version 13 and with an `axes` attribute before).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/model.h"
#include "ir/op_groups.h"

namespace ovfix::rules {

// `op` at versions since..until (inclusive); until is kOpenVersion for "since..".
struct OpVersionRange {
  std::string domain;  // "" for the default domain
  std::string op_type;
  int since = 1;
  int until = kOpenVersion;
  bool Contains(int version) const { return version >= since && version <= until; }
  std::string ToString() const;  // "Squeeze 13..", "Squeeze ..12", "Add 7..13"
};

// The version of `op_type` the model's opset for `domain` selects; for an op onnx does not
// know (a custom domain), the model's opset itself. -1 when the model does not import the
// domain or the op does not exist yet at its opset.
int OpVersion(const Model& model, std::string_view domain, std::string_view op_type);

// The versions onnx defines for an op of the default domain, ascending; empty when onnx does
// not know the op.
std::vector<int> KnownOpVersions(std::string_view op_type);

// Checks a range written in a rule file: the op exists and `since` is one of its versions.
// Returns the problem, or "" when the range is good.
std::string CheckOpVersionRange(const OpVersionRange& range);

// A builder: a replacement node `name(data, argument)` that becomes `op_type(data, argument)`
// where the op's version takes the argument as an input, and `op_type<argument = ...>(data)`
// before (the argument then must be a list of ints: a `let` or a constant).
struct Builder {
  std::string_view name;      // "unsqueeze"
  std::string_view op_type;   // "Unsqueeze"
  std::string_view argument;  // "axes"
  int input_since = 1;        // the first version that takes `argument` as input 1
};

// nullptr when there is no such builder.
const Builder* FindBuilder(std::string_view name);
const std::vector<Builder>& AllBuilders();

}  // namespace ovfix::rules
