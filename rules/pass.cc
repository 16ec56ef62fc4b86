#include "rules/pass.h"

#include <cassert>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ovfix::rules {

namespace {

using Broadcast = ConvertOptions::Broadcast;
using Precision = ConvertOptions::Precision;
using Fp16Islands = ConvertOptions::Fp16Islands;
using IslandPrecision = ConvertOptions::IslandPrecision;

// An option's values and their names; the first is the name of any value left out.
template <typename E>
struct ValueName {
  E value;
  std::string_view name;
};

constexpr ValueName<Broadcast> kBroadcastNames[] = {{Broadcast::kRank, "rank"},
                                                    {Broadcast::kFull, "full"}};
constexpr ValueName<Precision> kPrecisionNames[] = {
    {Precision::kFp32, "fp32"}, {Precision::kFp16, "fp16"}, {Precision::kBf16, "bf16"}};
constexpr ValueName<Fp16Islands> kFp16IslandsNames[] = {{Fp16Islands::kStructural, "structural"},
                                                        {Fp16Islands::kMagnitude, "magnitude"}};
constexpr ValueName<IslandPrecision> kIslandPrecisionNames[] = {{IslandPrecision::kFp32, "fp32"},
                                                                {IslandPrecision::kBf16, "bf16"}};

template <typename E, size_t N>
std::string_view NameOf(const ValueName<E> (&names)[N], E value) {
  for (const ValueName<E>& n : names) {
    if (n.value == value) return n.name;
  }
  return names[0].name;
}

template <typename E, size_t N>
std::optional<E> ValueNamed(const ValueName<E> (&names)[N], std::string_view text) {
  for (const ValueName<E>& n : names) {
    if (n.name == text) return n.value;
  }
  return std::nullopt;
}

// One of two values by name; else "expected A or B, got 'text'".
template <typename E>
absl::StatusOr<E> ParseEitherOf(const ValueName<E> (&names)[2], std::string_view text) {
  if (std::optional<E> value = ValueNamed(names, text)) return *value;
  return absl::InvalidArgumentError(absl::StrCat("expected ", std::string(names[0].name), " or ",
                                                 std::string(names[1].name), ", got '",
                                                 std::string(text), "'"));
}

}  // namespace

std::string_view BroadcastName(Broadcast broadcast) { return NameOf(kBroadcastNames, broadcast); }

absl::StatusOr<Broadcast> ParseBroadcast(std::string_view text) {
  return ParseEitherOf(kBroadcastNames, text);
}

std::string_view PrecisionName(Precision precision) { return NameOf(kPrecisionNames, precision); }

absl::StatusOr<Precision> ParsePrecision(std::string_view text) {
  if (std::optional<Precision> precision = ValueNamed(kPrecisionNames, text)) return *precision;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown precision '", std::string(text), "' (expected fp32, fp16 or bf16)"));
}

std::string_view Fp16IslandsName(Fp16Islands islands) { return NameOf(kFp16IslandsNames, islands); }

absl::StatusOr<Fp16Islands> ParseFp16Islands(std::string_view text) {
  return ParseEitherOf(kFp16IslandsNames, text);
}

std::string_view IslandPrecisionName(IslandPrecision precision) {
  return NameOf(kIslandPrecisionNames, precision);
}

absl::StatusOr<IslandPrecision> ParseIslandPrecision(std::string_view text) {
  return ParseEitherOf(kIslandPrecisionNames, text);
}

bool FinishRewrite(PassContext& ctx, bool validate) {
  Rewriter& rewriter = ctx.rewriter;
  // The validator follows the graph through the rewriter's commits and rollbacks.
  assert(ctx.validator == nullptr || rewriter.observer() == ctx.validator);
  if (ctx.validator == nullptr || !validate) {
    rewriter.Commit();
    return true;
  }
  absl::StatusOr<double> error = ctx.validator->Measure(rewriter);
  if (!error.ok()) {
    rewriter.Rollback(absl::StrCat("could not validate: ", error.status().message()));
    return false;
  }
  const bool precision = ctx.validator->last_changes_precision();
  const bool held = *error <= ctx.validator->tolerance;
  std::string judged;
  if (!precision && !held && ctx.outputs_judged) {
    absl::StatusOr<OutputsJudgement> outputs = ctx.validator->JudgeOutputs(rewriter);
    if (!outputs.ok()) {
      rewriter.Rollback(absl::StrCat("could not judge the outputs: ", outputs.status().message()));
      return false;
    }
    if (!outputs->meets) {
      rewriter.Rollback(absl::StrFormat(
          "changed outputs beyond the criteria: %s (its own values change by %.3g of their "
          "range)",
          outputs->worst, *error));
      rewriter.records().back().max_error = *error;
      return false;
    }
    judged = absl::StrFormat(
        "its own values change by %.3g of their range; the outputs meet the criteria (%s)", *error,
        outputs->worst);
  } else if (!precision && !held) {
    rewriter.Rollback(absl::StrFormat("changed outputs: error %.3g > tolerance %.3g", *error,
                                      ctx.validator->tolerance));
    rewriter.records().back().max_error = *error;
    return false;
  }
  RewriteRecord& record = rewriter.Commit();
  record.max_error = *error;
  if (!judged.empty() && record.note.empty()) record.note = judged;
  if (precision && record.note.empty()) {
    // A negative error: the validator measures the change end to end, on the file written.
    record.note = *error < 0 ? "changes precision: error measured end to end, on the file written"
                             : "changes precision: error measured";
  }
  return true;
}

}  // namespace ovfix::rules
