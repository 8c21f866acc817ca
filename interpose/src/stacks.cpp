// Call stacks through the unwinder of libgcc_eh (linked statically with -static-libgcc),
// module maps through dl_iterate_phdr.
//
// Why not libunwind: Debian ships libunwind.a built without -fPIC, so it cannot be linked into
// a shared object, and its shared library would be a run-time dependency we must not have.
// _Unwind_Backtrace walks the same .eh_frame tables, from the static, PIC libgcc_eh.a.
#include "stacks.hpp"

#include <link.h>
#include <unwind.h>
#include <unistd.h>

#include <climits>

namespace memtool::interpose::detail {

namespace {

struct StackWalk {
  std::uint64_t* ips;
  std::size_t capacity;
  std::size_t skip;  // frames still to drop
  std::size_t written;
};

_Unwind_Reason_Code record_frame(_Unwind_Context* context, void* data) {
  auto& walk = *static_cast<StackWalk*>(data);
  const _Unwind_Ptr ip = _Unwind_GetIP(context);
  if (ip == 0) return _URC_END_OF_STACK;
  if (walk.skip > 0) {
    --walk.skip;
    return _URC_NO_REASON;
  }
  walk.ips[walk.written++] = ip;
  return walk.written == walk.capacity ? _URC_END_OF_STACK : _URC_NO_REASON;
}

int count_objects(dl_phdr_info* info, std::size_t /*size*/, void* data) {
  *static_cast<unsigned long long*>(data) = info->dlpi_adds;
  return 1;  // dlpi_adds is the same in every callback: one is enough
}

struct SegmentVisit {
  const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t, const char*)>* visit;
  const char* main_program;
};

int visit_object(dl_phdr_info* info, std::size_t /*size*/, void* data) {
  const auto& visit = *static_cast<SegmentVisit*>(data);
  const char* path = (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') ? info->dlpi_name : visit.main_program;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
    const std::uint64_t start = info->dlpi_addr + segment.p_vaddr;
    (*visit.visit)(start, start + segment.p_memsz, segment.p_offset, path);
  }
  return 0;
}

}  // namespace

std::size_t capture_stack(std::uint64_t* ips, std::size_t capacity, std::size_t skip) noexcept {
  if (capacity == 0) return 0;
  StackWalk walk{ips, capacity, skip + 1, 0};  // + this function's own frame
  _Unwind_Backtrace(record_frame, &walk);
  return walk.written;
}

unsigned long long loaded_object_count() noexcept {
  unsigned long long adds = 0;
  dl_iterate_phdr(count_objects, &adds);
  return adds;
}

void for_each_code_segment(const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t, const char*)>& visit) {
  char main_program[PATH_MAX] = "[main]";
  const ssize_t n = readlink("/proc/self/exe", main_program, sizeof(main_program) - 1);
  if (n > 0) main_program[n] = '\0';
  SegmentVisit data{&visit, main_program};
  dl_iterate_phdr(visit_object, &data);
}

}  // namespace memtool::interpose::detail
