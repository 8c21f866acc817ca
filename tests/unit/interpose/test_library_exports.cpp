// libmemtool.so is self-contained: it exports the hook table's symbols, dlsym,
// cuGetProcAddress{,_v2} and memtool_* and nothing else, needs only the C library and the
// loader at run time (no libstdc++, libgcc_s, libunwind, libfmt), and no glibc newer than 2.34.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <set>
#include <string>

#include "memtool/interpose/hook_table.hpp"

namespace {
std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) out += buffer.data();
  REQUIRE(pclose(pipe) == 0);
  return out;
}
std::set<std::string> words_at(const std::string& text, std::size_t column) {
  std::set<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    std::size_t pos = 0;
    std::string word;
    for (std::size_t i = 0; i <= column; ++i) {
      const std::size_t begin = line.find_first_not_of(' ', pos);
      if (begin == std::string::npos) {
        word.clear();
        break;
      }
      pos = line.find(' ', begin);
      word = line.substr(begin, pos == std::string::npos ? std::string::npos : pos - begin);
    }
    if (!word.empty()) out.insert(word);
  }
  return out;
}
}  // namespace

TEST_CASE("libmemtool.so exports exactly the hooks, the resolvers and the memtool_ API", "[interpose][library]") {
  const std::string library = MEMTOOL_PRELOAD_PATH;
  // nm -D --defined-only prints "address type name".
  const std::set<std::string> exported = words_at(run("nm -D --defined-only " + library), 2);
  std::set<std::string> expected{"dlsym", "cuGetProcAddress", "cuGetProcAddress_v2", "memtool_iteration_mark",
                                 "memtool_version"};
  for (const auto& hook : memtool::interpose::kHooks) expected.insert(std::string(hook.symbol));
  CHECK(exported == expected);
}

TEST_CASE("libmemtool.so needs nothing beyond libc and the loader", "[interpose][library]") {
  const std::string library = MEMTOOL_PRELOAD_PATH;
  const std::string dynamic = run("readelf -d " + library + " | grep NEEDED | sed 's/.*\\[\\(.*\\)\\]/\\1/'");
  const std::set<std::string> needed = words_at(dynamic, 0);
  const std::set<std::string> allowed{"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0",
                                      "ld-linux-x86-64.so.2"};
  for (const std::string& library_needed : needed) {
    INFO(library_needed);
    CHECK(allowed.count(library_needed) == 1);
  }
  CHECK(needed.count("libc.so.6") == 1);
}

TEST_CASE("libmemtool.so asks for no glibc newer than 2.34", "[interpose][library]") {
  // It is preloaded into programs on GPU machines of other distributions (Ubuntu 22.04 has
  // glibc 2.35, RHEL 9 has 2.34): compat/glibc_compat.cpp keeps the static libstdc++ and
  // unwinder from asking for arc4random (2.36) and _dl_find_object (2.35).
  const std::string library = MEMTOOL_PRELOAD_PATH;
  const std::string versions = run("objdump -T " + library + " | grep -o 'GLIBC_2\\.[0-9]*' | sort -u");
  const std::set<std::string> required = words_at(versions, 0);
  REQUIRE_FALSE(required.empty());
  for (const std::string& version : required) {
    INFO(version);
    CHECK(std::stoi(version.substr(std::string("GLIBC_2.").size())) <= 34);
  }
}
