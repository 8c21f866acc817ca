// The math of every test-app kernel, one output element at a time, shared by the GPU twins
// (app_kernels.cu: a grid-stride loop over elements) and the fakecuda host kernels
// (host_kernels.cpp: a plain loop). One body for both keeps the twins computing the same thing;
// each element is written by exactly one thread in a fixed summation order, so results are
// deterministic on either platform (no atomics).
//
// Layouts: matrices are row-major; images are NHWC (batch, height, width, channels).
#pragma once

#ifdef __CUDACC__
#define APP_KERNEL_MATH __host__ __device__ inline
#else
#define APP_KERNEL_MATH inline
#endif

#include <math.h>

namespace kernel_math {

// C[m,n] = sum_k op(A)[m,k] * op(B)[k,n]; op(A) is M×K (A stored K×M when transposed),
// op(B) is K×N (B stored N×K when transposed). Elements: M*N.
APP_KERNEL_MATH void matmul(int i, const float* a, const float* b, float* c, int m_rows, int n_cols, int k_inner,
                            int trans_a, int trans_b) {
  const int m = i / n_cols;
  const int n = i % n_cols;
  float sum = 0.0f;
  for (int k = 0; k < k_inner; ++k) {
    const float av = trans_a ? a[k * m_rows + m] : a[m * k_inner + k];
    const float bv = trans_b ? b[n * k_inner + k] : b[k * n_cols + n];
    sum += av * bv;
  }
  c[i] = sum;
}

// C[m,n] += bias[n]. Elements: M*N.
APP_KERNEL_MATH void bias_add(int i, float* c, const float* bias, int n_cols) { c[i] += bias[i % n_cols]; }

APP_KERNEL_MATH void relu_forward(int i, const float* z, float* a) { a[i] = z[i] > 0.0f ? z[i] : 0.0f; }

APP_KERNEL_MATH void relu_backward(int i, const float* z, const float* da, float* dz) {
  dz[i] = z[i] > 0.0f ? da[i] : 0.0f;
}

// Row r: loss_rows[r] = -log softmax(logits[r])[label]; dlogits[r] = (softmax - onehot) / rows,
// the gradient of the batch-mean loss. Elements: rows.
APP_KERNEL_MATH void softmax_xent(int r, const float* logits, const int* labels, float* loss_rows, float* dlogits,
                                  int rows, int classes) {
  const float* z = logits + r * classes;
  float top = z[0];
  for (int c = 1; c < classes; ++c) top = z[c] > top ? z[c] : top;
  float total = 0.0f;
  for (int c = 0; c < classes; ++c) total += expf(z[c] - top);
  const int label = labels[r];
  loss_rows[r] = logf(total) - (z[label] - top);
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (int c = 0; c < classes; ++c) {
    const float p = expf(z[c] - top) / total;
    dlogits[r * classes + c] = (p - (c == label ? 1.0f : 0.0f)) * inv_rows;
  }
}

// out[n] = sum_m X[m,n]. Elements: N.
APP_KERNEL_MATH void column_sum(int n, const float* x, float* out, int m_rows, int n_cols) {
  float sum = 0.0f;
  for (int m = 0; m < m_rows; ++m) sum += x[m * n_cols + n];
  out[n] = sum;
}

APP_KERNEL_MATH void sgd_update(int i, float* w, const float* g, float learning_rate) { w[i] -= learning_rate * g[i]; }

// y = a*y + b*x: a momentum buffer's update (m = beta*m + g). Elements: count.
APP_KERNEL_MATH void scale_add(int i, float* y, const float* x, float a, float b) { y[i] = a * y[i] + b * x[i]; }

// 3×3 patches with zero padding 1, stride 1: cols is (B*H*W) × (C*9), column ci*9 + ky*3 + kx.
// Elements: B*H*W*C*9.
APP_KERNEL_MATH void im2col_3x3(int i, const float* x, float* cols, int height, int width, int channels) {
  const int patch = channels * 9;
  const int row = i / patch;
  const int col = i % patch;
  const int ci = col / 9;
  const int ky = (col % 9) / 3;
  const int kx = col % 3;
  const int b = row / (height * width);
  const int pos = row % (height * width);
  const int y = pos / width + ky - 1;
  const int xx = pos % width + kx - 1;
  const bool inside = y >= 0 && y < height && xx >= 0 && xx < width;
  cols[i] = inside ? x[((b * height + y) * width + xx) * channels + ci] : 0.0f;
}

// 2×2 max pooling, stride 2 (H and W even); argmax keeps the flat input index of the first
// maximum. Elements: B*(H/2)*(W/2)*C.
APP_KERNEL_MATH void maxpool2x2_forward(int i, const float* a, float* p, int* argmax, int height, int width,
                                        int channels) {
  const int c = i % channels;
  int t = i / channels;
  const int ox = t % (width / 2);
  t /= width / 2;
  const int oy = t % (height / 2);
  const int b = t / (height / 2);
  int best = ((b * height + 2 * oy) * width + 2 * ox) * channels + c;
  for (int dy = 0; dy < 2; ++dy) {
    for (int dx = 0; dx < 2; ++dx) {
      const int at = ((b * height + 2 * oy + dy) * width + 2 * ox + dx) * channels + c;
      if (a[at] > a[best]) best = at;
    }
  }
  p[i] = a[best];
  argmax[i] = best;
}

// Gradient of the pooling, gathered per input element (no scatter, no atomics).
// Elements: B*H*W*C.
APP_KERNEL_MATH void maxpool2x2_backward(int i, const float* dp, const int* argmax, float* da, int height, int width,
                                         int channels) {
  const int c = i % channels;
  int t = i / channels;
  const int x = t % width;
  t /= width;
  const int y = t % height;
  const int b = t / height;
  const int o = ((b * (height / 2) + y / 2) * (width / 2) + x / 2) * channels + c;
  da[i] = argmax[o] == i ? dp[o] : 0.0f;
}

// --- The adversarial app's buffer patterns (adversarial/): every word of a buffer is a function
// of the buffer's key and the word's index, so any byte written by someone else is detectable.

// The expected word `i` of a buffer with `key` (a 32-bit avalanche mix of both).
APP_KERNEL_MATH unsigned pattern_word(unsigned key, int i) {
  unsigned x = key ^ (static_cast<unsigned>(i) * 0x9e3779b9u);
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// buffer[i] = pattern_word(key, i). Elements: count.
APP_KERNEL_MATH void pattern_fill(int i, unsigned* buffer, unsigned key) { buffer[i] = pattern_word(key, i); }

// digest[0] = FNV-1a (32-bit) over the words of the buffer, in order. Elements: 1 (one thread
// reads the whole buffer, which keeps the result independent of the launch geometry).
APP_KERNEL_MATH void pattern_digest(const unsigned* buffer, int count, unsigned* digest) {
  unsigned h = 0x811c9dc5u;
  for (int i = 0; i < count; ++i) h = (h ^ buffer[i]) * 0x01000193u;
  digest[0] = h;
}

// verdict[0] = index of the first word that differs from the pattern of `key`, or -1 when the
// buffer is intact. Elements: 1 (the first mismatch, deterministically, without atomics).
APP_KERNEL_MATH void pattern_verify(const unsigned* buffer, unsigned key, int count, int* verdict) {
  int first_bad = -1;
  for (int i = 0; i < count; ++i) {
    if (buffer[i] != pattern_word(key, i)) {
      first_bad = i;
      break;
    }
  }
  verdict[0] = first_bad;
}

// --- The pointer-table app (adversarial/table_train.cpp): a grouped step whose kernels reach
// their buffers through a table of pointers in device memory, as grouped GEMMs (MoE), NCCL's
// kernels and fused multi-tensor optimizers do. Slot 0 of the table is the verdict area
// (`groups` mismatch counts, then `groups` digests); then each group's input, weight, output.
constexpr int kTableRoles = 3;
APP_KERNEL_MATH int table_slot(int group, int role) { return 1 + kTableRoles * group + role; }

// Each group's buffers get their own key.
APP_KERNEL_MATH unsigned group_key(unsigned key, int group) {
  return key ^ (0x85ebca6bu * static_cast<unsigned>(group + 1));
}

// Group `g` of a grouped step: counts the words of its input (`input`, or the table's when null)
// and weight that differ from their patterns into verdicts[g], and writes its output as
// input ^ weight ^ pattern(out_key). Elements: groups (one thread reads a whole group).
APP_KERNEL_MATH void grouped_forward(int g, const unsigned* input, unsigned* const* table, unsigned in_key,
                                     unsigned weight_key, unsigned out_key, int count) {
  const unsigned* in = input != nullptr ? input : table[table_slot(g, 0)];
  const unsigned* weight = table[table_slot(g, 1)];
  unsigned* out = table[table_slot(g, 2)];
  unsigned bad = 0;
  for (int i = 0; i < count; ++i) {
    const unsigned a = in[i];
    const unsigned b = weight[i];
    bad += (a != pattern_word(group_key(in_key, g), i)) ? 1u : 0u;
    bad += (b != pattern_word(group_key(weight_key, g), i)) ? 1u : 0u;
    out[i] = a ^ b ^ pattern_word(group_key(out_key, g), i);
  }
  table[0][g] += bad;
}

// Group `g`: counts the words of its output (`output`, or the table's when null) that differ
// from what grouped_forward wrote from intact buffers, then writes its next weight (pattern of
// next_key). Elements: groups.
APP_KERNEL_MATH void grouped_update(int g, const unsigned* output, unsigned* const* table, unsigned in_key,
                                    unsigned weight_key, unsigned out_key, unsigned next_key, int count) {
  unsigned* weight = table[table_slot(g, 1)];
  const unsigned* out = output != nullptr ? output : table[table_slot(g, 2)];
  unsigned bad = 0;
  for (int i = 0; i < count; ++i) {
    const unsigned expected = pattern_word(group_key(in_key, g), i) ^ pattern_word(group_key(weight_key, g), i) ^
                              pattern_word(group_key(out_key, g), i);
    bad += (out[i] != expected) ? 1u : 0u;
    weight[i] = pattern_word(group_key(next_key, g), i);
  }
  table[0][g] += bad;
}

// Group `g`'s weight digest (FNV-1a) into the verdict area's second half. Elements: groups.
APP_KERNEL_MATH void grouped_digest(int g, unsigned* const* table, int groups, int count) {
  pattern_digest(table[table_slot(g, 1)], count, &table[0][groups + g]);
}

}  // namespace kernel_math
