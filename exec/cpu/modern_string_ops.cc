// String ops of opset 20:
//   RegexFullMatch-20: true where an element matches the RE2 `pattern` as a whole;
//   StringConcat-20: X[i] + Y[i] with numpy broadcasting;
//   StringSplit-20: each element split on `delimiter` into at most maxsplit + 1 pieces, as
//     Python's str.split does: with a delimiter, consecutive delimiters delimit empty strings
//     ("a--b" -> "a", "", "b") and "" gives one empty piece; without one (absent or ""),
//     runs of whitespace (ASCII space, \t, \n, \v, \f, \r) separate, leading and trailing
//     whitespace gives no piece ("" and "  " give none), and the unsplit rest after the
//     maxsplit-th split keeps its trailing whitespace. Y is X.shape + [most pieces], the
//     shorter rows padded with ""; Z holds each element's count of pieces.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/cpu/broadcast.h"
#include "exec/cpu/modern_ops.h"
#include "ir/status_macros.h"
#include "re2/re2.h"

namespace ovfix::exec {
namespace {

absl::Status RequireStrings(const KernelContext& ctx, const Tensor& t, const char* name) {
  if (t.type() != DataType::kString) {
    return ctx.Error(name, " must be a string tensor, got ", DescribeTensor(t));
  }
  return absl::OkStatus();
}

// ---- RegexFullMatch ----

// The compiled pattern, kept across runs of a session (the attribute does not change).
struct CompiledPattern {
  std::string pattern;
  std::unique_ptr<RE2> re;
};

absl::StatusOr<const RE2*> PatternOf(const KernelContext& ctx,
                                     std::unique_ptr<CompiledPattern>& local) {
  if (!ctx.node.HasAttribute("pattern")) return ctx.Error("needs the attribute pattern");
  const std::string pattern = ctx.node.GetString("pattern");
  if (ctx.state != nullptr && *ctx.state != nullptr) {
    const auto* cached = static_cast<const CompiledPattern*>(ctx.state->get());
    if (cached->pattern == pattern) return cached->re.get();
  }
  auto compiled = std::make_unique<CompiledPattern>();
  compiled->pattern = pattern;
  compiled->re = std::make_unique<RE2>(pattern, RE2::Quiet);
  if (!compiled->re->ok()) {
    return ctx.Error("pattern \"", pattern, "\" is not a valid RE2 regex: ", compiled->re->error());
  }
  const RE2* re = compiled->re.get();
  if (ctx.state != nullptr) {
    *ctx.state = std::shared_ptr<CompiledPattern>(std::move(compiled));
  } else {
    local = std::move(compiled);
  }
  return re;
}

absl::Status RegexFullMatchKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("expects the input X");
  const Tensor& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireStrings(ctx, x, "X"));
  std::unique_ptr<CompiledPattern> local;
  OVFIX_ASSIGN_OR_RETURN(const RE2* re, PatternOf(ctx, local));
  bool* y = ctx.OutputToOverwrite(0, DataType::kBool, x.dims()).data<bool>();
  const std::vector<std::string>& strings = x.strings();
  for (size_t i = 0; i < strings.size(); ++i) y[i] = RE2::FullMatch(strings[i], *re);
  return absl::OkStatus();
}

// ---- StringConcat ----

absl::Status StringConcatKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects the inputs X and Y");
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  OVFIX_RETURN_IF_ERROR(RequireStrings(ctx, a, "X"));
  OVFIX_RETURN_IF_ERROR(RequireStrings(ctx, b, "Y"));
  absl::StatusOr<BroadcastPlan> plan = BroadcastPlan::Make(a.dims(), b.dims());
  if (!plan.ok()) return ctx.Error(plan.status().message());
  std::vector<std::string> out(static_cast<size_t>(plan->output_size()));
  const int64_t stride_a = plan->run_stride(0);
  const int64_t stride_b = plan->run_stride(1);
  const std::vector<std::string>& sa = a.strings();
  const std::vector<std::string>& sb = b.strings();
  plan->ForEachRun(0, plan->output_size(),
                   [&](int64_t position, const int64_t* offsets, int64_t count) {
                     for (int64_t i = 0; i < count; ++i) {
                       const std::string& left = sa[offsets[0] + i * stride_a];
                       const std::string& right = sb[offsets[1] + i * stride_b];
                       std::string& z = out[position + i];
                       z.reserve(left.size() + right.size());
                       z.append(left).append(right);
                     }
                   });
  ctx.outputs[0] = Tensor(plan->output_dims(), std::move(out));
  return absl::OkStatus();
}

// ---- StringSplit ----

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// At most `maxsplit` splits (negative: no limit), as Python's s.split(None, maxsplit).
std::vector<std::string_view> SplitOnWhitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string_view> pieces;
  size_t i = 0;
  const size_t n = s.size();
  for (int64_t splits = 0; maxsplit < 0 || splits < maxsplit; ++splits) {
    while (i < n && IsSpace(s[i])) ++i;
    if (i == n) break;
    const size_t start = i;
    while (i < n && !IsSpace(s[i])) ++i;
    pieces.push_back(s.substr(start, i - start));
  }
  // Only left when the splits ran out: the rest, without its leading whitespace.
  while (i < n && IsSpace(s[i])) ++i;
  if (i < n) pieces.push_back(s.substr(i));
  return pieces;
}

// At most `maxsplit` splits (negative: no limit), as Python's s.split(delimiter, maxsplit).
std::vector<std::string_view> SplitOnDelimiter(std::string_view s, std::string_view delimiter,
                                               int64_t maxsplit) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  for (int64_t splits = 0; maxsplit < 0 || splits < maxsplit; ++splits) {
    const size_t at = s.find(delimiter, start);
    if (at == std::string_view::npos) break;
    pieces.push_back(s.substr(start, at - start));
    start = at + delimiter.size();
  }
  pieces.push_back(s.substr(start));
  return pieces;
}

absl::Status StringSplitKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("expects the input X");
  const Tensor& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireStrings(ctx, x, "X"));
  const std::string delimiter = ctx.node.GetString("delimiter", "");
  const int64_t maxsplit = ctx.node.GetInt("maxsplit", -1);
  const std::vector<std::string>& strings = x.strings();
  std::vector<std::vector<std::string_view>> split(strings.size());
  size_t widest = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    split[i] = delimiter.empty() ? SplitOnWhitespace(strings[i], maxsplit)
                                 : SplitOnDelimiter(strings[i], delimiter, maxsplit);
    widest = std::max(widest, split[i].size());
  }
  std::vector<std::string> pieces(strings.size() * widest);
  for (size_t i = 0; i < split.size(); ++i) {
    for (size_t k = 0; k < split[i].size(); ++k) pieces[i * widest + k] = std::string(split[i][k]);
  }
  std::vector<int64_t> dims = x.dims();
  dims.push_back(static_cast<int64_t>(widest));
  ctx.outputs[0] = Tensor(std::move(dims), std::move(pieces));
  if (ctx.outputs.size() > 1 && ctx.node.output(1) != nullptr) {
    int64_t* counts = ctx.OutputToOverwrite(1, DataType::kInt64, x.dims()).data<int64_t>();
    for (size_t i = 0; i < split.size(); ++i) counts[i] = static_cast<int64_t>(split[i].size());
  }
  return absl::OkStatus();
}

}  // namespace

void AddModernStringKernels(std::vector<KernelDef>& table) {
  table.push_back(
      {"", "RegexFullMatch", 20, kLatestOpset, &RegexFullMatchKernel, Float16Mode::kNative});
  table.push_back(
      {"", "StringConcat", 20, kLatestOpset, &StringConcatKernel, Float16Mode::kNative});
  table.push_back({"", "StringSplit", 20, kLatestOpset, &StringSplitKernel, Float16Mode::kNative});
}

}  // namespace ovfix::exec
