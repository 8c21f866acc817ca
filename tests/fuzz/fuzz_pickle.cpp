// libFuzzer target for the PyTorch snapshot importer's pickle path (our own unpickler plus the
// schema walk): any byte string must be imported or refused with InputError — never a crash,
// hang, unbounded allocation, or an event stream that breaks the importer's promises.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_snapshot_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  memtool::fuzz::check_snapshot_import(bytes, [](std::string_view input, memtool::trace::EventVisitor& visitor) {
    return memtool::trace::import_snapshot_pickle(input, "fuzz.pickle", visitor);
  });
  return 0;
}
