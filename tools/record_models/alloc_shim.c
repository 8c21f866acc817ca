// alloc_shim: an LD_PRELOAD library that logs PyTorch's CPU tensor allocations for
// record_models.py. Every posix_memalign called from libc10 (c10::alloc_cpu, the allocator of
// every CPU tensor's storage) becomes "A <id> <ptr> <size>", and the free of such a pointer
// "F <id> <ptr>", written to the file the recorder opened with rec_open(). Other allocations
// (the interpreter's, oneDNN's own) are not logged. The recorder writes its own lines (operators,
// iteration marks) through rec_line(), under the same lock, so the file keeps program order.
//
// No allocation inside the hooks: pointer ids live in a fixed open-addressing table.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TABLE_BITS 20
#define TABLE_SIZE (1u << TABLE_BITS)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int (*real_memalign)(void**, size_t, size_t);
static void (*real_free)(void*);
static int out_fd = -1;
static int enabled;
static uintptr_t c10_begin, c10_end;  // libc10's executable segment
static unsigned long long next_id;
static struct {
  uintptr_t ptr;
  unsigned long long id;
} table[TABLE_SIZE];

static size_t slot_of(uintptr_t p) { return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull >> (64 - TABLE_BITS)); }

static void table_put(uintptr_t p, unsigned long long id) {
  size_t i = slot_of(p);
  while (table[i].ptr != 0 && table[i].ptr != p) i = (i + 1) & (TABLE_SIZE - 1);
  table[i].ptr = p;
  table[i].id = id;
}

// Removes p (backward-shift deletion keeps probe chains whole); returns its id + 1, or 0.
static unsigned long long table_take(uintptr_t p) {
  size_t i = slot_of(p);
  while (table[i].ptr != 0 && table[i].ptr != p) i = (i + 1) & (TABLE_SIZE - 1);
  if (table[i].ptr == 0) return 0;
  const unsigned long long id = table[i].id;
  size_t hole = i;
  for (size_t j = (i + 1) & (TABLE_SIZE - 1); table[j].ptr != 0; j = (j + 1) & (TABLE_SIZE - 1)) {
    const size_t home = slot_of(table[j].ptr);
    const int between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!between) {
      table[hole] = table[j];
      hole = j;
    }
  }
  table[hole].ptr = 0;
  return id + 1;
}

static void emit(const char* text, size_t n) {
  while (n > 0 && out_fd >= 0) {
    const ssize_t w = write(out_fd, text, n);
    if (w <= 0) return;
    text += w;
    n -= (size_t)w;
  }
}

static void resolve(void) {
  if (real_memalign == NULL) real_memalign = (int (*)(void**, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
  if (real_free == NULL) real_free = (void (*)(void*))dlsym(RTLD_NEXT, "free");
}

static int find_c10(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  if (info->dlpi_name == NULL || strstr(info->dlpi_name, "/libc10.so") == NULL) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      c10_begin = info->dlpi_addr + ph->p_vaddr;
      c10_end = c10_begin + ph->p_memsz;
      return 1;
    }
  }
  return 0;
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  resolve();
  const int status = real_memalign(out, alignment, size);
  const uintptr_t caller = (uintptr_t)__builtin_return_address(0);
  if (status != 0 || !enabled || caller < c10_begin || caller >= c10_end) return status;
  pthread_mutex_lock(&lock);
  const unsigned long long id = next_id++;
  table_put((uintptr_t)*out, id);
  char line[96];
  const int n = snprintf(line, sizeof line, "A %llu %lx %zu\n", id, (unsigned long)(uintptr_t)*out, size);
  emit(line, (size_t)n);
  pthread_mutex_unlock(&lock);
  return status;
}

void free(void* p) {
  resolve();
  if (p != NULL && enabled) {
    pthread_mutex_lock(&lock);
    const unsigned long long id = table_take((uintptr_t)p);
    if (id != 0) {
      char line[64];
      const int n = snprintf(line, sizeof line, "F %llu %lx\n", id - 1, (unsigned long)(uintptr_t)p);
      emit(line, (size_t)n);
    }
    pthread_mutex_unlock(&lock);
  }
  real_free(p);
}

// --- called by record_models.py through ctypes ---

int rec_open(const char* path) {
  dl_iterate_phdr(find_c10, NULL);
  if (c10_begin == 0) return -1;
  out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  return out_fd >= 0 ? 0 : -1;
}

void rec_enable(int on) { enabled = on; }

void rec_line(const char* text) {
  pthread_mutex_lock(&lock);
  emit(text, strlen(text));
  emit("\n", 1);
  pthread_mutex_unlock(&lock);
}

void rec_close(void) {
  pthread_mutex_lock(&lock);
  enabled = 0;
  if (out_fd >= 0) close(out_fd);
  out_fd = -1;
  pthread_mutex_unlock(&lock);
}
