#include "rules/conversion_options.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "ir/status_macros.h"
#include "rules/embedded_files.h"

namespace ovfix::rules {
namespace {

using Type = OptionSpec::Type;
using Precision = ConvertOptions::Precision;

absl::StatusOr<bool> ParseBool(std::string_view v) {
  if (v == "true" || v == "on" || v == "1") return true;
  if (v == "false" || v == "off" || v == "0") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("expected true or false, got '", std::string(v), "'"));
}

absl::StatusOr<int64_t> ParsePositiveInt(std::string_view v) {
  int64_t n;
  if (!absl::SimpleAtoi(std::string(v), &n) || n <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a positive integer, got '", std::string(v), "'"));
  }
  return n;
}

absl::StatusOr<double> ParsePositiveNumber(std::string_view v) {
  double d;
  if (!absl::SimpleAtod(std::string(v), &d) || !(d > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a positive number, got '", std::string(v), "'"));
  }
  return d;
}

// A number from `low` to `high`.
template <int64_t low, int64_t high>
absl::StatusOr<double> ParseNumberBetween(std::string_view v) {
  double d;
  if (!absl::SimpleAtod(std::string(v), &d) || !(d >= low && d <= high)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a number from ", low, " to ", high, ", got '", std::string(v), "'"));
  }
  return d;
}

std::string BoolText(bool b) { return b ? "true" : "false"; }

// The table's setters and getters of one ConvertOptions field: the value parsed by `parse`
// (or appended to a list), and the field back as text.
template <auto field, auto parse>
absl::Status SetParsed(std::string_view v, ConvertOptions& o) {
  OVFIX_ASSIGN_OR_RETURN(o.*field, parse(v));
  return absl::OkStatus();
}
template <auto field>
absl::Status Append(std::string_view v, ConvertOptions& o) {
  (o.*field).emplace_back(v);
  return absl::OkStatus();
}
template <auto field>
std::string GetBool(const ConvertOptions& o) {
  return BoolText(o.*field);
}
template <auto field>
std::string GetNumber(const ConvertOptions& o) {
  return absl::StrCat(o.*field);
}
template <auto field, auto name>
std::string GetNamed(const ConvertOptions& o) {
  return std::string(name(o.*field));
}
// An option a pass declares and reads by name (ConvertOptions::by_name): the value checked by
// `parse` and kept as given; read back as given, else the entry's default.
template <const char* name, auto parse>
absl::Status SetByName(std::string_view v, ConvertOptions& o) {
  OVFIX_RETURN_IF_ERROR(parse(v).status());
  o.by_name[name] = std::string(v);
  return absl::OkStatus();
}
template <const char* name>
std::string GetByName(const ConvertOptions& o) {
  auto it = o.by_name.find(name);
  return it != o.by_name.end() ? it->second : std::string(FindOption(name)->default_text);
}

// NAME=DIMS, dims joined by 'x' or ','.
absl::Status SetInputShape(std::string_view text, ConvertOptions& o) {
  const std::string s(text);
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
    return absl::InvalidArgumentError("expected NAME=DIMS, e.g. x=1x3x224x224");
  }
  std::vector<int64_t> shape;
  for (absl::string_view d : absl::StrSplit(s.substr(eq + 1), absl::ByAnyChar("x,"))) {
    int64_t n;
    if (!absl::SimpleAtoi(d, &n) || n < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", std::string(d), "' is not a dim (use 1x3x224x224)"));
    }
    shape.push_back(n);
  }
  o.input_shapes[s.substr(0, eq)] = shape;
  return absl::OkStatus();
}

// NAME=MIN:OPT:MAX, each shape as --input-shape writes it, of one rank, MIN <= OPT <= MAX.
absl::Status SetShapeRange(std::string_view text, ConvertOptions& o) {
  const std::string s(text);
  const size_t eq = s.find('=');
  std::vector<std::string> points = absl::StrSplit(s.substr(eq + 1), ':');
  if (eq == std::string::npos || eq == 0 || points.size() != 3) {
    return absl::InvalidArgumentError(
        "expected NAME=MIN:OPT:MAX, e.g. images=1x3x320x320:1x3x640x640:1x3x1280x1280");
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const std::string& point : points) {
    std::vector<int64_t> shape;
    for (absl::string_view d : absl::StrSplit(point, absl::ByAnyChar("x,"))) {
      int64_t n;
      if (!absl::SimpleAtoi(d, &n) || n <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", std::string(d), "' is not a dim (use 1x3x320x320:1x3x640x640:1x3x1280x1280)"));
      }
      shape.push_back(n);
    }
    shapes.push_back(std::move(shape));
  }
  if (shapes[0].size() != shapes[1].size() || shapes[1].size() != shapes[2].size()) {
    return absl::InvalidArgumentError("MIN, OPT and MAX must have the same rank");
  }
  for (size_t i = 0; i < shapes[0].size(); ++i) {
    if (shapes[0][i] > shapes[1][i] || shapes[1][i] > shapes[2][i]) {
      return absl::InvalidArgumentError(absl::StrCat("dim ", i, " is ", shapes[0][i], ":",
                                                     shapes[1][i], ":", shapes[2][i],
                                                     " (each dim must hold MIN <= OPT <= MAX)"));
    }
  }
  o.shape_ranges[s.substr(0, eq)] = {shapes[0], shapes[1], shapes[2]};
  return absl::OkStatus();
}

absl::Status SetPrecision(std::string_view text, ConvertOptions& o) {
  OVFIX_ASSIGN_OR_RETURN(o.precision, ParsePrecision(text));
  o.fp16 = o.precision == Precision::kFp16;
  return absl::OkStatus();
}

// --target's help names the built-in targets as the registry has them, so that a new target
// file shows in `convert --help`, the API's option list and Python's docstring by itself.
constexpr std::string_view kDefaultTarget = "generic";
std::string_view TargetHelp() {
  static const std::string help =
      absl::StrCat("Target profile: ", absl::StrJoin(BuiltinTargetNames(), ", "),
                   ", or a .target file (default ", std::string(kDefaultTarget), ")");
  return help;
}

constexpr char kMaskBound[] = "mask_bound";

std::vector<OptionSpec> MakeTable() {
  std::vector<OptionSpec> t;
  t.push_back({.name = "target",
               .type = Type::kString,
               .default_text = kDefaultTarget,
               .value_name = "NAME|FILE",
               .help = TargetHelp(),
               .read_by = "the plan (the steps), rule conditions",
               .api_field = "target",
               .set = [](std::string_view v, ConvertOptions& o) -> absl::Status {
                 o.target = std::string(v);
                 return absl::OkStatus();
               },
               .get = [](const ConvertOptions& o) { return o.target; }});
  t.push_back({.name = "precision",
               .type = Type::kEnum,
               .choices = {"fp32", "fp16", "bf16"},
               .value_name = "fp32|fp16|bf16",
               .help = "The float type the model computes in, on any target: fp16 or bf16 "
                       "tensors and weights with fp32 islands where that type cannot hold a "
                       "value; fp32 converts nothing (default: the target's, fp16 for "
                       "gpu-fp16 and ncnn-vulkan, else fp32)",
               .read_by = "the plan (the precision phase), end-to-end criteria, repair",
               .in_target_files = true,
               .api_field = "precision",
               .set = SetPrecision,
               .get = GetNamed<&ConvertOptions::precision, PrecisionName>});
  t.push_back({.name = "fp16",
               .type = Type::kBool,
               .default_text = "false",
               .help = "Target files' older spelling: true is precision fp16, false fp32",
               .read_by = "as precision",
               .in_target_files = true,
               .on_command_line = false,
               .same_as = "precision",
               .set = [](std::string_view v, ConvertOptions& o) -> absl::Status {
                 OVFIX_ASSIGN_OR_RETURN(bool b, ParseBool(v));
                 return SetPrecision(b ? "fp16" : "fp32", o);
               },
               .get = GetBool<&ConvertOptions::fp16>});
  t.push_back({.name = "batch",
               .type = Type::kInt,
               .value_name = "N",
               .help = "Fix the first dim of dynamic inputs to N",
               .read_by = "reference inputs",
               .in_target_files = true,
               .api_field = "batch",
               .set = SetParsed<&ConvertOptions::batch, ParsePositiveInt>,
               .get = GetNumber<&ConvertOptions::batch>});
  t.push_back({.name = "opset",
               .type = Type::kInt,
               .value_name = "N",
               .help = "Write the model at ai.onnx opset N (7-26), up or down from its own",
               .read_by = "setup (converter/opset_conversion), checked against the original",
               .in_target_files = true,
               .api_field = "opset",
               .set = SetParsed<&ConvertOptions::opset, ParsePositiveInt>,
               .get = GetNumber<&ConvertOptions::opset>});
  t.push_back({.name = "input_shape",
               .type = Type::kMap,
               .value_name = "NAME=DIMS",
               .help = "Fix an input's shape: NAME=1x3x224x224 (repeatable)",
               .read_by = "reference inputs",
               .api_field = "input_shapes",
               .set = SetInputShape});
  t.push_back({.name = "shape_range",
               .type = Type::kMap,
               .value_name = "NAME=MIN:OPT:MAX",
               .help = "Calibrate and validate at three shapes of a dynamic input, as a "
                       "TensorRT profile: images=1x3x320x320:1x3x640x640:1x3x1280x1280 "
                       "(repeatable; the calibration data is brought to each shape)",
               .read_by = "calibration sets (converter/shape_range), report",
               .api_field = "shape_ranges",
               .set = SetShapeRange});
  t.push_back({.name = "keep_fp32",
               .type = Type::kList,
               .value_name = "REGEX",
               .help = "Keep nodes whose whole name or op type matches REGEX in fp32 (repeatable)",
               .api_field = "keep_fp32",
               .set = Append<&ConvertOptions::keep_fp32>});
  t.push_back({.name = "keep_io_types",
               .type = Type::kBool,
               .default_text = "true",
               .help = "Give a reduced-precision file float16/bfloat16 inputs and outputs "
                       "where its first and last nodes compute in them (by default they keep the "
                       "original's types, Casts inside)",
               .in_target_files = true,
               .api_field = "keep_io_types",
               .set = SetParsed<&ConvertOptions::keep_io_types, ParseBool>,
               .get = GetBool<&ConvertOptions::keep_io_types>});
  t.push_back({.name = "fp16_islands",
               .type = Type::kEnum,
               .choices = {"structural", "magnitude"},
               .default_text = "structural",
               .value_name = "structural|magnitude",
               .help = "Which nodes stay fp32: structural (precision-sensitive patterns, spec "
                       "limits, calibration) or magnitude (spec limits and calibrated "
                       "magnitudes only, as ModelOpt AutoCast)",
               .in_target_files = true,
               .api_field = "fp16_islands",
               .set = SetParsed<&ConvertOptions::fp16_islands, ParseFp16Islands>,
               .get = GetNamed<&ConvertOptions::fp16_islands, Fp16IslandsName>});
  t.push_back({.name = "fp16_magnitude_threshold",
               .type = Type::kDouble,
               .default_text = "8192",
               .value_name = "X",
               .help = "Keep in fp32 the nodes whose calibrated outputs exceed X",
               .in_target_files = true,
               .api_field = "fp16_magnitude_threshold",
               .set = SetParsed<&ConvertOptions::fp16_magnitude_threshold, ParsePositiveNumber>,
               .get = [](const ConvertOptions& o) {
                 return absl::StrFormat("%g", o.fp16_magnitude_threshold);
               }});
  // Declared and read by fp16_safe_mask alone: kept by name (ConvertOptions::by_name).
  t.push_back({.name = kMaskBound,
               .type = Type::kDouble,
               .default_text = "4096",
               .value_name = "X",
               .help = "The magnitude an attention mask constant beyond fp16 (finfo.min, "
                       "-inf) becomes where fp16 computes it, 32-32768: masked keys keep a zero "
                       "weight at any of them; lower leaves room for more masks added together",
               .in_target_files = true,
               .api_field = "by_name",
               .set = SetByName<kMaskBound, ParseNumberBetween<32, 32768>>,
               .get = GetByName<kMaskBound>});
  t.push_back({.name = "islands_honoured",
               .type = Type::kBool,
               .default_text = "true",
               .help = "Whether the backend runs fp32 islands as written (false: it picks "
                       "every tensor's float type itself); a property of the target",
               .read_by = "validation of fp16 conversions",
               .in_target_files = true,
               .on_command_line = false,
               .set = SetParsed<&ConvertOptions::islands_honoured, ParseBool>,
               .get = GetBool<&ConvertOptions::islands_honoured>});
  t.push_back({.name = "broadcast",
               .type = Type::kEnum,
               .choices = {"rank", "full"},
               .default_text = "rank",
               .value_name = "rank|full",
               .help = "rank: equal-rank element-wise inputs; full: identical shapes (Expand)",
               .read_by = "explicit_broadcast rules",
               .in_target_files = true,
               .api_field = "broadcast",
               .set = SetParsed<&ConvertOptions::broadcast, ParseBroadcast>,
               .get = GetNamed<&ConvertOptions::broadcast, BroadcastName>});
  t.push_back({.name = "lower_conv3d_unit_kernel",
               .type = Type::kBool,
               .default_text = "false",
               .help = "Rewrite Conv3D with a unit kernel dim as Conv2D",
               .in_target_files = true,
               .api_field = "lower_conv3d_unit_kernel",
               .set = SetParsed<&ConvertOptions::lower_conv3d_unit_kernel, ParseBool>,
               .get = GetBool<&ConvertOptions::lower_conv3d_unit_kernel>});
  t.push_back({.name = "fold_size_limit",
               .type = Type::kInt,
               .default_text = "1048576",
               .value_name = "N",
               .help = "The largest constant (elements) that folding writes",
               .in_target_files = true,
               .api_field = "fold_size_limit",
               .set = SetParsed<&ConvertOptions::fold_size_limit, ParsePositiveInt>,
               .get = GetNumber<&ConvertOptions::fold_size_limit>});
  t.push_back({.name = "rules",
               .type = Type::kList,
               .value_name = "FILE",
               .help = "A rule file to apply too (repeatable)",
               .read_by = "the plan (a user_rules step before the precision phase)",
               .api_field = "rule_files"});
  t.push_back({.name = "disable",
               .type = Type::kList,
               .value_name = "NAME",
               .help = "Skip a pass, rule set, rule family or rule (repeatable)",
               .read_by = "the plan, rule sets",
               .api_field = "disable",
               .set = Append<&ConvertOptions::disabled>});
  t.push_back({.name = "validate",
               .type = Type::kBool,
               .default_text = "true",
               .help = "Do not run the model: no validation, no fp16 calibration",
               .read_by = "calibration, validation and repair phases",
               .api_field = "validate",
               .set = SetParsed<&ConvertOptions::validate, ParseBool>,
               .get = GetBool<&ConvertOptions::validate>});
  t.push_back({.name = "input",
               .type = Type::kMap,
               .value_name = "NAME=FILE.pb",
               .help = "Reference input for validation: NAME=FILE.pb (repeatable; naming an "
                       "input again starts another set; default: random inputs from a fixed "
                       "seed)",
               .read_by = "calibration phase",
               .api_field = "calibration_sets"});
  t.push_back({.name = "calibration_data",
               .type = Type::kList,
               .value_name = "DIR",
               .help = "ONNX test-data folder (test_data_set_*/input_K.pb or input_K.pb) to "
                       "validate, calibrate and repair on (repeatable)",
               .read_by = "calibration phase",
               .api_field = "calibration_data"});
  t.push_back({.name = "tolerance",
               .type = Type::kDouble,
               .value_name = "X",
               .help = "Judge every output by its worst element relative to its range: the "
                       "same as --accuracy max:X (default: --accuracy's default for fp16 "
                       "conversions, max:1e-4 otherwise)",
               .read_by = "end-to-end validation, repair",
               .api_field = "tolerance"});
  t.push_back({.name = "accuracy",
               .type = Type::kList,
               .value_name = "[NAME=]CRITERIA",
               .help = "How outputs are judged: NAME=CRITERIA for one output, CRITERIA for the "
                       "others (repeatable); CRITERIA is max:B, mean:B, p99:B, p99.9:B, "
                       "beyond@E:S, topK:S, mask@T:S or boxes@IOU:S, joined by ','. Default "
                       "where fp16 is involved: max:0.1,p99:0.01,mean:0.002, or max:0.01 for "
                       "outputs of fewer than 100 elements; max:1e-4 otherwise "
                       "(docs/validation.md)",
               .read_by = "end-to-end validation, repair",
               .api_field = "accuracy"});
  t.push_back({.name = "repair",
               .type = Type::kBool,
               .default_text = "true",
               .help = "Report an fp16 conversion beyond the tolerance instead of keeping the "
                       "nodes responsible in fp32",
               .read_by = "repair phase",
               .api_field = "repair"});
  t.push_back(
      {.name = "certify",
       .type = Type::kEnum,
       .choices = {"on", "off"},
       .default_text = "on",
       .value_name = "on|off",
       .help = "After an fp16/bf16 conversion that meets the criteria on calibration data, "
               "try each fp32 island back in fp16 alone (at most 24, largest first) and keep "
               "only those the criteria need; off skips it (docs/validation.md)",
       .read_by = "repair phase (the island certificate)",
       .api_field = "certify",
       .set = [](std::string_view v, ConvertOptions& o) -> absl::Status {
         if (v != "on" && v != "off") {
           return absl::InvalidArgumentError(
               absl::StrCat("expected on or off, got '", std::string(v), "'"));
         }
         o.certify = v == "on";
         return absl::OkStatus();
       },
       .get = [](const ConvertOptions& o) { return std::string(o.certify ? "on" : "off"); }});
  t.push_back({.name = "island_precision",
               .type = Type::kEnum,
               .choices = {"fp32", "bf16"},
               .default_text = "fp32",
               .value_name = "fp32|bf16",
               .help = "What the islands of an fp16 conversion compute in: bf16 (float's range "
                       "at fp16's speed, on backends with bfloat16 kernels) tries each island "
                       "in bfloat16 and keeps it there where the criteria hold, fp32 where they "
                       "do not (docs/validation.md)",
               .read_by = "repair phase (islands in bf16)",
               .in_target_files = true,
               .api_field = "island_precision",
               .set = SetParsed<&ConvertOptions::island_precision, ParseIslandPrecision>,
               .get = GetNamed<&ConvertOptions::island_precision, IslandPrecisionName>});
  t.push_back({.name = "bf16_kernels",
               .type = Type::kBool,
               .default_text = "false",
               .help = "Target files: the backend computes in bfloat16 (island_precision bf16 "
                       "is refused elsewhere)",
               .read_by = "setup (checks island_precision)",
               .in_target_files = true,
               .on_command_line = false,
               .set = SetParsed<&ConvertOptions::bf16_kernels, ParseBool>,
               .get = GetBool<&ConvertOptions::bf16_kernels>});
  return t;
}

}  // namespace

const std::vector<OptionSpec>& ConversionOptionTable() {
  static const std::vector<OptionSpec> table = MakeTable();
  return table;
}

const OptionSpec* FindOption(std::string_view name) {
  for (const OptionSpec& spec : ConversionOptionTable()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::string FlagName(const OptionSpec& spec) {
  std::string flag(spec.name);
  for (char& c : flag) {
    if (c == '_') c = '-';
  }
  const bool negated = spec.type == OptionSpec::Type::kBool && spec.default_text == "true";
  return absl::StrCat(negated ? "--no-" : "--", flag);
}

namespace {

absl::Status UnknownOption(std::string_view name, bool settable) {
  std::vector<std::string> names;
  for (const OptionSpec& spec : ConversionOptionTable()) {
    if (settable ? spec.set != nullptr : spec.get != nullptr) names.emplace_back(spec.name);
  }
  return absl::NotFoundError(absl::StrCat("unknown option '", std::string(name),
                                          "' (the options: ", absl::StrJoin(names, ", "), ")"));
}

}  // namespace

absl::Status SetOption(std::string_view name, std::string_view text, ConvertOptions& options) {
  const OptionSpec* spec = FindOption(name);
  if (spec == nullptr || spec->set == nullptr) return UnknownOption(name, /*settable=*/true);
  return spec->set(text, options);
}

absl::StatusOr<std::string> GetOption(std::string_view name, const ConvertOptions& options) {
  const OptionSpec* spec = FindOption(name);
  if (spec == nullptr || spec->get == nullptr) return UnknownOption(name, /*settable=*/false);
  return spec->get(options);
}

double DeclaredNumber(const ConvertOptions& options, std::string_view name) {
  absl::StatusOr<std::string> text = GetOption(name, options);
  double value = 0;
  if (!text.ok() || !absl::SimpleAtod(*text, &value)) return 0;
  return value;
}

}  // namespace ovfix::rules
