// The uint8 x int8 dot-product micro-kernel of AVX-512 VNNI (vpdpbusd: four byte products
// summed into each int32 lane, exact, no saturation) and the packing it reads, shared by the
// integer convolution (conv_integer_vnni.cc) and MatMulInteger / QLinearMatMul
// (quantize_ops.cc). Callers check IntegerConvVnniAvailable() first.
//
// Layouts: A (the int8 operand) in panels of kMr rows, each panel `quads` steps of kMr rows
// x 4 bytes of K; B (the uint8 operand) in panels of kNr columns, each `quads` steps of kNr
// columns x 4 bytes of K. K is padded to a multiple of 4 with zeros in both.
#pragma once

#include <cstdint>

namespace ovfix::exec::vnni {

constexpr int kMr = 8;   // rows of A per tile
constexpr int kNr = 32;  // columns of B per tile (two zmm of 16 int32)

// Packs four rows of B (k = 4q .. 4q+3, row stride `ld` bytes, each with at least
// panels * kNr readable bytes) into step q of `panels` B panels: panel p goes to
// out + p * panel_stride.
void InterleaveQuad(const uint8_t* rows, int64_t ld, int64_t panels, int64_t panel_stride,
                    uint8_t* out);

// Packs step q of one B panel from four rows of B given by their own pointers (k = 4q ..
// 4q+3), kNr readable bytes each, to out (kNr * 4 bytes).
void InterleaveQuadRows(const uint8_t* r0, const uint8_t* r1, const uint8_t* r2, const uint8_t* r3,
                        uint8_t* out);

// Packs all steps of one B panel whose row k is the kNr bytes at base + offsets[k] (k < depth;
// rows past depth are zeros): `out` gets (depth + 3) / 4 * kNr * 4 bytes.
void PackPanelFromRows(const uint8_t* base, const int64_t* offsets, int64_t depth, uint8_t* out);

// C[rows x cols] (row stride ldc) = A panel . B panel over `quads` steps: the raw byte
// products, no zero points.
void DotTile(int64_t quads, const int8_t* a, const uint8_t* b, int32_t* c, int64_t ldc, int rows,
             int cols);

// How DotTileRequantize turns a tile's sums into bytes; the pointers are the tile's first row
// (and first column). For row r and column c:
//   v = float(sum + offsets[r] - row_zeros[r] * column_sums[c]) * multipliers[r],
//   byte = round_half_even(clamp(v, low, high)) + zero (NaN gives low),
// which is quantize_math.h's Quantize when low and high are the type's bounds less zero.
struct TileRequantization {
  const int32_t* offsets;      // per row (bias and the zero-point constant)
  const int32_t* row_zeros;    // per row, or null where no column term is needed
  const int32_t* column_sums;  // per column, read where row_zeros is not null
  const float* multipliers;    // per row
  float low, high;
  int32_t zero;
};

// DotTile's products requantized to bytes in registers: y[rows x cols] (row stride ldy).
void DotTileRequantize(int64_t quads, const int8_t* a, const uint8_t* b,
                       const TileRequantization& q, uint8_t* y, int64_t ldy, int rows, int cols);

}  // namespace ovfix::exec::vnni
