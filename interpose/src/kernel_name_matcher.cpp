// KernelNameMatcher: pattern → syntax tree → NFA program, and the Pike VM that runs it (see
// kernel_name_matcher.hpp). The parser recurses once per group level, at most kMaxDepth deep;
// the matcher does not recurse at all.
#include "kernel_name_matcher.hpp"

#include <fmt/format.h>

#include <limits>

namespace memtool::interpose {
namespace {

constexpr std::size_t kMaxPatternBytes = 4096;
constexpr unsigned kMaxDepth = 64;
constexpr std::size_t kMaxInstructions = 16384;
constexpr std::uint32_t kMaxCount = 1000;  // {n,m}: as std::regex, bounds beyond are refused
constexpr std::uint32_t kUnbounded = std::numeric_limits<std::uint32_t>::max();

bool is_word(unsigned c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

struct Node {
  enum class Kind : std::uint8_t {
    empty,
    byte,
    byte_class,
    any,
    line_start,
    line_end,
    word_boundary,
    not_word_boundary,
    concat,
    alternate,
    repeat
  };
  Kind kind = Kind::empty;
  std::uint32_t value = 0;              // byte, or class index
  std::uint32_t min = 0;                // repeat
  std::uint32_t max = 0;                // repeat (kUnbounded: no bound)
  std::vector<std::uint32_t> children;  // concat, alternate: the parts; repeat: the one repeated
};

// Thrown inside the compiler only; compile() turns it into its error text.
struct PatternError {
  std::string message;
};

}  // namespace

class PatternCompiler {
 public:
  explicit PatternCompiler(std::string_view pattern) : pattern_(pattern) {}

  KernelNameMatcher run() {
    if (pattern_.size() > kMaxPatternBytes) {
      throw PatternError{fmt::format("longer than {} bytes", kMaxPatternBytes)};
    }
    const std::uint32_t root = alternation(0);
    if (pos_ != pattern_.size()) fail("unmatched ')'");
    emit(root);
    add({KernelNameMatcher::Instruction::Op::match, 0, 0});
    return std::move(out_);
  }

 private:
  using Kind = Node::Kind;
  using Op = KernelNameMatcher::Instruction::Op;

  [[noreturn]] void fail(std::string_view what) const {
    throw PatternError{fmt::format("{} at offset {}", what, pos_)};
  }
  [[nodiscard]] bool at_end() const { return pos_ >= pattern_.size(); }
  [[nodiscard]] char peek() const { return pattern_[pos_]; }

  std::uint32_t node(Node n) {
    nodes_.push_back(std::move(n));
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }
  std::uint32_t leaf(Kind kind, std::uint32_t value = 0) { return node({kind, value, 0, 0, {}}); }

  // --- parsing ---------------------------------------------------------------------------

  std::uint32_t alternation(unsigned depth) {
    std::vector<std::uint32_t> branches{sequence(depth)};
    while (!at_end() && peek() == '|') {
      ++pos_;
      branches.push_back(sequence(depth));
    }
    if (branches.size() == 1) return branches.front();
    return node({Kind::alternate, 0, 0, 0, std::move(branches)});
  }

  std::uint32_t sequence(unsigned depth) {
    std::vector<std::uint32_t> parts;
    while (!at_end() && peek() != '|' && peek() != ')') parts.push_back(quantified(depth));
    if (parts.empty()) return leaf(Kind::empty);
    if (parts.size() == 1) return parts.front();
    return node({Kind::concat, 0, 0, 0, std::move(parts)});
  }

  std::uint32_t quantified(unsigned depth) {
    const std::uint32_t atom_node = atom(depth);
    if (at_end()) return atom_node;
    std::uint32_t min = 0;
    std::uint32_t max = 0;
    switch (peek()) {
      case '*':
        min = 0, max = kUnbounded, ++pos_;
        break;
      case '+':
        min = 1, max = kUnbounded, ++pos_;
        break;
      case '?':
        min = 0, max = 1, ++pos_;
        break;
      case '{':
        braces(min, max);
        break;
      default:
        return atom_node;
    }
    const Kind kind = nodes_[atom_node].kind;
    if (kind == Kind::line_start || kind == Kind::line_end || kind == Kind::word_boundary ||
        kind == Kind::not_word_boundary) {
      fail("nothing to repeat");
    }
    if (!at_end() && peek() == '?') ++pos_;  // lazy: the same yes/no answer
    if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')) fail("nothing to repeat");
    return node({Kind::repeat, 0, min, max, {atom_node}});
  }

  std::uint32_t number() {
    if (at_end() || peek() < '0' || peek() > '9') fail("expected a number in {}");
    std::uint32_t value = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      value = value * 10 + static_cast<std::uint32_t>(peek() - '0');
      if (value > kMaxCount) fail(fmt::format("repeat count over {}", kMaxCount));
      ++pos_;
    }
    return value;
  }

  void braces(std::uint32_t& min, std::uint32_t& max) {
    ++pos_;  // '{'
    min = number();
    max = min;
    if (!at_end() && peek() == ',') {
      ++pos_;
      max = !at_end() && peek() == '}' ? kUnbounded : number();
    }
    if (at_end() || peek() != '}') fail("unterminated {}");
    ++pos_;
    if (max < min) fail("{n,m} with m < n");
  }

  std::uint32_t atom(unsigned depth) {
    const char c = peek();
    switch (c) {
      case '(':
        return group(depth);
      case '[':
        return byte_class();
      case '.':
        ++pos_;
        return leaf(Kind::any);
      case '^':
        ++pos_;
        return leaf(Kind::line_start);
      case '$':
        ++pos_;
        return leaf(Kind::line_end);
      case '\\':
        return escape();
      case '*':
      case '+':
      case '?':
      case '{':
        fail("nothing to repeat");
      default:
        ++pos_;
        return leaf(Kind::byte, static_cast<unsigned char>(c));
    }
  }

  std::uint32_t group(unsigned depth) {
    if (depth + 1 > kMaxDepth) fail(fmt::format("groups nested deeper than {}", kMaxDepth));
    ++pos_;  // '('
    if (!at_end() && peek() == '?') {
      if (pos_ + 1 < pattern_.size() && pattern_[pos_ + 1] == ':') {
        pos_ += 2;
      } else {
        fail("lookaround and named groups are not supported (they need backtracking)");
      }
    }
    const std::uint32_t inner = alternation(depth + 1);
    if (at_end() || peek() != ')') fail("missing ')'");
    ++pos_;
    return inner;
  }

  unsigned hex_digits(unsigned count) {
    unsigned value = 0;
    for (unsigned i = 0; i < count; ++i) {
      if (at_end()) fail("incomplete hexadecimal escape");
      const char h = peek();
      unsigned digit = 0;
      if (h >= '0' && h <= '9')
        digit = static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        digit = static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        digit = static_cast<unsigned>(h - 'A' + 10);
      else
        fail("bad hexadecimal escape");
      value = value * 16 + digit;
      ++pos_;
    }
    return value;
  }

  // An escape at pos_ ('\'): a byte (returned), or a class (*set filled, returns -1). Inside a
  // class, \b is a backspace; outside, callers handle \b and \B first.
  int escaped(KernelNameMatcher::ByteSet* set) {
    ++pos_;  // '\'
    if (at_end()) fail("pattern ends with '\\'");
    const char c = peek();
    ++pos_;
    auto add_range = [&](unsigned from, unsigned to) {
      for (unsigned b = from; b <= to; ++b) set->add(b);
    };
    auto complement = [&] {
      for (auto& word : set->bits) word = ~word;
    };
    switch (c) {
      case 'd':
        add_range('0', '9');
        return -1;
      case 'D':
        add_range('0', '9');
        complement();
        return -1;
      case 'w':
        add_range('a', 'z');
        add_range('A', 'Z');
        add_range('0', '9');
        set->add('_');
        return -1;
      case 'W':
        add_range('a', 'z');
        add_range('A', 'Z');
        add_range('0', '9');
        set->add('_');
        complement();
        return -1;
      case 's':
        add_range('\t', '\r');
        set->add(' ');
        return -1;
      case 'S':
        add_range('\t', '\r');
        set->add(' ');
        complement();
        return -1;
      case 't':
        return '\t';
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 'f':
        return '\f';
      case 'v':
        return '\v';
      case 'b':
        return '\b';  // in a class
      case '0':
        if (!at_end() && peek() >= '0' && peek() <= '9') fail("back-references are not supported");
        return 0;
      case 'x':
        return static_cast<int>(hex_digits(2));
      case 'u': {
        const unsigned code = hex_digits(4);
        if (code > 0xFF) fail("\\u escapes above \\u00ff are not supported (names are matched byte by byte)");
        return static_cast<int>(code);
      }
      case 'c': {
        if (at_end() || !((peek() >= 'a' && peek() <= 'z') || (peek() >= 'A' && peek() <= 'Z'))) {
          fail("\\c needs a letter");
        }
        const auto letter = static_cast<unsigned char>(peek());
        ++pos_;
        return letter % 32;
      }
      default:
        if (c >= '1' && c <= '9') fail("back-references are not supported (they need backtracking)");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) fail(fmt::format("unknown escape \\{}", c));
        return static_cast<unsigned char>(c);  // \. \\ \( ...: the character itself
    }
  }

  std::uint32_t escape() {
    if (pos_ + 1 < pattern_.size() && (pattern_[pos_ + 1] == 'b' || pattern_[pos_ + 1] == 'B')) {
      const bool boundary = pattern_[pos_ + 1] == 'b';
      pos_ += 2;
      return leaf(boundary ? Kind::word_boundary : Kind::not_word_boundary);
    }
    KernelNameMatcher::ByteSet set;
    const int byte = escaped(&set);
    if (byte >= 0) return leaf(Kind::byte, static_cast<std::uint32_t>(byte));
    return class_node(set);
  }

  std::uint32_t class_node(const KernelNameMatcher::ByteSet& set) {
    out_.classes_.push_back(set);
    return leaf(Kind::byte_class, static_cast<std::uint32_t>(out_.classes_.size() - 1));
  }

  // One member of a class: a byte (returned) or a set merged into `set` (-1).
  int class_member(KernelNameMatcher::ByteSet& set) {
    if (peek() == '\\') {
      KernelNameMatcher::ByteSet escaped_set;
      const int byte = escaped(&escaped_set);
      if (byte < 0) {
        for (int w = 0; w < 4; ++w) set.bits[w] |= escaped_set.bits[w];
      }
      return byte;
    }
    return static_cast<unsigned char>(pattern_[pos_++]);
  }

  std::uint32_t byte_class() {
    ++pos_;  // '['
    bool negated = false;
    if (!at_end() && peek() == '^') {
      negated = true;
      ++pos_;
    }
    KernelNameMatcher::ByteSet set;
    while (true) {
      if (at_end()) fail("missing ']'");
      if (peek() == ']') break;
      const int first = class_member(set);
      if (first < 0) continue;
      if (pos_ + 1 < pattern_.size() && peek() == '-' && pattern_[pos_ + 1] != ']') {
        ++pos_;  // '-'
        const int last = class_member(set);
        if (last < 0) fail("a class cannot end a range");
        if (last < first) fail("range out of order in a class");
        for (int b = first; b <= last; ++b) set.add(static_cast<unsigned>(b));
      } else {
        set.add(static_cast<unsigned>(first));
      }
    }
    ++pos_;  // ']'
    if (negated) {
      for (auto& word : set.bits) word = ~word;
    }
    return class_node(set);
  }

  // --- code ------------------------------------------------------------------------------

  std::uint32_t add(KernelNameMatcher::Instruction instruction) {
    if (out_.program_.size() >= kMaxInstructions) {
      throw PatternError{fmt::format("expands to more than {} instructions", kMaxInstructions)};
    }
    out_.program_.push_back(instruction);
    return static_cast<std::uint32_t>(out_.program_.size() - 1);
  }
  [[nodiscard]] std::uint32_t here() const { return static_cast<std::uint32_t>(out_.program_.size()); }
  KernelNameMatcher::Instruction& at(std::uint32_t pc) { return out_.program_[pc]; }

  // Recursion follows the tree, whose depth the parser bounded.
  void emit(std::uint32_t index) {
    const Node& n = nodes_[index];
    switch (n.kind) {
      case Kind::empty:
        return;
      case Kind::byte:
        add({Op::byte, n.value, 0});
        return;
      case Kind::byte_class:
        add({Op::byte_class, n.value, 0});
        return;
      case Kind::any:
        add({Op::any, 0, 0});
        return;
      case Kind::line_start:
        add({Op::line_start, 0, 0});
        return;
      case Kind::line_end:
        add({Op::line_end, 0, 0});
        return;
      case Kind::word_boundary:
        add({Op::word_boundary, 0, 0});
        return;
      case Kind::not_word_boundary:
        add({Op::not_word_boundary, 0, 0});
        return;
      case Kind::concat:
        for (const std::uint32_t child : n.children) emit(child);
        return;
      case Kind::alternate: {
        // split(first, next split) … ; every branch but the last jumps to the end
        std::vector<std::uint32_t> jumps;
        for (std::size_t b = 0; b < n.children.size(); ++b) {
          if (b + 1 < n.children.size()) {
            const std::uint32_t split = add({Op::split, 0, 0});
            at(split).arg = here();
            emit(n.children[b]);
            jumps.push_back(add({Op::jump, 0, 0}));
            at(split).alt = here();
          } else {
            emit(n.children[b]);
          }
        }
        for (const std::uint32_t jump : jumps) at(jump).arg = here();
        return;
      }
      case Kind::repeat:
        emit_repeat(n.children.front(), n.min, n.max);
        return;
    }
  }

  void emit_repeat(std::uint32_t child, std::uint32_t min, std::uint32_t max) {
    if (max == kUnbounded) {
      if (min == 0) {  // L: split(body, end); body; jump L
        const std::uint32_t loop = add({Op::split, 0, 0});
        at(loop).arg = here();
        emit(child);
        add({Op::jump, loop, 0});
        at(loop).alt = here();
        return;
      }
      for (std::uint32_t i = 0; i + 1 < min; ++i) emit(child);
      const std::uint32_t body = here();  // the last copy loops: body; split(body, end)
      emit(child);
      add({Op::split, body, here() + 1});
      return;
    }
    for (std::uint32_t i = 0; i < min; ++i) emit(child);
    std::vector<std::uint32_t> skips;  // each optional copy: split(copy, end)
    for (std::uint32_t i = min; i < max; ++i) {
      const std::uint32_t split = add({Op::split, 0, 0});
      at(split).arg = here();
      skips.push_back(split);
      emit(child);
    }
    for (const std::uint32_t split : skips) at(split).alt = here();
  }

  std::string_view pattern_;
  std::size_t pos_ = 0;
  std::vector<Node> nodes_;
  KernelNameMatcher out_;
};

std::optional<KernelNameMatcher> KernelNameMatcher::compile(std::string_view pattern, std::string* error) {
  try {
    return PatternCompiler(pattern).run();
  } catch (const PatternError& e) {
    if (error != nullptr) *error = e.message;
  }
  return std::nullopt;
}

bool KernelNameMatcher::matches(std::string_view name) const {
  using Op = Instruction::Op;
  const std::size_t size = program_.size();
  // Two thread lists, a visit stamp per instruction (the step that last added it) and the
  // explicit stack of the epsilon closure: O(program) memory whatever the name.
  std::vector<std::uint32_t> current;
  std::vector<std::uint32_t> next;
  std::vector<std::uint32_t> stack;
  std::vector<std::uint64_t> stamp(size, 0);
  current.reserve(size);
  next.reserve(size);
  stack.reserve(2 * size + 1);
  std::uint64_t generation = 0;

  // Adds `pc`'s closure at position `at` (between name[at - 1] and name[at]) to `list`; true
  // when it reaches the match.
  auto add = [&](std::vector<std::uint32_t>& list, std::uint32_t start, std::size_t at) {
    stack.push_back(start);
    while (!stack.empty()) {
      const std::uint32_t pc = stack.back();
      stack.pop_back();
      if (stamp[pc] == generation) continue;
      stamp[pc] = generation;
      const Instruction& in = program_[pc];
      const bool word_before = at > 0 && is_word(static_cast<unsigned char>(name[at - 1]));
      const bool word_after = at < name.size() && is_word(static_cast<unsigned char>(name[at]));
      switch (in.op) {
        case Op::match:
          stack.clear();
          return true;
        case Op::split:
          stack.push_back(in.alt);
          stack.push_back(in.arg);
          break;
        case Op::jump:
          stack.push_back(in.arg);
          break;
        case Op::line_start:
          if (at == 0) stack.push_back(pc + 1);
          break;
        case Op::line_end:
          if (at == name.size()) stack.push_back(pc + 1);
          break;
        case Op::word_boundary:
          if (word_before != word_after) stack.push_back(pc + 1);
          break;
        case Op::not_word_boundary:
          if (word_before == word_after) stack.push_back(pc + 1);
          break;
        default:
          list.push_back(pc);
          break;  // consumes a byte: runs at the next step
      }
    }
    return false;
  };

  ++generation;
  if (add(current, 0, 0)) return true;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    ++generation;
    next.clear();
    for (const std::uint32_t pc : current) {
      const Instruction& in = program_[pc];
      const bool takes = (in.op == Op::byte && in.arg == c) || (in.op == Op::byte_class && classes_[in.arg].has(c)) ||
                         (in.op == Op::any && c != '\n' && c != '\r');
      if (takes && add(next, pc + 1, i + 1)) return true;
    }
    if (add(next, 0, i + 1)) return true;  // a match may start at every position
    current.swap(next);
  }
  return false;
}

}  // namespace memtool::interpose
