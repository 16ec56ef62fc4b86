#include "exec/cpu/conv_winograd.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ovfix::exec {
namespace {

// A run's transformed patches and products are sized to stay in L2 (a core's 1 MiB here)
// while the 16 products go through them: this many floats of each.
constexpr int64_t kRunFloats = int64_t{96} * 1024;
// Runs of tiles: at least this many (a thread's first products repay its transforms), at most
// this many (longer runs leave the cache).
constexpr int64_t kMinRunTiles = 24, kMaxRunTiles = 192;
// Below this many multiply-adds (of the direct convolution) it runs on the calling thread.
constexpr int64_t kMinParallelMacs = int64_t{1} << 19;

// V = B^T d B for `channels` channels of one tile: src[i * 4 + j] is the pixel of patch row i,
// column j (its channels contiguous, or zeros outside the image); element xi of the transform
// goes to dst + xi * xi_stride, channel after channel.
__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic"))) void
InputTransform(const float* const* src, int64_t channels, float* dst, int64_t xi_stride) {
  const float *d00 = src[0], *d01 = src[1], *d02 = src[2], *d03 = src[3];
  const float *d10 = src[4], *d11 = src[5], *d12 = src[6], *d13 = src[7];
  const float *d20 = src[8], *d21 = src[9], *d22 = src[10], *d23 = src[11];
  const float *d30 = src[12], *d31 = src[13], *d32 = src[14], *d33 = src[15];
  float* v[16];
  for (int xi = 0; xi < 16; ++xi) v[xi] = dst + xi * xi_stride;
#pragma GCC ivdep
  for (int64_t c = 0; c < channels; ++c) {
    // B^T d: the patch's rows combined.
    const float r00 = d00[c] - d20[c], r01 = d01[c] - d21[c], r02 = d02[c] - d22[c],
                r03 = d03[c] - d23[c];
    const float r10 = d10[c] + d20[c], r11 = d11[c] + d21[c], r12 = d12[c] + d22[c],
                r13 = d13[c] + d23[c];
    const float r20 = d20[c] - d10[c], r21 = d21[c] - d11[c], r22 = d22[c] - d12[c],
                r23 = d23[c] - d13[c];
    const float r30 = d10[c] - d30[c], r31 = d11[c] - d31[c], r32 = d12[c] - d32[c],
                r33 = d13[c] - d33[c];
    // (B^T d) B: each row's columns combined.
    v[0][c] = r00 - r02, v[1][c] = r01 + r02, v[2][c] = r02 - r01, v[3][c] = r01 - r03;
    v[4][c] = r10 - r12, v[5][c] = r11 + r12, v[6][c] = r12 - r11, v[7][c] = r11 - r13;
    v[8][c] = r20 - r22, v[9][c] = r21 + r22, v[10][c] = r22 - r21, v[11][c] = r21 - r23;
    v[12][c] = r30 - r32, v[13][c] = r31 + r32, v[14][c] = r32 - r31, v[15][c] = r31 - r33;
  }
}

// Y = A^T M A for `maps` maps of one tile: element xi of the products at m + xi * xi_stride
// (map after map); output (r, s) of the 2x2 block goes to dst[r * 2 + s], map after map.
__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic"))) void
OutputTransform(const float* m, int64_t xi_stride, int64_t maps, float* const* dst) {
  const float* e[16];
  for (int xi = 0; xi < 16; ++xi) e[xi] = m + xi * xi_stride;
  float *y00 = dst[0], *y01 = dst[1], *y10 = dst[2], *y11 = dst[3];
#pragma GCC ivdep
  for (int64_t k = 0; k < maps; ++k) {
    // A^T M: rows 0 + 1 + 2 and 1 - 2 - 3.
    const float s00 = e[0][k] + e[4][k] + e[8][k], s01 = e[1][k] + e[5][k] + e[9][k],
                s02 = e[2][k] + e[6][k] + e[10][k], s03 = e[3][k] + e[7][k] + e[11][k];
    const float s10 = e[4][k] - e[8][k] - e[12][k], s11 = e[5][k] - e[9][k] - e[13][k],
                s12 = e[6][k] - e[10][k] - e[14][k], s13 = e[7][k] - e[11][k] - e[15][k];
    // (A^T M) A: the same over columns.
    y00[k] = s00 + s01 + s02;
    y01[k] = s01 - s02 - s03;
    y10[k] = s10 + s11 + s12;
    y11[k] = s11 - s12 - s13;
  }
}

// The image's pixels channels-last: `image` itself, or a copy of its planes.
const float* ChannelsLastImage(const float* image, int64_t channels, const Spatial3& s,
                               bool channels_last, ThreadPool* pool) {
  if (channels_last) return image;
  const int64_t plane = s.in[1] * s.in[2];
  thread_local std::vector<float> copy;
  copy.resize(plane * channels);
  float* const dst = copy.data();
  // Runs of 64 pixels (whole in-register transposes of 8 or 16 pixels), shared by the pool.
  // Copied a row at a time, a float at a time a pixel's width apart, the copy was a third of
  // each of DenseNet's 3x3 convolutions (128 channels in planes at 16x16: 0.26 -> 0.17 ms).
  constexpr int64_t kRun = 64;
  ParallelFor(plane * channels >= (int64_t{1} << 16) ? pool : nullptr, (plane + kRun - 1) / kRun, 1,
              [&](int64_t begin, int64_t end) {
                const int64_t p0 = begin * kRun, p1 = std::min(plane, end * kRun);
                CopyPixelsChannelsLast(image + p0, channels, plane, p1 - p0, dst + p0 * channels);
              });
  return dst;
}

// Columns [first, ...) of a packed B (first a multiple of the GEMM tile's columns).
class ColumnsFrom : public BSource {
 public:
  ColumnsFrom(const BSource& b, int64_t first) : b_(b), first_(first) {}
  const float* Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                    float* scratch) const override {
    return b_.Pack(k0, kc, first_ + n0, nc, nr, scratch);
  }
  bool prepacked() const override { return b_.prepacked(); }

 private:
  const BSource& b_;
  int64_t first_;
};

}  // namespace

bool WinogradConvApplies(const Spatial3& s, int64_t group, int64_t channels, int64_t maps) {
  const bool two_d =
      s.in[0] == 1 && s.kernel[0] == 1 && s.out[0] == 1 && s.pad[0] == 0 && s.stride[0] == 1;
  const bool kernel = s.kernel[1] == 3 && s.kernel[2] == 3 && s.stride[1] == 1 &&
                      s.stride[2] == 1 && s.dilation[1] == 1 && s.dilation[2] == 1;
  // The pads at the start, and those at the end that the output's size implies.
  const int64_t pad_bottom = s.out[1] + 2 - s.in[1] - s.pad[1];
  const int64_t pad_right = s.out[2] + 2 - s.in[2] - s.pad[2];
  const bool pads = std::min({s.pad[1], s.pad[2], pad_bottom, pad_right}) >= 0 &&
                    std::max({s.pad[1], s.pad[2], pad_bottom, pad_right}) <= 2;
  return two_d && kernel && pads && group == 1 && channels >= 8 && maps >= 8 && s.out[1] >= 7 &&
         s.out[2] >= 7;
}

WinogradWeights::WinogradWeights(const float* w, int64_t maps, int64_t channels)
    : maps_(maps), channels_(channels) {
  // U = G g G^T for each (map, channel), in double, into 16 matrices of channels x maps: maps
  // innermost, so that each of the 16 is written in order (the weights are read 9 floats at a
  // stride instead, a pass that the L2 holds).
  std::vector<float> u(16 * channels * maps);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t k = 0; k < maps; ++k) {
      const float* g = w + (k * channels + c) * 9;
      double gg[4][3];  // G g: rows of g combined
      for (int j = 0; j < 3; ++j) {
        const double g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
        gg[0][j] = g0;
        gg[1][j] = 0.5 * (g0 + g1 + g2);
        gg[2][j] = 0.5 * (g0 - g1 + g2);
        gg[3][j] = g2;
      }
      for (int i = 0; i < 4; ++i) {
        const double t0 = gg[i][0], t1 = gg[i][1], t2 = gg[i][2];
        const double row[4] = {t0, 0.5 * (t0 + t1 + t2), 0.5 * (t0 - t1 + t2), t2};
        for (int j = 0; j < 4; ++j) {
          u[((i * 4 + j) * channels + c) * maps + k] = static_cast<float>(row[j]);
        }
      }
    }
  }
  for (int xi = 0; xi < 16; ++xi) {
    elements_[xi] = PackedB(u.data() + xi * channels * maps, maps, false, channels, maps);
  }
}

void WinogradConv(const WinogradWeights& weights, const float* image, const Spatial3& s,
                  const GemmEpilogue& epilogue, float* out, ThreadPool* pool, ChannelsLastIo io) {
  const int64_t channels = weights.channels(), maps = weights.maps();
  const int64_t in_h = s.in[1], in_w = s.in[2], out_h = s.out[1], out_w = s.out[2];
  const int64_t pad_top = s.pad[1], pad_left = s.pad[2];
  const int64_t tiles_w = (out_w + 1) / 2, tiles = (out_h + 1) / 2 * tiles_w;
  const int64_t positions = out_h * out_w;
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  const bool parallel = threads > 1 && maps * channels * 9 * positions >= kMinParallelMacs;
  ThreadPool* const used = parallel ? pool : nullptr;

  const float* pixels = ChannelsLastImage(image, channels, s, io.input_channels_last, used);
  // Patches reach past the image by up to two pixels: those read zeros.
  thread_local std::vector<float> zeros;
  zeros.assign(channels, 0.0f);
  const float* const zero = zeros.data();  // the calling thread's, read by every worker
  auto pixel = [&](int64_t h, int64_t w) {
    return h < 0 || h >= in_h || w < 0 || w >= in_w ? zero : pixels + (h * in_w + w) * channels;
  };
  // An output in planes is first made channels-last (positions x maps), then transposed with
  // the bias and activation.
  thread_local std::vector<float> product;
  if (!io.output_channels_last) product.resize(positions * maps);
  float* const result = io.output_channels_last ? out : product.data();

  // Runs of whole GEMM tiles of rows (the last tile of the image aside), as many as fit the
  // cache, then as many as the threads share evenly. With too few tiles for that (a 14x14
  // map has 7 GEMM tiles of rows, a 7x7 one 3) the threads share the maps instead, each
  // reading its columns of the transformed weights only.
  const GemmGeometry& gemm = CurrentGemmGeometry();
  const int64_t mr = gemm.mr, row_tiles = (tiles + mr - 1) / mr;
  const int64_t map_panels = (maps + gemm.nr - 1) / gemm.nr;
  const int64_t fit =
      std::clamp(kRunFloats / (16 * std::max(channels, maps)), kMinRunTiles, kMaxRunTiles);
  int64_t runs = (tiles + fit - 1) / fit, map_parts = 1;
  if (used != nullptr && row_tiles >= 2 * threads) {
    runs = std::min(row_tiles, (std::max(runs, threads) + threads - 1) / threads * threads);
  } else if (used != nullptr) {
    runs = std::min(runs, row_tiles);
    map_parts = std::min(map_panels, (2 * threads + runs - 1) / runs);
  }
  ParallelForEach(used, runs * map_parts, [&](int64_t item) {
    const int64_t run = item / map_parts, part = item % map_parts;
    const int64_t t0 = row_tiles * run / runs * mr;
    const int64_t t1 = std::min(tiles, row_tiles * (run + 1) / runs * mr), count = t1 - t0;
    const int64_t n0 = map_panels * part / map_parts * gemm.nr;
    const int64_t n1 = std::min(maps, map_panels * (part + 1) / map_parts * gemm.nr);
    thread_local std::vector<float> transformed, products;
    transformed.resize(16 * count * channels);
    products.resize(16 * count * maps);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t h0 = (t / tiles_w) * 2 - pad_top, w0 = (t % tiles_w) * 2 - pad_left;
      const float* src[16];
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) src[i * 4 + j] = pixel(h0 + i, w0 + j);
      }
      InputTransform(src, channels, transformed.data() + (t - t0) * channels, count * channels);
    }
    const GemmEpilogue plain;
    for (int xi = 0; xi < 16; ++xi) {
      GemmRowsInPlace(transformed.data() + xi * count * channels, channels, count, channels,
                      ColumnsFrom(weights.element(xi), n0), n1 - n0,
                      products.data() + xi * count * maps + n0, maps, plain, nullptr);
    }
    thread_local std::vector<float> spill;  // outputs of a tile past the output's edge
    spill.resize(maps);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t oh = (t / tiles_w) * 2, ow = (t % tiles_w) * 2;
      float* dst[4];
      for (int r = 0; r < 2; ++r) {
        for (int c = 0; c < 2; ++c) {
          dst[r * 2 + c] = oh + r < out_h && ow + c < out_w
                               ? result + ((oh + r) * out_w + ow + c) * maps
                               : spill.data();
        }
      }
      float* maps_dst[4];
      for (int i = 0; i < 4; ++i) maps_dst[i] = dst[i] + n0;
      OutputTransform(products.data() + (t - t0) * maps + n0, count * maps, n1 - n0, maps_dst);
      if (!io.output_channels_last) continue;
      for (int i = 0; i < 4; ++i) {
        if (dst[i] == spill.data()) continue;
        const int64_t offset = dst[i] - out;
        AddBiasToMaps(dst[i], maps, 1, n0, n1, epilogue,
                      epilogue.residual != nullptr ? epilogue.residual + offset : nullptr, dst[i],
                      maps);
      }
    }
  });
  if (io.output_channels_last) return;
  // Into planes, a run of positions per item.
  const int64_t items = used != nullptr ? threads * 4 : 1;
  ParallelForEach(used, items, [&](int64_t item) {
    const int64_t p0 = positions * item / items, p1 = positions * (item + 1) / items;
    if (p0 < p1) {
      TransposeAddBiasMaps(result + p0 * maps, maps, p1 - p0, 0, maps, epilogue, out + p0,
                           positions);
    }
  });
}

}  // namespace ovfix::exec
