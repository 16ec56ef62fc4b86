// SetOptionStatus and api::OptionList (SetOption and ConversionOptionList, ovfix/ovfix.h): the
// API's options by the table's names. The table (rules/conversion_options.h) says each option's
// name, type and check; all this file adds is which member of ConversionOptions carries it.
#include "api/options.h"

#include <cstdint>
#include <map>
#include <optional>
#include <type_traits>
#include <variant>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/model_proto.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"
#include "rules/closest_name.h"

namespace ovfix {
namespace api {
namespace {

using rules::OptionSpec;
using Type = OptionSpec::Type;
using Options = ConversionOptions;
using Shapes = std::map<std::string, std::vector<int64_t>>;
using Ranges = std::map<std::string, ShapeRange>;
using ByName = std::map<std::string, std::string>;
using Member =
    std::variant<std::string Options::*, std::optional<std::string> Options::*,
                 std::optional<int64_t> Options::*, std::optional<double> Options::*,
                 std::optional<bool> Options::*, bool Options::*,
                 std::vector<std::string> Options::*, Shapes Options::*, Ranges Options::*,
                 std::vector<NamedTensors> Options::*, ByName Options::*>;

struct BoundMember {
  std::string_view name;
  Member member;
};

// The name written once with the member, so the two cannot disagree.
#define OVFIX_MEMBER(m) \
  BoundMember { #m, &Options::m }

const std::vector<BoundMember>& Members() {
  static const std::vector<BoundMember> members = {OVFIX_MEMBER(target),
                                                   OVFIX_MEMBER(batch),
                                                   OVFIX_MEMBER(opset),
                                                   OVFIX_MEMBER(input_shapes),
                                                   OVFIX_MEMBER(shape_ranges),
                                                   OVFIX_MEMBER(keep_fp32),
                                                   OVFIX_MEMBER(keep_io_types),
                                                   OVFIX_MEMBER(broadcast),
                                                   OVFIX_MEMBER(lower_conv3d_unit_kernel),
                                                   OVFIX_MEMBER(precision),
                                                   OVFIX_MEMBER(fp16_islands),
                                                   OVFIX_MEMBER(fp16_magnitude_threshold),
                                                   OVFIX_MEMBER(fold_size_limit),
                                                   OVFIX_MEMBER(rule_files),
                                                   OVFIX_MEMBER(disable),
                                                   OVFIX_MEMBER(tolerance),
                                                   OVFIX_MEMBER(accuracy),
                                                   OVFIX_MEMBER(validate),
                                                   OVFIX_MEMBER(repair),
                                                   OVFIX_MEMBER(certify),
                                                   OVFIX_MEMBER(island_precision),
                                                   OVFIX_MEMBER(calibration_data),
                                                   OVFIX_MEMBER(calibration_sets),
                                                   OVFIX_MEMBER(by_name)};
  return members;
}

#undef OVFIX_MEMBER

const Member* FindMember(std::string_view name) {
  for (const BoundMember& m : Members()) {
    if (m.name == name) return &m.member;
  }
  return nullptr;
}

template <typename... F>
struct Overload : F... {
  using F::operator()...;
};

// OptionInfo::type, in the order of OptionSpec::Type.
std::string_view TypeName(Type type) {
  static constexpr std::string_view kNames[] = {"bool", "int",  "number", "choice",
                                                "text", "list", "map"};
  return kNames[static_cast<int>(type)];
}

// The words the table's bools take (rules/conversion_options.cc).
absl::StatusOr<bool> ParseBool(const std::string& text) {
  if (text == "true" || text == "on" || text == "1") return true;
  if (text == "false" || text == "off" || text == "0") return false;
  return absl::InvalidArgumentError(absl::StrCat("expected true or false, got '", text, "'"));
}

std::string BoolText(bool b) { return b ? "true" : "false"; }

// NAME=FILE.pb: the tensor file read now, added to the last set (or a new one when that set
// has the name already, as the command line's --input).
absl::Status AddInputFile(const std::string& text, std::vector<NamedTensors>& sets) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return absl::InvalidArgumentError(absl::StrCat("expected NAME=FILE.pb, got '", text, "'"));
  }
  const std::string name = text.substr(0, eq), file = text.substr(eq + 1);
  std::string stored_name;
  OVFIX_ASSIGN_OR_RETURN(Tensor tensor, ReadTensorFile(file, &stored_name));
  OVFIX_ASSIGN_OR_RETURN(OnnxTensor read, ToOnnxTensor(TensorToProto(tensor, name)));
  if (sets.empty() || sets.back().contains(name)) sets.emplace_back();
  sets.back()[name] = std::move(read);
  return absl::OkStatus();
}

// A scalar member's value from text: as given (strings), a number, a bool.
template <typename T>
absl::StatusOr<T> ParseScalar(const std::string& text) {
  if constexpr (std::is_same_v<T, bool>) {
    return ParseBool(text);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return text;
  } else {
    T value{};
    bool parsed = false;
    if constexpr (std::is_same_v<T, double>) {
      parsed = absl::SimpleAtod(text, &value);
    } else {
      parsed = absl::SimpleAtoi(text, &value);
    }
    if (!parsed || !(value >= 0)) {
      return absl::InvalidArgumentError(absl::StrCat("expected a number >= 0, got '", text, "'"));
    }
    return value;
  }
}

template <typename T>
struct Unwrapped {
  using type = T;
};
template <typename T>
struct Unwrapped<std::optional<T>> {
  using type = T;
};

// Sets the member `spec` names from `text`, checked first as the table checks it.
absl::Status SetMember(const OptionSpec& spec, const Member& member, const std::string& text,
                       Options& o) {
  rules::ConvertOptions checked;
  if (spec.set != nullptr) OVFIX_RETURN_IF_ERROR(spec.set(text, checked));
  return std::visit(
      [&](auto m) -> absl::Status {
        auto& value = o.*m;
        using T = std::remove_reference_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::vector<NamedTensors>>) {
          return AddInputFile(text, value);
        } else if constexpr (std::is_same_v<T, Shapes>) {
          // NAME=DIMS as the table's check read it.
          if (spec.set == nullptr) return absl::InternalError("no check reads NAME=DIMS");
          for (const auto& [name, dims] : checked.input_shapes) value[name] = dims;
        } else if constexpr (std::is_same_v<T, Ranges>) {
          // NAME=MIN:OPT:MAX as the table's check read it.
          if (spec.set == nullptr) return absl::InternalError("no check reads NAME=MIN:OPT:MAX");
          for (const auto& [name, r] : checked.shape_ranges) value[name] = {r.min, r.opt, r.max};
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          value.push_back(text);
        } else if constexpr (std::is_same_v<T, ByName>) {
          value[std::string(spec.name)] = text;  // as the table's check took it
        } else {
          OVFIX_ASSIGN_OR_RETURN(value, ParseScalar<typename Unwrapped<T>::type>(text));
        }
        return absl::OkStatus();
      },
      member);
}

}  // namespace

std::vector<std::string_view> BoundMembers() {
  std::vector<std::string_view> names;
  for (const BoundMember& m : Members()) names.push_back(m.name);
  return names;
}

bool MemberHasTableType(const OptionSpec& spec) {
  const Member* member = FindMember(spec.api_field);
  if (member == nullptr) return false;
  const Type type = spec.type;
  return std::visit(
      Overload{[&](std::string Options::*) { return type == Type::kString; },
               [&](std::optional<std::string> Options::*) { return type == Type::kEnum; },
               [&](std::optional<int64_t> Options::*) { return type == Type::kInt; },
               [&](std::optional<double> Options::*) { return type == Type::kDouble; },
               [&](std::optional<bool> Options::*) { return type == Type::kBool; },
               [&](bool Options::*) { return type == Type::kBool; },
               [&](std::vector<std::string> Options::*) { return type == Type::kList; },
               [&](Shapes Options::*) { return type == Type::kMap; },
               [&](Ranges Options::*) { return type == Type::kMap; },
               [&](std::vector<NamedTensors> Options::*) { return type == Type::kMap; },
               // Kept as text, whatever its type: the table's check reads it.
               [&](ByName Options::*) { return type != Type::kList && type != Type::kMap; }},
      *member);
}

std::vector<std::string> MemberTexts(const OptionSpec& spec, const Options& o) {
  const Member* member = FindMember(spec.api_field);
  if (member == nullptr) return {};
  auto optional = [](const auto& value, auto text) -> std::vector<std::string> {
    if (!value) return {};
    return {text(*value)};
  };
  return std::visit(
      Overload{[&](std::string Options::*m) -> std::vector<std::string> { return {o.*m}; },
               [&](std::optional<std::string> Options::*m) {
                 return optional(o.*m, [](const std::string& s) { return s; });
               },
               [&](std::optional<int64_t> Options::*m) {
                 return optional(o.*m, [](int64_t n) { return absl::StrCat(n); });
               },
               [&](std::optional<double> Options::*m) {
                 return optional(o.*m, [](double d) { return absl::StrFormat("%.17g", d); });
               },
               [&](std::optional<bool> Options::*m) { return optional(o.*m, BoolText); },
               [&](bool Options::*m) -> std::vector<std::string> {
                 if (BoolText(o.*m) == spec.default_text) return {};
                 return {BoolText(o.*m)};
               },
               [&](std::vector<std::string> Options::*m) { return o.*m; },
               [&](Shapes Options::*m) {
                 std::vector<std::string> texts;
                 for (const auto& [name, dims] : o.*m) {
                   texts.push_back(absl::StrCat(name, "=", absl::StrJoin(dims, "x")));
                 }
                 return texts;
               },
               [&](Ranges Options::*m) {
                 std::vector<std::string> texts;
                 for (const auto& [name, r] : o.*m) {
                   texts.push_back(absl::StrCat(name, "=", absl::StrJoin(r.min, "x"), ":",
                                                absl::StrJoin(r.opt, "x"), ":",
                                                absl::StrJoin(r.max, "x")));
                 }
                 return texts;
               },
               [&](std::vector<NamedTensors> Options::*) { return std::vector<std::string>{}; },
               [&](ByName Options::*m) {
                 auto it = (o.*m).find(std::string(spec.name));
                 return it == (o.*m).end() ? std::vector<std::string>{}
                                           : std::vector<std::string>{it->second};
               }},
      *member);
}

std::vector<OptionInfo> OptionList() {
  std::vector<OptionInfo> list;
  for (const rules::OptionSpec& spec : rules::ConversionOptionTable()) {
    if (spec.api_field.empty()) continue;
    OptionInfo info;
    info.name = spec.name;
    info.flag = rules::FlagName(spec);
    info.type = api::TypeName(spec.type);
    info.choices.assign(spec.choices.begin(), spec.choices.end());
    info.default_value = spec.default_text;
    info.value_name = spec.value_name;
    info.help = spec.help;
    info.field = spec.api_field;
    list.push_back(std::move(info));
  }
  return list;
}

}  // namespace api

absl::Status SetOptionStatus(ConversionOptions& options, const std::string& name,
                             const std::string& value) {
  const rules::OptionSpec* spec = rules::FindOption(name);
  const api::Member* member = spec == nullptr ? nullptr : api::FindMember(spec->api_field);
  if (member == nullptr) {
    std::vector<std::string> names;
    for (const OptionInfo& info : api::OptionList()) names.push_back(info.name);
    return api::Tagged(absl::InvalidArgumentError(absl::StrCat(
                           "unknown option '", name, "'", rules::DidYouMean(name, names),
                           " (the options: ", absl::StrJoin(names, ", "), ")")),
                       "option");
  }
  if (absl::Status s = api::SetMember(*spec, *member, value, options); !s.ok()) {
    return api::Tagged(absl::InvalidArgumentError(absl::StrCat(name, ": ", s.message())), "option");
  }
  return absl::OkStatus();
}

}  // namespace ovfix
