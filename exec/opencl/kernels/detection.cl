// NonMaxSuppression and RoiAlign, as the CPU kernels do them (exec/cpu/detection.cc,
// grid_sample.cc). NonMaxSuppression's output size depends on the data: the device orders and
// selects the boxes, the host reads back how many were kept.

#ifndef MODE
#define MODE 0
#endif

// std::max's choice (the first unless the second is larger), in real_t.
inline real_t first_max(real_t a, real_t b) { return a < b ? b : a; }

// ---- NonMaxSuppression ----

// Scores [classes of all batches, count]: a box is a candidate unless its score is NaN or
// (with a threshold) not above it. Global range (count, batch * classes): each candidate
// finds its place in descending score order (equal scores: lower index first) and writes
// itself there; `candidates` counts them per class.
__kernel void nms_order(__global const A_T* scores, __global int* order,
                        __global int* candidates, int count, int has_threshold,
                        float threshold) {
  const int i = get_global_id(0);
  const long bc = get_global_id(1);
  __global const A_T* s = scores + bc * count;
  const float v = LOAD_A(s, i);
  if (isnan(v) || (has_threshold && !(v > threshold))) return;
  int rank = 0;
  for (int j = 0; j < count; ++j) {
    const float u = LOAD_A(s, j);
    if (isnan(u) || (has_threshold && !(u > threshold))) continue;
    if (u > v || (u == v && j < i)) ++rank;
  }
  order[bc * count + rank] = i;
  atomic_inc(candidates + bc);
}

// Box i of a batch as (y1, x1, y2, x2) with y1 <= y2 and x1 <= x2.
inline float4 box_corners(__global const B_T* boxes, long i, int center_point_box) {
  const float a = LOAD_B(boxes, 4 * i), b = LOAD_B(boxes, 4 * i + 1);
  const float c = LOAD_B(boxes, 4 * i + 2), d = LOAD_B(boxes, 4 * i + 3);
  if (center_point_box) return (float4)(b - d / 2, a - c / 2, b + d / 2, a + c / 2);
  return (float4)(fmin(a, c), fmin(b, d), fmax(a, c), fmax(b, d));
}

inline float iou(float4 p, float4 q) {
  const float height = fmin(p.z, q.z) - fmax(p.x, q.x);
  const float width = fmin(p.w, q.w) - fmax(p.y, q.y);
  if (height <= 0 || width <= 0) return 0;
  const float intersection = height * width;
  const float union_area =
      (p.z - p.x) * (p.w - p.y) + (q.z - q.x) * (q.w - q.y) - intersection;
  return union_area > 0 ? intersection / union_area : 0;
}

// One work item per (batch, class): the greedy pass over its candidates in order, keeping a
// box unless it overlaps a kept one by more than iou_threshold, up to max_keep boxes.
__kernel void nms_select(__global const B_T* boxes, __global const int* order,
                         __global const int* candidates, __global int* kept,
                         __global int* kept_count, int count, int classes, int max_keep,
                         float iou_threshold, int center_point_box) {
  const long bc = get_global_id(0);
  __global const B_T* batch_boxes = boxes + (bc / classes) * count * 4;
  __global int* mine = kept + bc * max_keep;
  int n = 0;
  const int total = candidates[bc];
  for (int t = 0; t < total && n < max_keep; ++t) {
    const int i = order[bc * count + t];
    const float4 box = box_corners(batch_boxes, i, center_point_box);
    int suppressed = 0;
    for (int s = 0; s < n && !suppressed; ++s) {
      suppressed = iou(box, box_corners(batch_boxes, mine[s], center_point_box)) > iou_threshold;
    }
    if (!suppressed) mine[n++] = i;
  }
  kept_count[bc] = n;
}

// ---- RoiAlign ----

// One work item per output element of y [rois, channels, out_h, out_w]. Box r's grid is
// geometry[r] = (start_h, start_w, bin_h, bin_w) with grid[r] = (grid_h, grid_w) samples per
// bin, worked out on the host as the CPU kernel does. A sample is the bilinear interpolation
// of its four neighbours (clamped to the edge up to a pixel outside, 0 further out); MODE 0
// averages the samples' sums, MODE 1 takes the largest weighted neighbour, as onnxruntime.
__kernel void roi_align(__global const A_T* x, __global const float4* geometry,
                        __global const int2* grid, __global const long* batch_indices,
                        __global Y_T* y, int channels, int height, int width, int out_h,
                        int out_w) {
  const long index = get_global_id(0);
  const int pw = index % out_w;
  const int ph = (index / out_w) % out_h;
  const int c = (index / ((long)out_w * out_h)) % channels;
  const long r = index / ((long)out_w * out_h * channels);
  const float4 g = geometry[r];
  const int2 samples = grid[r];
  __global const A_T* image = x + (batch_indices[r] * channels + c) * (long)height * width;
  real_t sum = 0, maximum = 0;
  int first = 1;
  for (int iy = 0; iy < samples.x; ++iy) {
    float yy = g.x + ph * g.z + (iy + 0.5f) * g.z / samples.x;
    for (int ix = 0; ix < samples.y; ++ix) {
      float xx = g.y + pw * g.w + (ix + 0.5f) * g.w / samples.y;
      real_t w[4] = {0, 0, 0, 0};
      if (isfinite(xx) && isfinite(yy) && yy >= -1.0f && yy <= height && xx >= -1.0f &&
          xx <= width) {
        float sy = fmax(yy, 0.0f), sx = fmax(xx, 0.0f);
        int y_low = (int)sy, x_low = (int)sx, y_high, x_high;
        if (y_low >= height - 1) {
          y_high = y_low = height - 1;
          sy = (float)y_low;
        } else {
          y_high = y_low + 1;
        }
        if (x_low >= width - 1) {
          x_high = x_low = width - 1;
          sx = (float)x_low;
        } else {
          x_high = x_low + 1;
        }
        const float ly = sy - y_low, lx = sx - x_low, hy = 1 - ly, hx = 1 - lx;
        w[0] = (real_t)(hy * hx) * LOAD_A(image, (long)y_low * width + x_low);
        w[1] = (real_t)(hy * lx) * LOAD_A(image, (long)y_low * width + x_high);
        w[2] = (real_t)(ly * hx) * LOAD_A(image, (long)y_high * width + x_low);
        w[3] = (real_t)(ly * lx) * LOAD_A(image, (long)y_high * width + x_high);
      }
      sum += w[0] + w[1] + w[2] + w[3];
      const real_t v = first_max(first_max(first_max(w[0], w[1]), w[2]), w[3]);
      maximum = first ? v : first_max(maximum, v);
      first = 0;
    }
  }
  const int count = max(samples.x * samples.y, 1);
  STORE_Y(y, index, MODE == 0 ? sum / (real_t)count : maximum);
}
