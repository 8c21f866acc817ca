// Resolution "like HAMi-core but right": our dlsym and cuGetProcAddress{,_v2} hand out our
// wrappers for hooked driver symbols and pass everything else through.
//
// - dlsym: the real one comes from dlvsym(RTLD_NEXT, "dlsym", <glibc version>), never from
//   dlsym itself (we *are* dlsym). RTLD_NEXT asked by someone else keeps its meaning: the
//   next object after *the caller*, not after us.
// - cuGetProcAddress: the real resolver is asked first; its status and symbolStatus are what
//   the program gets. Only a successful, non-null answer for a hooked (symbol, version, flags)
//   is replaced by our wrapper, and the real pointer is kept for that exact variant.
#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string_view>

#include "memtool/interpose/log.hpp"
#include "preload.hpp"

// The real dlsym, published for the x86-64 trampoline below (read there without a lock: a
// pointer-sized aligned load; written once, with the same value by every writer). `used` and
// `externally_visible`: the trampoline's asm reference is invisible to LTO, which may otherwise
// move the variable into another partition under a private name (an undefined symbol at link).
extern "C" {
__attribute__((visibility("hidden"), used, externally_visible)) void* memtool_real_dlsym = nullptr;
}

namespace memtool::interpose::preload {
namespace {

std::atomic<void*> g_driver_handle{nullptr};  // the handle the program got libcuda through
std::atomic<GetProcAddressV1> g_real_get_proc_v1{nullptr};
std::atomic<GetProcAddressV2> g_real_get_proc_v2{nullptr};

DlsymFunction bootstrap_dlsym() noexcept {
  // glibc 2.34 moved dlsym into libc with a new version; older ones only have 2.2.5.
  void* found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (found == nullptr) found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  return reinterpret_cast<DlsymFunction>(found);
}

bool is_our_wrapper(void* pointer) {
  for (void* wrapper : kWrappers) {
    if (wrapper == pointer) return true;
  }
  return false;
}

// dlsym(RTLD_NEXT, name) on behalf of `caller`: the first definition in the objects loaded
// after the caller's, in load order, as glibc would have found it for the caller itself.
void* next_after(const void* caller, const char* name) {
  const DlsymFunction real = real_dlsym();
  Dl_info info{};
  link_map* caller_map = nullptr;
  if (dladdr1(caller, &info, reinterpret_cast<void**>(&caller_map), RTLD_DL_LINKMAP) == 0 || caller_map == nullptr) {
    return real(RTLD_NEXT, name);
  }
  for (link_map* object = caller_map->l_next; object != nullptr; object = object->l_next) {
    if (object->l_name == nullptr || object->l_name[0] == '\0') continue;  // vDSO, main program
    // A proper handle for the object (it is loaded: RTLD_NOLOAD only takes a reference).
    void* handle = dlopen(object->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* found = real(handle, name);
    dlclose(handle);
    if (found == nullptr) continue;
    // The handle search also looks at the object's dependencies: keep only a definition in
    // this very object, so that the order is the global one.
    Dl_info found_info{};
    link_map* found_map = nullptr;
    if (dladdr1(found, &found_info, reinterpret_cast<void**>(&found_map), RTLD_DL_LINKMAP) != 0 &&
        found_map == object) {
      return found;
    }
  }
  return nullptr;
}

}  // namespace

DlsymFunction real_dlsym() noexcept {
  auto real = reinterpret_cast<DlsymFunction>(__atomic_load_n(&memtool_real_dlsym, __ATOMIC_ACQUIRE));
  if (real == nullptr) {
    real = bootstrap_dlsym();
    __atomic_store_n(&memtool_real_dlsym, reinterpret_cast<void*>(real), __ATOMIC_RELEASE);
  }
  return real;
}

void* driver_symbol(const char* name) noexcept {
  const DlsymFunction real = real_dlsym();
  if (real == nullptr) return nullptr;
  if (void* handle = g_driver_handle.load(std::memory_order_acquire); handle != nullptr) {
    if (void* found = real(handle, name); found != nullptr) return found;
  }
  if (void* found = real(RTLD_NEXT, name); found != nullptr) return found;
  // libcuda loaded with RTLD_LOCAL by someone else: reach it by its soname without loading it.
  if (void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD); handle != nullptr) {
    void* found = real(handle, name);
    dlclose(handle);
    return found;
  }
  return nullptr;
}

void* resolve_real_slow(HookId id) noexcept {
  const std::string_view symbol = symbol_name(id);
  char name[96] = {};
  std::memcpy(name, symbol.data(), std::min(symbol.size(), sizeof(name) - 1));
  void* real = driver_symbol(name);
  if (real == nullptr || is_our_wrapper(real)) return nullptr;
  offer_real(id, real);
  return real_slot(id);
}

CUresult missing_driver(HookId id) noexcept {
  MEMTOOL_LOG_ONCE(LogLevel::error, "no CUDA driver provides {} (is libcuda.so.1 loaded?)", symbol_name(id));
  return CUDA_ERROR_NOT_INITIALIZED;
}

namespace {

// The driver's `name`, looked up the first time it is asked for (and again while not found).
template <class F>
F cached_driver_symbol(std::atomic<F>& slot, const char* name) {
  F real = slot.load(std::memory_order_acquire);
  if (real == nullptr) {
    real = reinterpret_cast<F>(driver_symbol(name));
    slot.store(real, std::memory_order_release);
  }
  return real;
}

GetProcAddressV2 real_get_proc_v2() { return cached_driver_symbol(g_real_get_proc_v2, "cuGetProcAddress_v2"); }

GetProcAddressV1 real_get_proc_v1() { return cached_driver_symbol(g_real_get_proc_v1, "cuGetProcAddress"); }

// Keeps the first real resolver we learn of; never stores one of ours.
template <class F>
void remember(std::atomic<F>& slot, void* real, void* ours) {
  if (real == nullptr || real == ours) return;
  F expected = nullptr;
  slot.compare_exchange_strong(expected, reinterpret_cast<F>(real));
}

template <class Query>
void substitute(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags, Query requery) {
  const std::string_view name{symbol};
  // The driver's resolver itself: hand out ours, so that later lookups through it are seen.
  if (name == "cuGetProcAddress") {
    // CUDA 12.0 changed the ABI of "cuGetProcAddress" to the _v2 one (symbolStatus).
    if (cuda_version >= 12000) {
      remember(g_real_get_proc_v2, *pfn, reinterpret_cast<void*>(&::cuGetProcAddress_v2));
      if (*pfn == reinterpret_cast<void*>(g_real_get_proc_v2.load()))
        *pfn = reinterpret_cast<void*>(&::cuGetProcAddress_v2);
    } else {
      remember(g_real_get_proc_v1, *pfn, reinterpret_cast<void*>(&::cuGetProcAddress));
      if (*pfn == reinterpret_cast<void*>(g_real_get_proc_v1.load()))
        *pfn = reinterpret_cast<void*>(&::cuGetProcAddress);
    }
    return;
  }
  const auto id = choose_hook(name, cuda_version, flags);
  if (!id || is_our_wrapper(*pfn)) return;
  // Newer than the table was checked against: wrap only if the driver gives the same function
  // as for the version we know (else the ABI may have changed under the same name).
  if (cuda_version > kBuiltAgainstVersion) {
    void* known = nullptr;
    if (requery(symbol, &known, kBuiltAgainstVersion, flags) != CUDA_SUCCESS || known != *pfn) {
      Log::write(LogLevel::debug, "{} at CUDA {} is not the function we know: passed through", name, cuda_version);
      return;
    }
  }
  if (offer_real(*id, *pfn)) {
    *pfn = kWrappers[static_cast<std::size_t>(*id)];
  } else {
    Log::write(LogLevel::debug, "{} resolved to a second driver function for {}: passed through", name,
               symbol_name(*id));
  }
}

}  // namespace
}  // namespace memtool::interpose::preload

using namespace memtool::interpose;

// dlsym(RTLD_NEXT, name) means "the next definition after the *caller's* object", and glibc
// finds the caller from dlsym's return address. On x86-64 our exported dlsym is therefore a
// trampoline: RTLD_NEXT jumps straight into the real dlsym with the caller's return address
// still on the stack (so the loader answers exactly as without us, at any point of start-up,
// even for a sanitizer runtime resolving its interceptors); everything else goes to
// memtool_dlsym. Elsewhere, RTLD_NEXT is answered by walking the link map (next_after).
// (`used`: these are called from the assembly only, which link-time optimisation cannot see.)
extern "C" __attribute__((visibility("hidden"), used)) void* memtool_bootstrap_dlsym() {
  return reinterpret_cast<void*>(preload::real_dlsym());
}

#if defined(__x86_64__)
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
dlsym:
  cmpq $-1, %rdi
  jne 2f
  movq memtool_real_dlsym(%rip), %rax
  testq %rax, %rax
  jne 1f
  pushq %rdi
  pushq %rsi
  subq $8, %rsp
  call memtool_bootstrap_dlsym
  addq $8, %rsp
  popq %rsi
  popq %rdi
  testq %rax, %rax
  je 2f
1:
  jmp *%rax
2:
  jmp memtool_dlsym
  .size dlsym, .-dlsym
)");
#define MEMTOOL_DLSYM_ENTRY extern "C" __attribute__((visibility("hidden"), used)) void* memtool_dlsym
#else
#define MEMTOOL_DLSYM_ENTRY MEMTOOL_EXPORTED void* dlsym
#endif

MEMTOOL_DLSYM_ENTRY(void* handle, const char* name) {
  const preload::DlsymFunction real = preload::real_dlsym();
  if (real == nullptr) return nullptr;  // cannot happen with glibc; nothing sensible to do
  void* found = handle == RTLD_NEXT ? preload::next_after(__builtin_return_address(0), name) : real(handle, name);
  if (found == nullptr) return found;
  const std::string_view symbol{name};
  if (symbol.size() < 3 || symbol[0] != 'c' || symbol[1] != 'u') return found;

  if (symbol == "cuGetProcAddress_v2" || symbol == "cuGetProcAddress") {
    const bool v2 = symbol.size() > sizeof("cuGetProcAddress") - 1;
    void* ours = v2 ? reinterpret_cast<void*>(&::cuGetProcAddress_v2) : reinterpret_cast<void*>(&::cuGetProcAddress);
    if (found == ours) return found;
    if (handle != RTLD_DEFAULT && handle != RTLD_NEXT) {
      void* expected = nullptr;
      preload::g_driver_handle.compare_exchange_strong(expected, handle);
    }
    if (v2)
      preload::remember(preload::g_real_get_proc_v2, found, ours);
    else
      preload::remember(preload::g_real_get_proc_v1, found, ours);
    return ours;
  }
  const auto id = find_symbol(symbol);
  if (!id || preload::is_our_wrapper(found)) return found;
  if (handle != RTLD_DEFAULT && handle != RTLD_NEXT) {
    void* expected = nullptr;
    preload::g_driver_handle.compare_exchange_strong(expected, handle);
  }
  return offer_real(*id, found) ? preload::kWrappers[static_cast<std::size_t>(*id)] : found;
}

MEMTOOL_EXPORTED CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                              CUdriverProcAddressQueryResult* symbolStatus) {
  const preload::GetProcAddressV2 real = preload::real_get_proc_v2();
  if (real == nullptr) {
    MEMTOOL_LOG_ONCE(LogLevel::error, "no CUDA driver provides cuGetProcAddress_v2");
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  const CUresult result = real(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (result != CUDA_SUCCESS || symbol == nullptr || pfn == nullptr || *pfn == nullptr) return result;
  preload::substitute(symbol, pfn, cudaVersion, flags,
                      [&](const char* s, void** p, int v, cuuint64_t f) { return real(s, p, v, f, nullptr); });
  return result;
}

MEMTOOL_EXPORTED CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  const preload::GetProcAddressV1 real = preload::real_get_proc_v1();
  if (real == nullptr) {
    MEMTOOL_LOG_ONCE(LogLevel::error, "no CUDA driver provides cuGetProcAddress");
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  const CUresult result = real(symbol, pfn, cudaVersion, flags);
  if (result != CUDA_SUCCESS || symbol == nullptr || pfn == nullptr || *pfn == nullptr) return result;
  preload::substitute(symbol, pfn, cudaVersion, flags, real);
  return result;
}
