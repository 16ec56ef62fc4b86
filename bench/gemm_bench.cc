// The GEMM with packed weights (what a convolution or a MatMul by constant weights runs) against
// the core's own multiply-add peak, measured in the same run: each trial times the product, then
// a register-only loop of independent AVX2 multiply-adds, and reports the product's rate over
// the loop's (per thread). On a shared virtual machine whose clock and core come and go, the
// ratio of two neighbouring measurements moves less than either alone; the median and the 90th
// percentile over the trials are printed per shape.
//
//   build/bench/ovfix_bench_gemm [--threads 2] [--trials 200] [--residual] [--sets 8]
//                                [--weight-sets 8] [--shapes 3136x256x64,128x1536x384]
// --residual: the epilogue a ResNet block's last convolution runs (column bias, residual, Relu);
// --sets N: A, C and the residual rotate over N copies, so that they come from L3 or memory as
// between a model's layers rather than from the L2 of the trial before; --weight-sets N: so do
// the packed weights, from memory once their copies outgrow L3 (a transformer's last layers,
// whose 768 x 3072 weights a run reads once each). Shapes are M x N x K (rows of A, columns of
// B, depth).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "exec/cpu/gemm.h"
#include "exec/thread_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Twelve independent chains of AVX2 multiply-adds (two units of four cycles' latency need
// eight): `iterations` x 96 multiply-adds at the core's peak. Returns them.
__attribute__((target("avx2,fma"), noinline)) double PeakLoop(int64_t iterations, float* sink) {
  __m256 acc[12];
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(0.001f);
  for (int64_t k = 0; k < iterations; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm256_add_ps(sum, acc[i]);
  _mm256_storeu_ps(sink, sum);
  return static_cast<double>(iterations) * 12 * 8;
}

struct Shape {
  int64_t m, n, k;
};

bool ParseShapes(const std::string& list, std::vector<Shape>& shapes) {
  shapes.clear();
  size_t at = 0;
  while (at <= list.size()) {
    const size_t end = std::min(list.find(',', at), list.size());
    Shape s{};
    if (std::sscanf(list.substr(at, end - at).c_str(), "%ldx%ldx%ld", &s.m, &s.n, &s.k) != 3 ||
        s.m <= 0 || s.n <= 0 || s.k <= 0) {
      return false;
    }
    shapes.push_back(s);
    at = end + 1;
  }
  return !shapes.empty();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ovfix::exec;
  int threads = 2, trials = 200, sets = 1, weight_sets = 1;
  bool residual = false;
  // ResNet-50's 1x1 convolutions by stage, then BERT-base-like (MiniLM width) products.
  std::vector<Shape> shapes = {
      {3136, 256, 64},  {3136, 64, 256}, {784, 512, 128},  {784, 128, 512},  {196, 1024, 256},
      {196, 256, 1024}, {49, 2048, 512}, {128, 1152, 384}, {128, 1536, 384}, {128, 384, 1536}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--threads" && has_value) {
      threads = std::atoi(argv[++i]);
    } else if (arg == "--trials" && has_value) {
      trials = std::atoi(argv[++i]);
    } else if (arg == "--sets" && has_value) {
      sets = std::atoi(argv[++i]);
    } else if (arg == "--weight-sets" && has_value) {
      weight_sets = std::atoi(argv[++i]);
    } else if (arg == "--residual") {
      residual = true;
    } else if (arg == "--shapes" && has_value) {
      if (!ParseShapes(argv[++i], shapes)) {
        std::fprintf(stderr, "ovfix_bench_gemm: --shapes takes MxNxK[,MxNxK...]\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: ovfix_bench_gemm [--threads N] [--trials N] [--residual] [--sets N] "
                   "[--weight-sets N] [--shapes MxNxK,...]\n");
      return 2;
    }
  }
  if (threads < 1 || trials < 1 || sets < 1 || weight_sets < 1) {
    std::fprintf(stderr,
                 "ovfix_bench_gemm: --threads, --trials, --sets and --weight-sets must be "
                 "positive\n");
    return 2;
  }
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::fprintf(stderr, "ovfix_bench_gemm: the peak loop needs AVX2 and FMA\n");
    return 2;
  }
  ThreadPool pool(threads);
  std::printf("GEMM kernel %s, %d thread(s), %d trials%s, %d set(s) of buffers, %d of weights\n",
              CurrentGemmGeometry().name, threads, trials,
              residual ? ", bias + residual + Relu" : "", sets, weight_sets);
  std::printf("%-18s %10s %10s %12s %12s\n", "M x N x K", "best us", "GMAC/s", "of peak: med",
              "p90");
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  float sink[8];
  for (const Shape& s : shapes) {
    auto fill = [&](std::vector<float>& v) {
      for (float& x : v) x = uniform(rng);
    };
    std::vector<std::vector<float>> a(sets, std::vector<float>(s.m * s.k)),
        c(sets, std::vector<float>(s.m * s.n)), r(sets, std::vector<float>(s.m * s.n));
    for (int x = 0; x < sets; ++x) {
      fill(a[x]);
      fill(r[x]);
    }
    std::vector<float> b(s.k * s.n), bias(s.n);
    fill(bias);
    std::vector<PackedB> packed;
    for (int x = 0; x < weight_sets; ++x) {
      fill(b);
      packed.emplace_back(b.data(), s.n, false, s.k, s.n);
    }
    GemmEpilogue epilogue;
    if (residual) {
      epilogue.column_bias = bias.data();
      epilogue.clamp = true;
      epilogue.clamp_max = std::numeric_limits<float>::infinity();
    }
    const double macs = static_cast<double>(s.m) * s.n * s.k;
    // Each trial about a millisecond of products (the peak loop a little less).
    const int reps = static_cast<int>(std::clamp(2.0e7 * threads / macs, 1.0, 1000.0));
    std::vector<double> ratios;
    double best = 1e30;
    int use = 0, weights = 0;
    for (int t = 0; t < trials; ++t) {
      const Clock::time_point start = Clock::now();
      for (int i = 0; i < reps;
           ++i, use = (use + 1) % sets, weights = (weights + 1) % weight_sets) {
        epilogue.residual = residual ? r[use].data() : nullptr;
        GemmRowsInPlace(a[use].data(), s.k, s.m, s.k, packed[weights], s.n, c[use].data(), s.n,
                        epilogue, threads > 1 ? &pool : nullptr);
      }
      const double product_s = Seconds(start) / reps;
      const Clock::time_point peak_start = Clock::now();
      const double peak_macs = PeakLoop(100000, sink);
      const double peak_s = Seconds(peak_start);
      best = std::min(best, product_s);
      ratios.push_back(macs / product_s / threads / (peak_macs / peak_s));
    }
    std::sort(ratios.begin(), ratios.end());
    char name[64];
    std::snprintf(name, sizeof(name), "%ld x %ld x %ld", static_cast<long>(s.m),
                  static_cast<long>(s.n), static_cast<long>(s.k));
    std::printf("%-18s %10.1f %10.1f %12.3f %12.3f\n", name, best * 1e6, macs / best / 1e9,
                ratios[ratios.size() / 2], ratios[ratios.size() * 9 / 10]);
  }
  std::printf(
      "(of peak: the product's multiply-adds per second and thread over the peak loop's, "
      "measured right after it)\n");
  return 0;
}
