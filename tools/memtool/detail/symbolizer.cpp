// ELF symbol tables read with bounds checks on every offset: the file is whatever sits at a
// path recorded on another machine or before a rebuild, so nothing in it is trusted.
#include "detail/symbolizer.hpp"

#include <cxxabi.h>
#include <elf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace memtool::cli {
namespace {

constexpr std::uint64_t kMaxElfBytes = std::uint64_t{2} << 30;

template <class T>
bool read_at(const std::string& bytes, std::uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

std::string demangle(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) return name;
  std::string out(text);
  std::free(text);
  return out;
}

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

const trace::ModuleMapping* module_of(std::uint64_t ip, std::span<const trace::ModuleMapping> modules) {
  for (const auto& m : modules)
    if (ip >= m.start && ip < m.end) return &m;
  return nullptr;
}

}  // namespace

std::unique_ptr<ElfSymbols> ElfSymbols::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  in.seekg(0, std::ios::end);
  const auto length = static_cast<std::uint64_t>(std::max<std::streamoff>(0, in.tellg()));
  if (length < sizeof(Elf64_Ehdr) || length > kMaxElfBytes) return nullptr;
  in.seekg(0);
  std::string bytes(length, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(length))) return nullptr;

  Elf64_Ehdr header{};
  if (!read_at(bytes, 0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
    return nullptr;

  auto symbols = std::unique_ptr<ElfSymbols>(new ElfSymbols());
  for (std::uint64_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr ph{};
    if (!read_at(bytes, header.e_phoff + i * sizeof(Elf64_Phdr), ph)) return nullptr;
    if (ph.p_type == PT_LOAD) symbols->segments_.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz});
  }

  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (std::uint64_t i = 0; i < header.e_shnum; ++i)
    if (!read_at(bytes, header.e_shoff + i * sizeof(Elf64_Shdr), sections[i])) return nullptr;

  // .symtab when present (unstripped), else .dynsym.
  for (std::uint32_t wanted : {std::uint32_t{SHT_SYMTAB}, std::uint32_t{SHT_DYNSYM}}) {
    for (const auto& section : sections) {
      if (section.sh_type != wanted || section.sh_link >= sections.size()) continue;
      const auto& strtab = sections[section.sh_link];
      if (strtab.sh_offset > bytes.size() || bytes.size() - strtab.sh_offset < strtab.sh_size) continue;
      const std::string_view names(bytes.data() + strtab.sh_offset, strtab.sh_size);
      const std::uint64_t count = section.sh_entsize == sizeof(Elf64_Sym) ? section.sh_size / sizeof(Elf64_Sym) : 0;
      for (std::uint64_t s = 0; s < count; ++s) {
        Elf64_Sym sym{};
        if (!read_at(bytes, section.sh_offset + s * sizeof(Elf64_Sym), sym)) break;
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 || sym.st_name >= names.size()) continue;
        const auto end = names.find('\0', sym.st_name);
        if (end == std::string_view::npos) continue;
        const auto name_offset = static_cast<std::uint32_t>(symbols->names_.size());
        symbols->names_ += demangle(std::string(names.substr(sym.st_name, end - sym.st_name)).c_str());
        symbols->names_.push_back('\0');
        symbols->entries_.push_back({sym.st_value, std::max<std::uint64_t>(sym.st_size, 1), name_offset});
      }
    }
    if (!symbols->entries_.empty()) break;
  }
  std::sort(symbols->entries_.begin(), symbols->entries_.end(),
            [](const Entry& a, const Entry& b) { return a.start < b.start; });
  return symbols;
}

std::optional<Symbol> ElfSymbols::lookup_file_offset(std::uint64_t file_offset) const {
  std::optional<std::uint64_t> vaddr;
  for (const auto& seg : segments_)
    if (file_offset >= seg.file_offset && file_offset - seg.file_offset < seg.size)
      vaddr = seg.vaddr + (file_offset - seg.file_offset);
  if (!vaddr) return std::nullopt;
  auto it = std::upper_bound(entries_.begin(), entries_.end(), *vaddr,
                             [](std::uint64_t v, const Entry& e) { return v < e.start; });
  if (it == entries_.begin()) return std::nullopt;
  --it;
  if (*vaddr - it->start >= it->size) return std::nullopt;
  return Symbol{std::string(names_.c_str() + it->name), *vaddr - it->start};
}

std::string Symbolizer::describe(std::uint64_t ip, std::span<const trace::ModuleMapping> modules,
                                 const std::function<std::string_view(trace::StringId)>& path_of) {
  const auto* module = module_of(ip, modules);
  if (module == nullptr) return fmt::format("{:#x}", ip);
  const std::string path(path_of(module->path));
  // A return address points after the call: look up ip - 1 so the call's own line is named.
  const std::uint64_t file_offset = ip - module->start + module->file_offset;
  auto [it, inserted] = cache_.try_emplace(path);
  if (inserted) it->second = ElfSymbols::load(path);
  if (it->second) {
    if (auto symbol = it->second->lookup_file_offset(file_offset > 0 ? file_offset - 1 : 0))
      return fmt::format("{}+{:#x} ({})", symbol->name, symbol->offset + 1, base_name(path));
  }
  return fmt::format("{}+{:#x}", base_name(path), file_offset);
}

bool Symbolizer::in_object(std::uint64_t ip, std::span<const trace::ModuleMapping> modules,
                           const std::function<std::string_view(trace::StringId)>& path_of, std::string_view prefix) {
  const auto* module = module_of(ip, modules);
  return module != nullptr && base_name(path_of(module->path)).starts_with(prefix);
}

}  // namespace memtool::cli
