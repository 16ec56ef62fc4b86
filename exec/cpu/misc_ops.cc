// AddMiscKernels gathers the less common ops (the other groups live in the files named in
// exec/cpu/misc_kernels.h). Here: Det and the random generators.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "exec/cpu/misc_kernels.h"
#include "exec/kernel.h"
#include "ir/float16.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// Determinant by LU decomposition with partial pivoting, in double precision.
double Determinant(std::vector<double>& a, int64_t n) {
  double det = 1.0;
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r) {
      if (std::fabs(a[r * n + col]) > std::fabs(a[pivot * n + col])) pivot = r;
    }
    if (a[pivot * n + col] == 0.0) return 0.0;
    if (pivot != col) {
      for (int64_t c = 0; c < n; ++c) std::swap(a[pivot * n + c], a[col * n + c]);
      det = -det;
    }
    const double diagonal = a[col * n + col];
    det *= diagonal;
    for (int64_t r = col + 1; r < n; ++r) {
      const double factor = a[r * n + col] / diagonal;
      if (factor == 0.0) continue;
      for (int64_t c = col + 1; c < n; ++c) a[r * n + c] -= factor * a[col * n + c];
    }
  }
  return det;
}

absl::Status Det(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input X");
  const Tensor& x = ctx.input(0);
  const size_t rank = x.rank();
  if (rank < 2 || x.dim(rank - 1) != x.dim(rank - 2)) {
    return ctx.Error("input must be [..., M, M], got ", DescribeTensor(x));
  }
  if (x.type() != DataType::kFloat && x.type() != DataType::kDouble) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(x.type())));
  }
  const int64_t n = x.dim(rank - 1);
  const std::vector<int64_t> batch_dims(x.dims().begin(), x.dims().end() - 2);
  Tensor& y = ctx.Output(0, x.type(), batch_dims);
  std::vector<double> matrix(n * n);
  for (int64_t b = 0; b < y.numel(); ++b) {
    for (int64_t i = 0; i < n * n; ++i) matrix[i] = x.GetAsDouble(b * n * n + i);
    const double det = Determinant(matrix, n);
    if (x.type() == DataType::kFloat) {
      y.data<float>()[b] = static_cast<float>(det);
    } else {
      y.data<double>()[b] = det;
    }
  }
  return absl::OkStatus();
}

// Random ops. Values cannot match any other implementation's; shapes and types do. A `seed`
// attribute makes runs repeatable.
std::mt19937_64 MakeGenerator(const KernelContext& ctx) {
  std::optional<uint64_t> seed;
  if (ctx.node.HasAttribute("seed")) {
    const float value = ctx.node.GetFloat("seed", 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    seed = bits;
  }
  return RandomEngine(ctx, seed);
}

bool IsRandomOutputType(DataType type) {
  return type == DataType::kFloat || type == DataType::kDouble || type == DataType::kFloat16;
}

absl::StatusOr<DataType> RandomOutputType(const KernelContext& ctx, DataType fallback) {
  const int64_t dtype = ctx.node.GetInt("dtype", static_cast<int64_t>(fallback));
  if (dtype > std::numeric_limits<int32_t>::max() || dtype < 0 ||
      !IsKnownDataType(static_cast<int32_t>(dtype))) {
    return ctx.Error("invalid dtype ", dtype);
  }
  return static_cast<DataType>(dtype);
}

// Shared by RandomUniform/RandomNormal and their *Like forms.
absl::Status RunRandom(KernelContext& ctx, bool like, bool normal) {
  std::vector<int64_t> dims;
  DataType fallback = DataType::kFloat;
  if (like) {
    if (!ctx.has_input(0)) return ctx.Error("missing input");
    dims = ctx.input(0).dims();
    fallback = ctx.input(0).type();
  } else {
    if (!ctx.node.HasAttribute("shape")) return ctx.Error("missing shape attribute");
    dims = ctx.node.GetInts("shape");
    double total = 1;
    for (int64_t d : dims) {
      if (d < 0) return ctx.Error("shape must not be negative");
      total *= static_cast<double>(d);
    }
    if (total > 1e11) return ctx.Error("shape too large");
  }
  OVFIX_ASSIGN_OR_RETURN(DataType type, RandomOutputType(ctx, fallback));
  if (!IsRandomOutputType(type)) {
    return ctx.Error("unsupported dtype ", std::string(DataTypeName(type)));
  }
  std::mt19937_64 generator = MakeGenerator(ctx);
  Tensor& y = ctx.Output(0, type, dims);
  if (normal) {
    std::normal_distribution<double> distribution(ctx.node.GetFloat("mean", 0.0f),
                                                  std::fabs(ctx.node.GetFloat("scale", 1.0f)));
    for (int64_t i = 0; i < y.numel(); ++i) y.SetFromDouble(i, distribution(generator));
  } else {
    const double low = ctx.node.GetFloat("low", 0.0f), high = ctx.node.GetFloat("high", 1.0f);
    if (!(low <= high)) return ctx.Error("low must not exceed high");
    std::uniform_real_distribution<double> distribution(low, high);
    for (int64_t i = 0; i < y.numel(); ++i) y.SetFromDouble(i, distribution(generator));
  }
  return absl::OkStatus();
}

absl::Status RandomUniform(KernelContext& ctx) { return RunRandom(ctx, false, false); }
absl::Status RandomNormal(KernelContext& ctx) { return RunRandom(ctx, false, true); }
absl::Status RandomUniformLike(KernelContext& ctx) { return RunRandom(ctx, true, false); }
absl::Status RandomNormalLike(KernelContext& ctx) { return RunRandom(ctx, true, true); }

absl::Status Bernoulli(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input");
  const Tensor& x = ctx.input(0);
  if (!IsRandomOutputType(x.type())) {
    return ctx.Error("unsupported input type ", std::string(DataTypeName(x.type())));
  }
  OVFIX_ASSIGN_OR_RETURN(DataType type, RandomOutputType(ctx, x.type()));
  if (type == DataType::kString || type == DataType::kComplex64 || type == DataType::kComplex128 ||
      type == DataType::kUndefined) {
    return ctx.Error("unsupported dtype ", std::string(DataTypeName(type)));
  }
  std::mt19937_64 generator = MakeGenerator(ctx);
  std::uniform_real_distribution<double> distribution(0.0, 1.0);
  Tensor& y = ctx.Output(0, type, x.dims());
  for (int64_t i = 0; i < y.numel(); ++i) {
    y.SetFromDouble(i, distribution(generator) < x.GetAsDouble(i) ? 1.0 : 0.0);
  }
  return absl::OkStatus();
}

}  // namespace

std::mt19937_64 RandomEngine(const KernelContext& ctx, std::optional<uint64_t> node_seed) {
  if (node_seed) return std::mt19937_64(*node_seed);
  if (ctx.random_seed != 0) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the output name: stable everywhere
    const Value* out = ctx.node.outputs().empty() ? nullptr : ctx.node.output(0);
    for (char c : out != nullptr ? out->name() : std::string()) {
      h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    }
    return std::mt19937_64(ctx.random_seed ^ h);
  }
  std::random_device device;
  return std::mt19937_64((static_cast<uint64_t>(device()) << 32) | device());
}

void AddMiscKernels(std::vector<KernelDef>& table) {
  AddResizeKernels(table);
  AddEinsumKernels(table);
  AddQuantizeKernels(table);
  AddGridSampleKernels(table);
  table.push_back({"", "Det", 11, kLatestOpset, Det, Float16Mode::kAsFloat});
  // The random ops write float16 themselves (their output type comes from an attribute).
  table.push_back({"", "Bernoulli", 15, kLatestOpset, Bernoulli, Float16Mode::kNative});
  table.push_back({"", "RandomUniform", 1, kLatestOpset, RandomUniform, Float16Mode::kNative});
  table.push_back({"", "RandomNormal", 1, kLatestOpset, RandomNormal, Float16Mode::kNative});
  table.push_back(
      {"", "RandomUniformLike", 1, kLatestOpset, RandomUniformLike, Float16Mode::kNative});
  table.push_back(
      {"", "RandomNormalLike", 1, kLatestOpset, RandomNormalLike, Float16Mode::kNative});
}

}  // namespace ovfix::exec
