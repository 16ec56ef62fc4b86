// The discrete Fourier transforms DFT (opsets 17 and 20: the axis moved from an attribute to
// input 2) and STFT (opset 17).
//
// DFT transforms [batch, d1, ..., dN, 1 or 2] (the last axis: real, or real and imaginary)
// along `axis` into [..., 2]: X[k] = sum_j x[j] e^(-2 pi i j k / n), n = dft_length (the
// signal zero-padded or cut to it; default: its length). `inverse` takes the conjugate
// exponent and divides by n; `onesided` keeps bins 0 .. n/2, the others being the conjugates
// of these for a real signal.
//
// STFT cuts [batch, length, 1 or 2] into frames of frame_length (default: the window's
// length) every frame_step samples, multiplies each by the window (if any) and transforms
// it: [batch, frames, bins, 2], frames = (length - frame_length) / frame_step + 1, bins =
// frame_length / 2 + 1 when onesided (the default), else frame_length.
//
// Sums are taken in double with twiddles from a table of e^(-2 pi i m / n), m = j k mod n,
// so the angle never loses precision to a large j k.
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <vector>

#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

using Complex = std::complex<double>;

// e^(sign 2 pi i m / n) for m in [0, n).
std::vector<Complex> Twiddles(int64_t n, bool inverse) {
  std::vector<Complex> table(static_cast<size_t>(n));
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t m = 0; m < n; ++m) {
    const double angle =
        sign * 2.0 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n);
    table[m] = Complex(std::cos(angle), std::sin(angle));
  }
  return table;
}

// The first `bins` coefficients of the n-point transform of x (x.size() == n).
void Transform(const std::vector<Complex>& x, const std::vector<Complex>& twiddles, int64_t bins,
               Complex* out) {
  const int64_t n = static_cast<int64_t>(x.size());
  for (int64_t k = 0; k < bins; ++k) {
    Complex sum = 0;
    int64_t m = 0;  // j * k mod n
    for (int64_t j = 0; j < n; ++j) {
      sum += x[j] * twiddles[m];
      m += k;
      if (m >= n) m %= n;
    }
    out[k] = sum;
  }
}

bool IsRealOrComplexFloat(const Tensor& t) {
  return (t.type() == DataType::kFloat || t.type() == DataType::kDouble) && t.rank() >= 2 &&
         (t.dims().back() == 1 || t.dims().back() == 2);
}

// Element i of a [..., 1 or 2] tensor as a complex number (i counts complex elements).
Complex ComplexAt(const Tensor& t, int64_t i) {
  if (t.dims().back() == 1) return {t.GetAsDouble(i), 0.0};
  return {t.GetAsDouble(2 * i), t.GetAsDouble(2 * i + 1)};
}

void SetComplex(Tensor& t, int64_t i, Complex v) {
  if (t.type() == DataType::kFloat) {
    t.data<float>()[2 * i] = static_cast<float>(v.real());
    t.data<float>()[2 * i + 1] = static_cast<float>(v.imag());
  } else {
    t.data<double>()[2 * i] = v.real();
    t.data<double>()[2 * i + 1] = v.imag();
  }
}

// An optional integer scalar input; `fallback` when omitted.
absl::StatusOr<int64_t> OptionalScalar(const KernelContext& ctx, size_t i, const char* name,
                                       int64_t fallback) {
  if (!ctx.has_input(i)) return fallback;
  const Tensor& t = ctx.input(i);
  if ((t.type() != DataType::kInt32 && t.type() != DataType::kInt64) || t.numel() != 1) {
    return ctx.Error(name, " must be an int32 or int64 scalar, got ", DescribeTensor(t));
  }
  return t.GetAsInt64(0);
}

// DFT-17 takes `axis` as an attribute (default 1, a signal axis after the batch); DFT-20 as
// input 2 (default -2, the last signal axis; the first axis may be one).
absl::StatusOr<int64_t> DftAxis(const KernelContext& ctx, int64_t rank) {
  int64_t given = 0;
  if (ctx.opset >= 20) {
    OVFIX_ASSIGN_OR_RETURN(given, OptionalScalar(ctx, 2, "axis", -2));
  } else {
    given = ctx.node.GetInt("axis", 1);
  }
  const int64_t axis = given < 0 ? given + rank : given;
  const int64_t first = ctx.opset >= 20 ? 0 : 1;
  if (axis < first || axis > rank - 2) {
    return ctx.Error("axis ", given, " is not a signal axis of ", DescribeTensor(ctx.input(0)));
  }
  return axis;
}

absl::Status Dft(KernelContext& ctx) {
  const size_t min_rank = ctx.opset >= 20 ? 2 : 3;
  if (!ctx.has_input(0) || !IsRealOrComplexFloat(ctx.input(0)) || ctx.input(0).rank() < min_rank) {
    return ctx.Error("expects a float or double input [", ctx.opset >= 20 ? "" : "batch, ",
                     "..., 1 or 2]");
  }
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  OVFIX_ASSIGN_OR_RETURN(const int64_t axis, DftAxis(ctx, rank));
  const int64_t length = x.dim(axis);
  OVFIX_ASSIGN_OR_RETURN(int64_t n, OptionalScalar(ctx, 1, "dft_length", length));
  if (n < 1) return ctx.Error("dft_length must be positive, got ", n);
  const bool inverse = ctx.node.GetInt("inverse", 0) != 0;
  const bool onesided = ctx.node.GetInt("onesided", 0) != 0;
  if (inverse && onesided) return ctx.Error("inverse and onesided together are not supported");
  const int64_t bins = onesided ? n / 2 + 1 : n;

  std::vector<int64_t> dims = x.dims();
  dims[axis] = bins;
  dims.back() = 2;
  Tensor& y = ctx.Output(0, x.type(), dims);
  // The complex elements as [outer, axis, inner].
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.dim(d);
  const std::vector<Complex> twiddles = Twiddles(n, inverse);
  std::vector<Complex> line(static_cast<size_t>(n));
  std::vector<Complex> result(static_cast<size_t>(bins));
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        line[j] = j < length ? ComplexAt(x, (o * length + j) * inner + i) : Complex(0);
      }
      Transform(line, twiddles, bins, result.data());
      for (int64_t k = 0; k < bins; ++k) {
        SetComplex(y, (o * bins + k) * inner + i, result[k] * scale);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Stft(KernelContext& ctx) {
  if (!ctx.has_input(0) || !IsRealOrComplexFloat(ctx.input(0)) || ctx.input(0).rank() != 3) {
    return ctx.Error("expects a float or double signal [batch, length, 1 or 2]");
  }
  const Tensor& signal = ctx.input(0);
  OVFIX_ASSIGN_OR_RETURN(int64_t step, OptionalScalar(ctx, 1, "frame_step", 0));
  if (!ctx.has_input(1) || step < 1) return ctx.Error("needs a positive frame_step");
  const Tensor* window = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (window != nullptr && window->rank() != 1) {
    return ctx.Error("window must be 1-D, got ", DescribeTensor(*window));
  }
  OVFIX_ASSIGN_OR_RETURN(
      int64_t frame_length,
      OptionalScalar(ctx, 3, "frame_length", window != nullptr ? window->dim(0) : 0));
  const int64_t length = signal.dim(1);
  if (frame_length < 1 || frame_length > length) {
    return ctx.Error("frame_length ", frame_length, " must be in [1, ", length, "]");
  }
  if (window != nullptr && window->dim(0) != frame_length) {
    return ctx.Error("window has ", window->dim(0), " samples, frame_length is ", frame_length);
  }
  const bool onesided = ctx.node.GetInt("onesided", 1) != 0;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  const int64_t frames = (length - frame_length) / step + 1;
  const int64_t batch = signal.dim(0);
  Tensor& y = ctx.Output(0, signal.type(), {batch, frames, bins, 2});
  const std::vector<Complex> twiddles = Twiddles(frame_length, /*inverse=*/false);
  std::vector<Complex> frame(static_cast<size_t>(frame_length));
  std::vector<Complex> result(static_cast<size_t>(bins));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < frame_length; ++j) {
        const double w = window != nullptr ? window->GetAsDouble(j) : 1.0;
        frame[j] = ComplexAt(signal, b * length + f * step + j) * w;
      }
      Transform(frame, twiddles, bins, result.data());
      for (int64_t k = 0; k < bins; ++k) SetComplex(y, (b * frames + f) * bins + k, result[k]);
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddFourierKernels(std::vector<KernelDef>& table) {
  // One function for both: it reads the axis where the node's opset puts it.
  table.push_back({"", "DFT", 17, 19, &Dft});
  table.push_back({"", "DFT", 20, kLatestOpset, &Dft});
  table.push_back({"", "STFT", 17, kLatestOpset, &Stft});
}

}  // namespace ovfix::exec
