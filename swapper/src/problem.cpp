// The problem file (problem.hpp): written and read a record a line.
#include "memtool/swapper/problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace memtool::swapper {
namespace {

constexpr std::string_view kMagic = "memtool-swap-problem";
constexpr std::string_view kReachesAll = "reaches-all";  // an op's optional mark (Op::reaches_all)
constexpr std::string_view kHostTimed = "host-timed";    // the ops record's mark (Iteration::host_timed)
constexpr std::string_view kHostTime = "host=";          // a host-timed op's host time (Op::host_ns)
constexpr std::string_view kSyncs = "syncs";             // a host-timed op's mark (Op::syncs)
constexpr std::string_view kTransient = "transient=";    // an op's optional transient bytes (Op::transient_bytes)
constexpr std::string_view kCopyBytes = "copy=";         // a buffer's optional bytes a copy moves (Buffer::copy_bytes)
// Sizes and times far past any device, so sums over a whole iteration cannot overflow.
constexpr std::uint64_t kMostBytes = std::uint64_t{1} << 50;    // 1 PiB per buffer
constexpr std::uint64_t kMostNs = std::uint64_t{1} << 50;       // 13 days per op
constexpr std::uint64_t kMostRecords = std::uint64_t{1} << 26;  // ops, buffers
constexpr std::uint64_t kMostTotal = std::uint64_t{1} << 60;    // bytes of all buffers, ns of all ops
constexpr std::uint64_t kMostId = std::uint64_t{1} << 62;       // buffer ids: no process makes more buffers

std::string_view kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::copy:
      return "copy";
    case OpKind::memset:
      return "memset";
    case OpKind::launch:
      break;
  }
  return "launch";
}

std::string_view mode_name(AccessMode mode) {
  switch (mode) {
    case AccessMode::read:
      return "r";
    case AccessMode::write:
      return "w";
    case AccessMode::read_write:
      break;
  }
  return "rw";
}

// One line split into words, with its number for messages.
class Record {
 public:
  Record(std::string_view line, std::uint64_t number) : number_(number) {
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      const std::size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
      if (i > start) words_.push_back(line.substr(start, i - start));
    }
  }

  [[nodiscard]] std::size_t size() const { return words_.size(); }
  [[nodiscard]] std::string_view word(std::size_t i) const { return words_.at(i); }

  [[noreturn]] void fail(std::string_view why) const {
    throw std::invalid_argument(fmt::format("problem file, line {}: {}", number_, why));
  }
  void expect(std::string_view keyword, std::size_t words) const {
    if (words_.empty() || words_[0] != keyword) fail(fmt::format("expected a '{}' record", keyword));
    if (words_.size() != words)
      fail(fmt::format("'{}' takes {} values, found {}", keyword, words - 1, words_.size() - 1));
  }
  [[nodiscard]] std::uint64_t integer(std::size_t i, std::string_view what, std::uint64_t most) const {
    const std::string_view text = word(i);
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size())
      fail(fmt::format("{} '{}' is not a whole number", what, text));
    if (value > most) fail(fmt::format("{} {} is out of range (at most {})", what, value, most));
    return value;
  }
  [[nodiscard]] double real(std::size_t i, std::string_view what) const {
    const std::string_view text = word(i);
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(value)) {
      fail(fmt::format("{} '{}' is not a finite number", what, text));
    }
    return value;
  }

 private:
  std::vector<std::string_view> words_;
  std::uint64_t number_;
};

// Lines in order, skipping comments and blank ones.
class Lines {
 public:
  explicit Lines(std::istream& in) : in_(in) {}
  Record next(std::string_view wanted) {
    while (std::getline(in_, line_)) {
      ++number_;
      const std::size_t first = line_.find_first_not_of(" \t\r");
      if (first == std::string::npos || line_[first] == '#') continue;
      return Record(line_, number_);
    }
    throw std::invalid_argument(fmt::format("problem file, line {}: ends before its '{}' record", number_ + 1, wanted));
  }
  // After the last record: anything but comments and blank lines is refused (a second problem
  // appended, or a file cut and glued, would otherwise go unnoticed).
  void expect_no_more() {
    while (std::getline(in_, line_)) {
      ++number_;
      const std::size_t first = line_.find_first_not_of(" \t\r");
      if (first == std::string::npos || line_[first] == '#') continue;
      throw std::invalid_argument(fmt::format("problem file, line {}: data after the 'end' record", number_));
    }
  }

 private:
  std::istream& in_;
  std::string line_;
  std::uint64_t number_ = 0;
};

// An op mark's number (the digits after "host=" or "transient=").
std::uint64_t mark_number(const Record& r, std::string_view text, std::string_view what, std::uint64_t most) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty())
    r.fail(fmt::format("{} '{}' is not a whole number", what, text));
  if (value > most) r.fail(fmt::format("{} {} is out of range (at most {})", what, value, most));
  return value;
}

Buffer read_buffer(const Record& r, std::uint32_t ops) {
  if (r.size() < 6 || r.word(0) != "buffer")
    r.fail("expected a 'buffer' record: buffer ID SIZE ALLOC FREE FLAGS [copy=BYTES] OP:MODE...");
  Buffer b;
  b.id = r.integer(1, "buffer id", kMostId);
  b.size = r.integer(2, "size", kMostBytes);
  b.alloc_before_op = static_cast<std::uint32_t>(r.integer(3, "allocated before op", ops));
  b.free_after_op = static_cast<std::uint32_t>(r.integer(4, "freed after op", ops));
  const std::string_view flags = r.word(5);
  if (flags != "-") {
    for (const char c : flags) {
      if (c == 'p')
        b.persistent = true;
      else if (c == 'u')
        b.swappable = false;
      else
        r.fail(fmt::format("flags '{}': expected '-' or the letters p (persistent) and u (not swappable)", flags));
    }
  }
  std::size_t first_access = 6;
  if (r.size() > 6 && r.word(6).starts_with(kCopyBytes)) {
    b.copy_bytes = mark_number(r, r.word(6).substr(kCopyBytes.size()), "copy bytes", b.size);
    first_access = 7;
  }
  for (std::size_t i = first_access; i < r.size(); ++i) {
    const std::string_view text = r.word(i);
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos) r.fail(fmt::format("access '{}': expected OP:MODE", text));
    const std::string_view mode = text.substr(colon + 1);
    Access a;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + colon, a.op);
    if (ec != std::errc{} || end != text.data() + colon)
      r.fail(fmt::format("access '{}': the op is not a whole number", text));
    if (mode == "r")
      a.mode = AccessMode::read;
    else if (mode == "w")
      a.mode = AccessMode::write;
    else if (mode == "rw")
      a.mode = AccessMode::read_write;
    else
      r.fail(fmt::format("access '{}': the mode is r, w or rw", text));
    b.accesses.push_back(a);
  }
  return b;
}

}  // namespace

void write_problem(std::ostream& out, const Problem& p) {
  out << fmt::format("{} {}\n", kMagic, kProblemVersion);
  out << fmt::format("budget {}\n", p.budget_bytes);
  const Link& l = p.link;
  out << fmt::format("link {} {} {} {} {}\n", l.d2h_bytes_per_ns, l.h2d_bytes_per_ns, l.d2h_latency_ns,
                     l.h2d_latency_ns, l.duplex_factor);
  if (!p.host.none()) {
    out << fmt::format("host {} {}", p.host.per_op_ns, p.host.per_copy_ns);
    if (p.host.per_sync_ns != 0) out << fmt::format(" {}", p.host.per_sync_ns);
    out << '\n';
  }
  const bool timed = p.iteration.host_timed;
  out << fmt::format("ops {}{}{}\n", p.iteration.ops.size(), timed ? " " : "", timed ? kHostTimed : "");
  std::string line;
  for (const Op& op : p.iteration.ops) {
    line = fmt::format("op {} {} {}", op.duration_ns, op.stream, kind_name(op.kind));
    if (op.reaches_all) fmt::format_to(std::back_inserter(line), " {}", kReachesAll);
    if (timed)
      fmt::format_to(std::back_inserter(line), " {}{}{}{}", kHostTime, op.host_ns, op.syncs ? " " : "",
                     op.syncs ? kSyncs : "");
    if (op.transient_bytes != 0) fmt::format_to(std::back_inserter(line), " {}{}", kTransient, op.transient_bytes);
    line += '\n';
    out << line;
  }
  out << fmt::format("buffers {}\n", p.iteration.buffers.size());
  for (const Buffer& b : p.iteration.buffers) {
    std::string flags;
    if (b.persistent) flags += 'p';
    if (!b.swappable) flags += 'u';
    line = fmt::format("buffer {} {} {} {} {}", b.id, b.size, b.alloc_before_op, b.free_after_op,
                       flags.empty() ? "-" : flags);
    if (b.moved_bytes() != b.size) fmt::format_to(std::back_inserter(line), " {}{}", kCopyBytes, b.moved_bytes());
    for (const Access& a : b.accesses) fmt::format_to(std::back_inserter(line), " {}:{}", a.op, mode_name(a.mode));
    line += '\n';
    out << line;
  }
  out << "end\n";
}

Problem read_problem(std::istream& in) {
  Lines lines(in);
  Problem p;
  {
    const Record r = lines.next(kMagic);
    if (r.size() == 0 || r.word(0) != kMagic)
      r.fail(fmt::format("not a swap problem file (it starts with '{} 1')", kMagic));
    r.expect(kMagic, 2);
    if (r.integer(1, "version", ~std::uint64_t{0}) != static_cast<std::uint64_t>(kProblemVersion)) {
      r.fail(fmt::format("version {} is not one this memtool reads ({})", r.word(1), kProblemVersion));
    }
  }
  {
    const Record r = lines.next("budget");
    r.expect("budget", 2);
    p.budget_bytes = r.integer(1, "budget", kMostBytes);
  }
  {
    const Record r = lines.next("link");
    r.expect("link", 6);
    p.link.d2h_bytes_per_ns = r.real(1, "bandwidth to the host");
    p.link.h2d_bytes_per_ns = r.real(2, "bandwidth to the device");
    p.link.d2h_latency_ns = r.integer(3, "latency to the host", kMostNs);
    p.link.h2d_latency_ns = r.integer(4, "latency to the device", kMostNs);
    p.link.duplex_factor = r.real(5, "duplex factor");
    if (const std::string why = validate(p.link); !why.empty()) r.fail(why);
  }
  std::uint64_t ops = 0;
  {
    Record r = lines.next("ops");
    if (r.size() != 0 && r.word(0) == "host") {                   // optional
      r.expect("host", std::clamp<std::size_t>(r.size(), 3, 4));  // the time per synchronisation is optional
      p.host.per_op_ns = r.real(1, "host time per op");
      p.host.per_copy_ns = r.real(2, "host time per copy");
      if (r.size() == 4) p.host.per_sync_ns = r.real(3, "host time per synchronisation");
      for (const double ns : {p.host.per_op_ns, p.host.per_copy_ns, p.host.per_sync_ns})
        if (!(ns >= 0) || ns > static_cast<double>(kMostNs))
          r.fail(fmt::format("host times must lie in [0, {}] ns", kMostNs));
      r = lines.next("ops");
    }
    if (r.size() == 3 && r.word(0) == "ops") {  // host-timed (files before it are not)
      if (r.word(2) != kHostTimed) r.fail(fmt::format("ops mark '{}': expected '{}' or none", r.word(2), kHostTimed));
      p.iteration.host_timed = true;
    } else {
      r.expect("ops", 2);
    }
    ops = r.integer(1, "op count", kMostRecords);
  }
  const bool timed = p.iteration.host_timed;
  std::uint64_t total_host_ns = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t total_transient = 0;
  for (std::uint64_t i = 0; i < ops; ++i) {
    const Record r = lines.next("op");
    // The marks are optional (files before them have none): reaches-all, then a host-timed op's
    // host time and syncs, then its transient bytes.
    r.expect("op", std::clamp<std::size_t>(r.size(), 4, 8));
    Op op;
    op.duration_ns = r.integer(1, "duration", kMostNs);
    total_ns += op.duration_ns;
    if (total_ns > kMostTotal) r.fail(fmt::format("the ops add up to more than {} ns", kMostTotal));
    op.stream = r.integer(2, "stream", ~std::uint64_t{0});
    const std::string_view kind = r.word(3);
    if (kind == "launch")
      op.kind = OpKind::launch;
    else if (kind == "copy")
      op.kind = OpKind::copy;
    else if (kind == "memset")
      op.kind = OpKind::memset;
    else
      r.fail(fmt::format("op kind '{}': expected launch, copy or memset", kind));
    std::size_t w = 4;
    if (w < r.size() && r.word(w) == kReachesAll) {
      op.reaches_all = true;
      ++w;
    }
    if (timed) {
      if (w == r.size() || !r.word(w).starts_with(kHostTime))
        r.fail(fmt::format("a host-timed op takes '{}NS'", kHostTime));
      op.host_ns = mark_number(r, r.word(w).substr(kHostTime.size()), "host time", kMostNs);
      total_host_ns += op.host_ns;
      if (total_host_ns > kMostTotal) r.fail(fmt::format("the ops' host times add up to more than {} ns", kMostTotal));
      ++w;
      if (w < r.size() && r.word(w) == kSyncs) {
        op.syncs = true;
        ++w;
      }
    }
    if (w < r.size() && r.word(w).starts_with(kTransient)) {
      op.transient_bytes = mark_number(r, r.word(w).substr(kTransient.size()), "transient bytes", kMostBytes);
      total_transient += op.transient_bytes;
      if (total_transient > kMostTotal)
        r.fail(fmt::format("the ops' transient bytes add up to more than {}", kMostTotal));
      ++w;
    }
    if (w != r.size()) {
      r.fail(fmt::format(
          "op mark '{}': expected {}", r.word(w),
          timed ? fmt::format("'{}', '{}NS', '{}' then '{}BYTES'", kReachesAll, kHostTime, kSyncs, kTransient)
                : fmt::format("'{}' then '{}BYTES', or none", kReachesAll, kTransient)));
    }
    p.iteration.ops.push_back(op);
  }
  std::uint64_t buffers = 0;
  {
    const Record r = lines.next("buffers");
    r.expect("buffers", 2);
    buffers = r.integer(1, "buffer count", kMostRecords);
  }
  const auto last_op = static_cast<std::uint32_t>(ops == 0 ? 0 : ops - 1);
  std::uint64_t total_bytes = 0;
  std::unordered_set<std::uint64_t> ids;
  for (std::uint64_t i = 0; i < buffers; ++i) {
    const Record r = lines.next("buffer");
    p.iteration.buffers.push_back(read_buffer(r, last_op));
    if (!ids.insert(p.iteration.buffers.back().id).second) {
      r.fail(fmt::format("buffer id {} appears twice", p.iteration.buffers.back().id));
    }
    total_bytes += p.iteration.buffers.back().size;
    if (total_bytes > kMostTotal) r.fail(fmt::format("the buffers add up to more than {} bytes", kMostTotal));
  }
  {
    const Record r = lines.next("end");
    r.expect("end", 1);
  }
  lines.expect_no_more();
  if (const std::string why = validate(p.iteration); !why.empty()) {
    throw std::invalid_argument(fmt::format("problem file: {}", why));
  }
  return p;
}

bool looks_like_problem(std::string_view head) { return head.substr(0, kMagic.size()) == kMagic; }

}  // namespace memtool::swapper
