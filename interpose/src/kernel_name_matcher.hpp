// KernelNameMatcher: MEMTOOL_ITERATION_KERNEL's regular expression, matched in time linear in
// the kernel name and with a stack whose depth does not depend on the name.
//
// libstdc++'s std::regex backtracks: `^(([a-z_0-9])*)*X$` takes exponential time on a long
// mangled name, and it recurses once per character, so a long name can overflow the stack of
// the thread that launches the kernel. This is a Thompson NFA run as a Pike VM over the name's
// bytes (the technique RE2 and Go's regexp use): every program position is visited at most
// once per input byte, so a match costs O(name length × pattern size), never more, and needs
// no recursion. libmemtool.so stays self-contained (no regex library to carry).
//
// Syntax: the ECMAScript subset kernel names need, matched anywhere in the name (as
// std::regex_search does): literals and escapes (\. \\ \t \n \xHH ...), `.`, classes [a-z_]
// [^0-9] with \d \w \s (and \D \W \S), anchors ^ $ \b \B, groups (...) and (?:...),
// alternation |, and the quantifiers * + ? {n} {n,} {n,m} (lazy forms accepted: for a yes/no
// answer they mean the same). Back-references and lookaround need backtracking and are refused
// when the pattern is compiled, as are patterns longer than 4 KiB, nested deeper than 64
// groups, or expanding to more than 16384 instructions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memtool::interpose {

class KernelNameMatcher {
 public:
  // nullopt, with *error saying why (when error is not null), for an invalid or unsupported
  // pattern.
  [[nodiscard]] static std::optional<KernelNameMatcher> compile(std::string_view pattern, std::string* error);

  // Whether the pattern matches somewhere in `name`.
  [[nodiscard]] bool matches(std::string_view name) const;

  struct Instruction {
    enum class Op : std::uint8_t {
      byte,        // the byte `arg`
      byte_class,  // a byte in classes_[arg]
      any,         // any byte but \n and \r
      split,       // go on at `arg` and at `alt`
      jump,        // go on at `arg`
      line_start,  // ^
      line_end,    // $
      word_boundary,
      not_word_boundary,
      match,
    };
    Op op = Op::match;
    std::uint32_t arg = 0;
    std::uint32_t alt = 0;
  };
  struct ByteSet {
    std::uint64_t bits[4] = {0, 0, 0, 0};
    void add(unsigned byte) { bits[byte >> 6] |= std::uint64_t{1} << (byte & 63); }
    [[nodiscard]] bool has(unsigned byte) const { return ((bits[byte >> 6] >> (byte & 63)) & 1) != 0; }
  };

 private:
  friend class PatternCompiler;
  std::vector<Instruction> program_;
  std::vector<ByteSet> classes_;
};

}  // namespace memtool::interpose
