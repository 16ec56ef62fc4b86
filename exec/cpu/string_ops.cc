// The text operators StringNormalizer (opset 10) and TfIdfVectorizer (opset 9).
//
// StringNormalizer drops the stop words from a [C] or [1, C] string tensor (compared with or
// without case) and changes the case of what remains; when nothing remains the output holds
// one empty string, [1] or [1, 1]. Case is changed for ASCII letters only: other characters
// (and the bytes of multi-byte UTF-8 sequences) pass through unchanged.
//
// TfIdfVectorizer counts, in each row of a [C] or [N, C] input, the n-grams of its pool: an
// n-gram is n items taken skip + 1 apart for skip in [0, max_skip_count]. Unigrams do not
// depend on the skip and are counted once. Counts land at the n-gram's ngram_indexes entry
// and are then weighted: TF keeps counts, IDF gives weight (1 without weights) where the
// count is not zero, TFIDF multiplies the two.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// ---- StringNormalizer ----

absl::Status StringNormalizer(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("expects the input X");
  const Tensor& x = ctx.input(0);
  if (x.type() != DataType::kString) {
    return ctx.Error("X must be a string tensor, got ", DescribeTensor(x));
  }
  if (!(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1))) {
    return ctx.Error("X must be [C] or [1, C], got ", DescribeTensor(x));
  }
  const std::string action = ctx.node.GetString("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER") {
    return ctx.Error("case_change_action must be NONE, LOWER or UPPER, got \"", action, "\"");
  }
  const bool case_sensitive = ctx.node.GetInt("is_case_sensitive", 0) != 0;
  auto key = [&](const std::string& s) { return case_sensitive ? s : absl::AsciiStrToLower(s); };
  absl::flat_hash_set<std::string> stopwords;
  for (const std::string& word : ctx.node.GetStrings("stopwords")) stopwords.insert(key(word));

  std::vector<std::string> kept;
  for (const std::string& s : x.strings()) {
    if (stopwords.contains(key(s))) continue;
    if (action == "LOWER") {
      kept.push_back(absl::AsciiStrToLower(s));
    } else if (action == "UPPER") {
      kept.push_back(absl::AsciiStrToUpper(s));
    } else {
      kept.push_back(s);
    }
  }
  if (kept.empty()) kept.emplace_back();
  std::vector<int64_t> dims = {static_cast<int64_t>(kept.size())};
  if (x.rank() == 2) dims.insert(dims.begin(), 1);
  ctx.outputs[0] = Tensor(std::move(dims), std::move(kept));
  return absl::OkStatus();
}

// ---- TfIdfVectorizer ----

// Items are compared as int64: integers as themselves, strings by their index in the pool
// (-1 for a string the pool does not hold, which no n-gram contains).
using NgramMap = absl::flat_hash_map<std::vector<int64_t>, int64_t>;  // n-gram -> output index

struct TfIdfConfig {
  int64_t min_n = 0, max_n = 0, max_skip = 0;
  std::string mode;
  NgramMap ngrams;
  std::vector<float> weights;  // per output index; empty: all 1
  int64_t output_size = 0;
  absl::flat_hash_map<std::string, int64_t> string_ids;
};

absl::StatusOr<TfIdfConfig> ReadTfIdfConfig(const KernelContext& ctx) {
  TfIdfConfig c;
  c.min_n = ctx.node.GetInt("min_gram_length", 0);
  c.max_n = ctx.node.GetInt("max_gram_length", 0);
  c.max_skip = ctx.node.GetInt("max_skip_count", 0);
  c.mode = ctx.node.GetString("mode");
  if (c.min_n < 1 || c.max_n < c.min_n || c.max_skip < 0) {
    return ctx.Error("needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  }
  if (c.mode != "TF" && c.mode != "IDF" && c.mode != "TFIDF") {
    return ctx.Error("mode must be TF, IDF or TFIDF, got \"", c.mode, "\"");
  }
  const std::vector<int64_t> counts = ctx.node.GetInts("ngram_counts");
  const std::vector<int64_t> indexes = ctx.node.GetInts("ngram_indexes");
  std::vector<int64_t> pool = ctx.node.GetInts("pool_int64s");
  if (ctx.node.HasAttribute("pool_strings")) {
    for (const std::string& s : ctx.node.GetStrings("pool_strings")) {
      auto [it, inserted] = c.string_ids.try_emplace(s, (int64_t)c.string_ids.size());
      pool.push_back(it->second);
    }
  }
  c.weights = ctx.node.GetFloats("weights");
  // Pool entries counts[k] .. counts[k+1] (or the pool's end) are (k+1)-grams.
  int64_t ngram = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const int64_t n = static_cast<int64_t>(k) + 1;
    const int64_t begin = counts[k];
    const int64_t end = k + 1 < counts.size() ? counts[k + 1] : (int64_t)pool.size();
    if (begin < 0 || end < begin || end > (int64_t)pool.size() || (end - begin) % n != 0) {
      return ctx.Error("ngram_counts do not divide the pool into ", n, "-grams");
    }
    for (int64_t i = begin; i < end; i += n, ++ngram) {
      if (ngram >= (int64_t)indexes.size() || indexes[ngram] < 0) {
        return ctx.Error("ngram_indexes has no valid entry for n-gram ", ngram);
      }
      c.ngrams[std::vector<int64_t>(pool.begin() + i, pool.begin() + i + n)] = indexes[ngram];
      c.output_size = std::max(c.output_size, indexes[ngram] + 1);
    }
  }
  if (!c.weights.empty() && (int64_t)c.weights.size() < c.output_size) {
    return ctx.Error("weights has ", c.weights.size(), " entries, expected ", c.output_size);
  }
  return c;
}

std::vector<int64_t> ItemIds(const TfIdfConfig& c, const Tensor& x) {
  std::vector<int64_t> ids(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (x.type() == DataType::kString) {
      auto it = c.string_ids.find(x.strings()[i]);
      ids[i] = it == c.string_ids.end() ? -1 : it->second;
    } else {
      ids[i] = x.GetAsInt64(static_cast<int64_t>(i));
    }
  }
  return ids;
}

// Adds the counts of one row's n-grams into `out` (output_size entries).
void CountRow(const TfIdfConfig& c, const int64_t* row, int64_t length, float* out) {
  std::vector<int64_t> gram;
  for (int64_t skip = 0; skip <= c.max_skip; ++skip) {
    const int64_t step = skip + 1;
    const int64_t min_n = skip > 0 ? std::max<int64_t>(c.min_n, 2) : c.min_n;
    for (int64_t start = 0; start < length; ++start) {
      for (int64_t n = min_n; n <= c.max_n && start + (n - 1) * step < length; ++n) {
        gram.clear();
        for (int64_t j = 0; j < n; ++j) gram.push_back(row[start + j * step]);
        auto it = c.ngrams.find(gram);
        if (it != c.ngrams.end()) out[it->second] += 1.0f;
      }
    }
  }
}

absl::Status TfIdfVectorizer(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("expects the input X");
  const Tensor& x = ctx.input(0);
  if (x.type() != DataType::kString && x.type() != DataType::kInt32 &&
      x.type() != DataType::kInt64) {
    return ctx.Error("X must be string, int32 or int64, got ", DescribeTensor(x));
  }
  if (x.rank() != 1 && x.rank() != 2) {
    return ctx.Error("X must be [C] or [N, C], got ", DescribeTensor(x));
  }
  OVFIX_ASSIGN_OR_RETURN(TfIdfConfig c, ReadTfIdfConfig(ctx));
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
  const int64_t length = x.rank() == 2 ? x.dim(1) : x.dim(0);
  std::vector<int64_t> dims = {c.output_size};
  if (x.rank() == 2) dims.insert(dims.begin(), rows);
  Tensor& y = ctx.Output(0, DataType::kFloat, dims);
  const std::vector<int64_t> ids = ItemIds(c, x);
  for (int64_t r = 0; r < rows; ++r) {
    float* out = y.data<float>() + r * c.output_size;
    CountRow(c, ids.data() + r * length, length, out);
    for (int64_t i = 0; i < c.output_size; ++i) {
      const float weight = c.weights.empty() ? 1.0f : c.weights[i];
      if (c.mode == "IDF") {
        out[i] = out[i] > 0 ? weight : 0.0f;
      } else if (c.mode == "TFIDF") {
        out[i] *= weight;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddStringKernels(std::vector<KernelDef>& table) {
  table.push_back(
      {"", "StringNormalizer", 10, kLatestOpset, &StringNormalizer, Float16Mode::kNative});
  table.push_back({"", "TfIdfVectorizer", 9, kLatestOpset, &TfIdfVectorizer, Float16Mode::kNative});
}

}  // namespace ovfix::exec
