// The test apps' kernels for a real GPU: extern "C" twins, with the same names and parameters, of
// the fakecuda host kernels in host_kernels.cpp. Compiled by nvcc into app_kernels.fatbin
// (see tests/apps/CMakeLists.txt), which the apps load with --module.
#include "kernel_math.hpp"

#define APP_GRID_STRIDE(count)                                                       \
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < (count); \
       i += static_cast<int>(blockDim.x * gridDim.x))

extern "C" __global__ void matmul(const float* a, const float* b, float* c, int m_rows, int n_cols, int k_inner,
                                  int trans_a, int trans_b) {
  APP_GRID_STRIDE(m_rows * n_cols) { kernel_math::matmul(i, a, b, c, m_rows, n_cols, k_inner, trans_a, trans_b); }
}

extern "C" __global__ void bias_add(float* c, const float* bias, int m_rows, int n_cols) {
  APP_GRID_STRIDE(m_rows * n_cols) { kernel_math::bias_add(i, c, bias, n_cols); }
}

extern "C" __global__ void relu_forward(const float* z, float* a, int count) {
  APP_GRID_STRIDE(count) { kernel_math::relu_forward(i, z, a); }
}

extern "C" __global__ void relu_backward(const float* z, const float* da, float* dz, int count) {
  APP_GRID_STRIDE(count) { kernel_math::relu_backward(i, z, da, dz); }
}

extern "C" __global__ void softmax_xent(const float* logits, const int* labels, float* loss_rows, float* dlogits,
                                        int rows, int classes) {
  APP_GRID_STRIDE(rows) { kernel_math::softmax_xent(i, logits, labels, loss_rows, dlogits, rows, classes); }
}

extern "C" __global__ void column_sum(const float* x, float* out, int m_rows, int n_cols) {
  APP_GRID_STRIDE(n_cols) { kernel_math::column_sum(i, x, out, m_rows, n_cols); }
}

extern "C" __global__ void sgd_update(float* w, const float* g, float learning_rate, int count) {
  APP_GRID_STRIDE(count) { kernel_math::sgd_update(i, w, g, learning_rate); }
}

extern "C" __global__ void scale_add(float* y, const float* x, float a, float b, int count) {
  APP_GRID_STRIDE(count) { kernel_math::scale_add(i, y, x, a, b); }
}

extern "C" __global__ void im2col_3x3(const float* x, float* cols, int batch, int height, int width, int channels) {
  APP_GRID_STRIDE(batch * height * width * channels * 9) {
    kernel_math::im2col_3x3(i, x, cols, height, width, channels);
  }
}

extern "C" __global__ void maxpool2x2_forward(const float* a, float* p, int* argmax, int batch, int height, int width,
                                              int channels) {
  APP_GRID_STRIDE(batch * (height / 2) * (width / 2) * channels) {
    kernel_math::maxpool2x2_forward(i, a, p, argmax, height, width, channels);
  }
}

extern "C" __global__ void maxpool2x2_backward(const float* dp, const int* argmax, float* da, int batch, int height,
                                               int width, int channels) {
  APP_GRID_STRIDE(batch * height * width * channels) {
    kernel_math::maxpool2x2_backward(i, dp, argmax, da, height, width, channels);
  }
}

extern "C" __global__ void pattern_fill(unsigned* buffer, unsigned key, int count) {
  APP_GRID_STRIDE(count) { kernel_math::pattern_fill(i, buffer, key); }
}

extern "C" __global__ void pattern_digest(const unsigned* buffer, int count, unsigned* digest) {
  APP_GRID_STRIDE(1) { kernel_math::pattern_digest(buffer, count, digest); }
}

extern "C" __global__ void pattern_verify(const unsigned* buffer, unsigned key, int count, int* verdict) {
  APP_GRID_STRIDE(1) { kernel_math::pattern_verify(buffer, key, count, verdict); }
}

// Through a pointer kept in device memory (table[0]): memtool's argument scan sees only the table.
extern "C" __global__ void pattern_fill_indirect(unsigned* const* table, unsigned key, int count) {
  APP_GRID_STRIDE(count) { kernel_math::pattern_fill(i, table[0], key); }
}

extern "C" __global__ void pattern_verify_indirect(const unsigned* const* table, unsigned key, int count,
                                                   int* verdict) {
  APP_GRID_STRIDE(1) { kernel_math::pattern_verify(table[0], key, count, verdict); }
}

// The pointer-table app (adversarial/table_train.cpp). A null table means the one table_publish
// left in a device global: the launch then passes no pointer at all.
__device__ unsigned* const* g_published_table;

__device__ unsigned* const* table_or_published(unsigned* const* table) {
  return table != nullptr ? table : g_published_table;
}

extern "C" __global__ void grouped_forward(const unsigned* input, unsigned* const* table, int first_group, int groups,
                                           unsigned in_key, unsigned weight_key, unsigned out_key, int count) {
  APP_GRID_STRIDE(groups) {
    kernel_math::grouped_forward(first_group + i, input, table_or_published(table), in_key, weight_key, out_key, count);
  }
}

extern "C" __global__ void grouped_update(const unsigned* output, unsigned* const* table, int first_group, int groups,
                                          unsigned in_key, unsigned weight_key, unsigned out_key, unsigned next_key,
                                          int count) {
  APP_GRID_STRIDE(groups) {
    kernel_math::grouped_update(first_group + i, output, table_or_published(table), in_key, weight_key, out_key,
                                next_key, count);
  }
}

extern "C" __global__ void grouped_digest(unsigned* const* table, int groups, int count) {
  APP_GRID_STRIDE(groups) { kernel_math::grouped_digest(i, table_or_published(table), groups, count); }
}

// One table entry written on the device, as a kernel that builds its pointer list would.
extern "C" __global__ void table_set(unsigned** table, int slot, unsigned* pointer) {
  APP_GRID_STRIDE(1) { table[slot] = pointer; }
}

// Leaves `table` in a device global for the launches that pass none.
extern "C" __global__ void table_publish(unsigned* const* table) {
  APP_GRID_STRIDE(1) { g_published_table = table; }
}
