#include "rules/pass.h"

#include <cassert>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ovfix::rules {

std::string_view BroadcastName(ConvertOptions::Broadcast broadcast) {
  return broadcast == ConvertOptions::Broadcast::kFull ? "full" : "rank";
}

absl::StatusOr<ConvertOptions::Broadcast> ParseBroadcast(std::string_view text) {
  if (text == "rank") return ConvertOptions::Broadcast::kRank;
  if (text == "full") return ConvertOptions::Broadcast::kFull;
  return absl::InvalidArgumentError(
      absl::StrCat("expected rank or full, got '", std::string(text), "'"));
}

std::string_view PrecisionName(ConvertOptions::Precision precision) {
  switch (precision) {
    case ConvertOptions::Precision::kFp16:
      return "fp16";
    case ConvertOptions::Precision::kBf16:
      return "bf16";
    case ConvertOptions::Precision::kFp32:
      break;
  }
  return "fp32";
}

absl::StatusOr<ConvertOptions::Precision> ParsePrecision(std::string_view text) {
  if (text == "fp32") return ConvertOptions::Precision::kFp32;
  if (text == "fp16") return ConvertOptions::Precision::kFp16;
  if (text == "bf16") return ConvertOptions::Precision::kBf16;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown precision '", std::string(text), "' (expected fp32, fp16 or bf16)"));
}

std::string_view Fp16IslandsName(ConvertOptions::Fp16Islands islands) {
  return islands == ConvertOptions::Fp16Islands::kMagnitude ? "magnitude" : "structural";
}

absl::StatusOr<ConvertOptions::Fp16Islands> ParseFp16Islands(std::string_view text) {
  if (text == "structural") return ConvertOptions::Fp16Islands::kStructural;
  if (text == "magnitude") return ConvertOptions::Fp16Islands::kMagnitude;
  return absl::InvalidArgumentError(
      absl::StrCat("expected structural or magnitude, got '", std::string(text), "'"));
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
  if (!precision && !held) {
    rewriter.Rollback(absl::StrFormat("changed outputs: error %.3g > tolerance %.3g", *error,
                                      ctx.validator->tolerance));
    rewriter.records().back().max_error = *error;
    return false;
  }
  RewriteRecord& record = rewriter.Commit();
  record.max_error = *error;
  if (precision && record.note.empty()) {
    // A negative error: the validator measures the change end to end, on the file written.
    record.note = *error < 0 ? "changes precision: error measured end to end, on the file written"
                             : "changes precision: error measured";
  }
  return true;
}

}  // namespace ovfix::rules
