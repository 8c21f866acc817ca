// The test apps' kernels as fakecuda host functions: the same names and parameters as the GPU
// twins in app_kernels.cu, and the same per-element math (kernel_math.hpp). This shared object
// exports only the `fakecuda_kernels` table that fakecuda reads (kernel_abi.h).
#include "host_kernel_table.hpp"
#include "kernel_math.hpp"

namespace host_kernels {

void matmul(const float* a, const float* b, float* c, int m_rows, int n_cols, int k_inner, int trans_a, int trans_b) {
  for (int i = 0; i < m_rows * n_cols; ++i) {
    kernel_math::matmul(i, a, b, c, m_rows, n_cols, k_inner, trans_a, trans_b);
  }
}

void bias_add(float* c, const float* bias, int m_rows, int n_cols) {
  for (int i = 0; i < m_rows * n_cols; ++i) kernel_math::bias_add(i, c, bias, n_cols);
}

void relu_forward(const float* z, float* a, int count) {
  for (int i = 0; i < count; ++i) kernel_math::relu_forward(i, z, a);
}

void relu_backward(const float* z, const float* da, float* dz, int count) {
  for (int i = 0; i < count; ++i) kernel_math::relu_backward(i, z, da, dz);
}

void softmax_xent(const float* logits, const int* labels, float* loss_rows, float* dlogits, int rows, int classes) {
  for (int r = 0; r < rows; ++r) {
    kernel_math::softmax_xent(r, logits, labels, loss_rows, dlogits, rows, classes);
  }
}

void column_sum(const float* x, float* out, int m_rows, int n_cols) {
  for (int n = 0; n < n_cols; ++n) kernel_math::column_sum(n, x, out, m_rows, n_cols);
}

void sgd_update(float* w, const float* g, float learning_rate, int count) {
  for (int i = 0; i < count; ++i) kernel_math::sgd_update(i, w, g, learning_rate);
}

void scale_add(float* y, const float* x, float a, float b, int count) {
  for (int i = 0; i < count; ++i) kernel_math::scale_add(i, y, x, a, b);
}

void im2col_3x3(const float* x, float* cols, int batch, int height, int width, int channels) {
  for (int i = 0; i < batch * height * width * channels * 9; ++i) {
    kernel_math::im2col_3x3(i, x, cols, height, width, channels);
  }
}

void maxpool2x2_forward(const float* a, float* p, int* argmax, int batch, int height, int width, int channels) {
  for (int i = 0; i < batch * (height / 2) * (width / 2) * channels; ++i) {
    kernel_math::maxpool2x2_forward(i, a, p, argmax, height, width, channels);
  }
}

void maxpool2x2_backward(const float* dp, const int* argmax, float* da, int batch, int height, int width,
                         int channels) {
  for (int i = 0; i < batch * height * width * channels; ++i) {
    kernel_math::maxpool2x2_backward(i, dp, argmax, da, height, width, channels);
  }
}

void pattern_fill(unsigned* buffer, unsigned key, int count) {
  for (int i = 0; i < count; ++i) kernel_math::pattern_fill(i, buffer, key);
}

void pattern_digest(const unsigned* buffer, int count, unsigned* digest) {
  kernel_math::pattern_digest(buffer, count, digest);
}

void pattern_verify(const unsigned* buffer, unsigned key, int count, int* verdict) {
  kernel_math::pattern_verify(buffer, key, count, verdict);
}

// Through a pointer kept in device memory (`table[0]`), as a pointer array or a graph reaches
// a buffer: memtool's argument scan sees the table, never the buffer.
void pattern_fill_indirect(unsigned* const* table, unsigned key, int count) {
  for (int i = 0; i < count; ++i) kernel_math::pattern_fill(i, table[0], key);
}

void pattern_verify_indirect(const unsigned* const* table, unsigned key, int count, int* verdict) {
  kernel_math::pattern_verify(table[0], key, count, verdict);
}

// The pointer-table app's kernels. The device global table_publish writes is a static here: a
// later launch on the same stream reads it, as on a GPU.
unsigned* const* g_published_table = nullptr;

unsigned* const* table_or_published(unsigned* const* table) { return table != nullptr ? table : g_published_table; }

void grouped_forward(const unsigned* input, unsigned* const* table, int first_group, int groups, unsigned in_key,
                     unsigned weight_key, unsigned out_key, int count) {
  for (int g = 0; g < groups; ++g) {
    kernel_math::grouped_forward(first_group + g, input, table_or_published(table), in_key, weight_key, out_key, count);
  }
}

void grouped_update(const unsigned* output, unsigned* const* table, int first_group, int groups, unsigned in_key,
                    unsigned weight_key, unsigned out_key, unsigned next_key, int count) {
  for (int g = 0; g < groups; ++g) {
    kernel_math::grouped_update(first_group + g, output, table_or_published(table), in_key, weight_key, out_key,
                                next_key, count);
  }
}

void grouped_digest(unsigned* const* table, int groups, int count) {
  for (int g = 0; g < groups; ++g) kernel_math::grouped_digest(g, table_or_published(table), groups, count);
}

void table_set(unsigned** table, int slot, unsigned* pointer) { table[slot] = pointer; }

void table_publish(unsigned* const* table) { g_published_table = table; }

namespace {

constexpr fakecuda_kernel_desc kernel_descs[] = {
    HOST_KERNEL_ENTRY(matmul),
    HOST_KERNEL_ENTRY(bias_add),
    HOST_KERNEL_ENTRY(relu_forward),
    HOST_KERNEL_ENTRY(relu_backward),
    HOST_KERNEL_ENTRY(softmax_xent),
    HOST_KERNEL_ENTRY(column_sum),
    HOST_KERNEL_ENTRY(sgd_update),
    HOST_KERNEL_ENTRY(scale_add),
    HOST_KERNEL_ENTRY(im2col_3x3),
    HOST_KERNEL_ENTRY(maxpool2x2_forward),
    HOST_KERNEL_ENTRY(maxpool2x2_backward),
    HOST_KERNEL_ENTRY(pattern_fill),
    HOST_KERNEL_ENTRY(pattern_digest),
    HOST_KERNEL_ENTRY(pattern_verify),
    HOST_KERNEL_ENTRY(pattern_fill_indirect),
    HOST_KERNEL_ENTRY(pattern_verify_indirect),
    HOST_KERNEL_ENTRY(grouped_forward),
    HOST_KERNEL_ENTRY(grouped_update),
    HOST_KERNEL_ENTRY(grouped_digest),
    HOST_KERNEL_ENTRY(table_set),
    HOST_KERNEL_ENTRY(table_publish),
};

}  // namespace

}  // namespace host_kernels

extern "C" __attribute__((visibility("default"))) const fakecuda_kernel_table fakecuda_kernels = {
    FAKECUDA_KERNEL_ABI_VERSION,
    static_cast<unsigned>(sizeof host_kernels::kernel_descs / sizeof host_kernels::kernel_descs[0]),
    host_kernels::kernel_descs};
