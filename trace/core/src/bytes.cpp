// The size grammar and the size printer (see memtool/trace/bytes.hpp). Parsing is exact: the
// number's digits are kept as integers and scaled in 128 bits, so "1.1T" is the bytes it says,
// rounded down, with no floating-point error.
#include "memtool/trace/bytes.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>

#include "memtool/trace/limits.hpp"

namespace memtool::trace {
namespace {

__extension__ typedef unsigned __int128 Wide;  // a 64-bit count times a unit, exactly

constexpr std::string_view kExpected =
    "expected a size such as 65536, 1.5G, 512MiB or 55GB (K, M, G, T, KiB, MiB, GiB, TiB: powers of 1024; "
    "KB, MB, GB, TB: powers of 1000)";
constexpr std::size_t kMaxFractionDigits = 19;  // 10^19 still fits 64 bits

struct Unit {
  std::string_view name;  // lower case
  std::uint64_t scale;
};
constexpr std::uint64_t kKi = 1024;
constexpr std::uint64_t kMi = kKi << 10;
constexpr std::uint64_t kGi = kMi << 10;
constexpr std::uint64_t kTi = kGi << 10;
constexpr std::uint64_t kK = 1000;
constexpr std::array<Unit, 14> kUnits{{
    {"", 1},
    {"b", 1},
    {"k", kKi},
    {"kib", kKi},
    {"kb", kK},
    {"m", kMi},
    {"mib", kMi},
    {"mb", kK* kK},
    {"g", kGi},
    {"gib", kGi},
    {"gb", kK* kK* kK},
    {"t", kTi},
    {"tib", kTi},
    {"tb", kK* kK* kK* kK},
}};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Fills *error (when asked for) and says "no size".
std::optional<ByteSize> refuse(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return std::nullopt;
}

// A share of the caller's total: "60%", above 0 and at most 100.
std::optional<ByteSize> parse_share(std::string_view number, const ByteGrammar& grammar, std::string* error) {
  if (grammar.share_of.empty()) {
    return refuse(error, fmt::format("a percentage needs a total and this size has none; {}", kExpected));
  }
  double percent = 0;
  const auto [end, ec] =
      std::from_chars(number.data(), number.data() + number.size(), percent, std::chars_format::fixed);
  if (ec != std::errc{} || end != number.data() + number.size() || number.empty() || !is_digit(number.front())) {
    return refuse(error, fmt::format("expected a percentage of {} such as 60%", grammar.share_of));
  }
  if (!(percent > 0) || percent > 100) {
    return refuse(error, fmt::format("a percentage of {} must be above 0 and at most 100", grammar.share_of));
  }
  return ByteSize{0, percent};
}

std::string expected(const ByteGrammar& grammar) {
  std::string text(kExpected);
  if (!grammar.share_of.empty()) text += fmt::format(", or a percentage of {} such as 60%", grammar.share_of);
  return text;
}

}  // namespace

std::optional<ByteSize> parse_bytes(std::string_view text, const ByteGrammar& grammar, std::string* error) {
  if (grammar.rate && text.size() >= 2 && text.substr(text.size() - 2) == "/s") text.remove_suffix(2);
  if (!text.empty() && text.back() == '%') return parse_share(text.substr(0, text.size() - 1), grammar, error);

  // The whole part, then the fraction's digits (as a count of 10^-digits), then the unit.
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  std::uint64_t whole = 0;
  const auto [after_whole, ec] = std::from_chars(p, end, whole);
  if (ec == std::errc::result_out_of_range) return refuse(error, "too large (at most 2^62 bytes)");
  if (ec != std::errc{}) return refuse(error, expected(grammar));
  p = after_whole;
  std::uint64_t fraction = 0;
  std::uint64_t fraction_scale = 1;
  if (p != end && *p == '.') {
    ++p;
    if (p == end || !is_digit(*p)) return refuse(error, expected(grammar));
    for (std::size_t digits = 0; p != end && is_digit(*p); ++p, ++digits) {
      if (digits == kMaxFractionDigits) continue;  // below a byte's 10^-19: rounded down
      fraction = fraction * 10 + static_cast<std::uint64_t>(*p - '0');
      fraction_scale *= 10;
    }
  }
  std::string unit(p, end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const Unit* found = nullptr;
  for (const Unit& u : kUnits) {
    if (u.name == unit) found = &u;
  }
  if (found == nullptr) {
    // A unit is a few letters: a long tail is quoted in part, so the rest of the line survives.
    constexpr std::size_t kQuotedUnitChars = 16;
    const std::string_view given(p, static_cast<std::size_t>(end - p));
    const std::string quoted =
        given.size() <= kQuotedUnitChars ? std::string(given) : std::string(given.substr(0, kQuotedUnitChars)) + "...";
    return refuse(error, fmt::format("unknown unit '{}'; {}", quoted, expected(grammar)));
  }

  const Wide bytes = Wide{whole} * found->scale + Wide{fraction} * found->scale / fraction_scale;
  if (bytes > kMaxAccountedBytes) return refuse(error, "too large (at most 2^62 bytes)");
  if (bytes == 0 && !grammar.zero) return refuse(error, "must be at least one byte (0 means nothing here)");
  return ByteSize{static_cast<std::uint64_t>(bytes), 0};
}

std::string human_bytes(std::uint64_t bytes) {
  static constexpr std::array<std::string_view, 6> kNames{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  auto value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kNames.size()) {
    value /= 1024.0;
    ++unit;
  }
  const int decimals = value >= 100.0 ? 0 : value >= 10.0 ? 1 : 2;
  return fmt::format("{:.{}f} {}", value, decimals, kNames[unit]);
}

}  // namespace memtool::trace
