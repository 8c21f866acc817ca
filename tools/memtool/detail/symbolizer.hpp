// Offline symbolisation of raw instruction pointers recorded by libmemtool.so (MEMTOOL_STACKS=1):
// the trace holds IPs and the code segments of every loaded object; here each IP becomes
// "function+0xoffset (object)" from the object's ELF symbol tables (.symtab, else .dynsym),
// demangled. Objects that are missing, changed or corrupt degrade to "object+0xoffset".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "memtool/trace/event.hpp"

namespace memtool::cli {

struct Symbol {
  std::string name;          // demangled
  std::uint64_t offset = 0;  // ip - symbol start
};

// The symbols of one ELF file, sorted by address; lookups by virtual address in the file.
class ElfSymbols {
 public:
  // nullptr when the file cannot be read or is not a 64-bit little-endian ELF.
  static std::unique_ptr<ElfSymbols> load(const std::string& path);
  // The function containing the file offset `file_offset` of a loaded code segment.
  [[nodiscard]] std::optional<Symbol> lookup_file_offset(std::uint64_t file_offset) const;

 private:
  struct Entry {
    std::uint64_t start;
    std::uint64_t size;
    std::uint32_t name;  // offset into names_
  };
  struct Segment {
    std::uint64_t file_offset;
    std::uint64_t vaddr;
    std::uint64_t size;
  };
  std::string names_;
  std::vector<Entry> entries_;
  std::vector<Segment> segments_;
};

class Symbolizer {
 public:
  // `resolve_path` maps a module's interned path id to text (TraceModel::string).
  Symbolizer() = default;
  // "name+0x1a (libfoo.so)", "libfoo.so+0x1234", or "0x7f..." when the IP is in no module.
  std::string describe(std::uint64_t ip, std::span<const trace::ModuleMapping> modules,
                       const std::function<std::string_view(trace::StringId)>& path_of);
  // True when the IP lies in an object whose file name starts with `prefix` (e.g. "libmemtool").
  static bool in_object(std::uint64_t ip, std::span<const trace::ModuleMapping> modules,
                        const std::function<std::string_view(trace::StringId)>& path_of, std::string_view prefix);

 private:
  std::unordered_map<std::string, std::unique_ptr<ElfSymbols>> cache_;
};

}  // namespace memtool::cli
