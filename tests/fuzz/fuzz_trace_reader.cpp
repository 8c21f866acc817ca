// libFuzzer target for the trace reader (format v1): any byte string must either load (every
// complete record delivered) or throw InputError — never crash, hang or allocate without
// bound. The visitor reads every byte it is handed so AddressSanitizer sees any stray view.
#include <cstddef>
#include <cstdint>
#include <span>

#include "memtool/trace/input_error.hpp"
#include "memtool/trace/reader.hpp"

namespace {

class TouchEverything : public memtool::trace::EventVisitor {
 public:
  std::uint64_t sum = 0;

  void on_metadata(std::string_view key, std::string_view value) override {
    touch(key);
    touch(value);
  }
  void on_string(memtool::trace::StringId id, std::string_view text) override {
    sum += id.value();
    touch(text);
  }
  void on_stack(memtool::trace::StackId id, std::span<const memtool::trace::StackFrame> frames) override {
    sum += id.value();
    for (const auto& f : frames) sum += f.ip + f.line + f.function.value() + f.file.value();
  }
  void on_launch(const memtool::trace::LaunchEvent& e) override {
    sum += e.kernel.value();
    for (const std::uint64_t a : e.touched) sum += a;
  }
  void on_alloc(const memtool::trace::AllocEvent& e) override { sum += e.address + e.size; }

 private:
  void touch(std::string_view s) {
    for (const char c : s) sum += static_cast<unsigned char>(c);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  TouchEverything visitor;
  try {
    const auto result = memtool::trace::read_trace_bytes(std::span(reinterpret_cast<const std::byte*>(data), size),
                                                         "fuzz-input", visitor);
    if (result.bytes_read > size || result.clean_end == result.truncated) __builtin_trap();
  } catch (const memtool::trace::InputError& e) {
    if (e.offset() > size) __builtin_trap();  // an error must point inside the input
  }
  return 0;
}
