// The size grammar (memtool/trace/bytes.hpp): whole and decimal numbers, K/M/G/T and
// KiB/MiB/GiB/TiB in powers of 1024, KB/MB/GB/TB in powers of 1000, shares where a total exists,
// rates, 0 where it means something, the 2^62 ceiling, and one clear line for everything else.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "memtool/trace/bytes.hpp"

using memtool::trace::ByteGrammar;
using memtool::trace::ByteSize;
using memtool::trace::human_bytes;
using memtool::trace::parse_bytes;

namespace {

constexpr std::uint64_t kKi = 1024;
constexpr std::uint64_t kMax = std::uint64_t{1} << 62;

std::string error_of(std::string_view text, const ByteGrammar& grammar = {}) {
  std::string error;
  const auto size = parse_bytes(text, grammar, &error);
  INFO(text);
  CHECK_FALSE(size.has_value());
  CHECK_FALSE(error.empty());
  return error;
}

}  // namespace

TEST_CASE("sizes: whole numbers and units in either base", "[trace_core][bytes]") {
  const std::map<std::string, std::uint64_t> good{
      {"0", 0},
      {"65536", 65536},
      {"100b", 100},
      {"100B", 100},
      {"512K", 512 * kKi},
      {"512k", 512 * kKi},
      {"512KiB", 512 * kKi},
      {"512m", 512 * kKi * kKi},
      {"4G", 4 * kKi * kKi * kKi},
      {"1gib", kKi * kKi * kKi},
      {"2TiB", 2 * kKi * kKi * kKi * kKi},
      {"1kb", 1000},
      {"3MB", 3'000'000},
      {"3Mb", 3'000'000},
      {"55GB", 55'000'000'000},
      {"2TB", 2'000'000'000'000},
      {"4611686018427387904", kMax},  // 2^62, the most memtool accounts for
      {"4194304T", kMax},
  };
  for (const auto& [text, bytes] : good) {
    INFO(text);
    const auto size = parse_bytes(text);
    REQUIRE(size.has_value());
    CHECK(size->bytes == bytes);
    CHECK_FALSE(size->is_share());
  }
}

TEST_CASE("sizes: decimals are exact, rounded down to a byte", "[trace_core][bytes]") {
  const std::map<std::string, std::uint64_t> good{
      {"1.5G", 1'610'612'736},
      {"0.5K", 512},
      {"0.5KB", 500},
      {"1.1T", 1'209'462'790'553},  // 1.1 * 2^40 = 1209462790553.6
      {"12.5GiB", 13'421'772'800},
      {"2.5", 2},
      {"0.001K", 1},                                   // 1.024 bytes
      {"1.0000000000000000000001G", kKi * kKi * kKi},  // digits past the 19th add less than a byte
      {"4194303.9999999T", 4'611'686'018'427'277'952},
  };
  for (const auto& [text, bytes] : good) {
    INFO(text);
    const auto size = parse_bytes(text);
    REQUIRE(size.has_value());
    CHECK(size->bytes == bytes);
  }
}

TEST_CASE("sizes: everything else is one line saying what was expected", "[trace_core][bytes]") {
  for (const char* bad : {"", "G", ".5G", "1.G", "1.5.5G", "-5", "+5", "1 G", " 1G", "1G ", "0x10", "1e3", "1,5G",
                          "12X", "5KK", "5Gi", "5gibs", "inf", "nan"}) {
    const std::string error = error_of(bad);
    CHECK(error.find("expected a size") != std::string::npos);
  }
  CHECK(error_of("12X").find("unknown unit 'X'") != std::string::npos);
  for (const char* big : {"4611686018427387905", "4194305T", "20000000T", "99999999999999999999", "5000000TB"}) {
    CHECK(error_of(big) == "too large (at most 2^62 bytes)");
  }
  CHECK(error_of("60%").find("needs a total") != std::string::npos);         // no share without a total
  CHECK(error_of("55GB/s").find("unknown unit '/s'") == std::string::npos);  // not a rate here
  CHECK(error_of("55GB/s").find("unknown unit") != std::string::npos);
  CHECK_FALSE(parse_bytes("55GB/s").has_value());
}

TEST_CASE("sizes: 0 only where it means something", "[trace_core][bytes]") {
  const ByteGrammar above_zero{.share_of = {}, .zero = false, .rate = false};
  for (const char* zero : {"0", "0K", "0.0G", "0.1"}) {
    CHECK(error_of(zero, above_zero).find("at least one byte") != std::string::npos);
    REQUIRE(parse_bytes(zero).has_value());
    CHECK(parse_bytes(zero)->bytes == 0);
  }
  REQUIRE(parse_bytes("1", above_zero).has_value());
  CHECK(parse_bytes("1", above_zero)->bytes == 1);
}

TEST_CASE("sizes: a share of a total, where there is one", "[trace_core][bytes]") {
  const ByteGrammar device{.share_of = "the device's memory", .zero = true, .rate = false};
  const auto sixty = parse_bytes("60%", device);
  REQUIRE(sixty.has_value());
  CHECK(sixty->is_share());
  CHECK(sixty->percent == Approx(60.0));
  CHECK(sixty->bytes == 0);
  CHECK(parse_bytes("0.5%", device)->percent == Approx(0.5));
  CHECK(parse_bytes("100%", device)->percent == Approx(100.0));
  CHECK(parse_bytes("40G", device)->bytes == 40 * kKi * kKi * kKi);  // bytes stay bytes
  for (const char* bad : {"0%", "101%", "-5%", "%", "60 %", "1e1%", "abc%"}) {
    const std::string error = error_of(bad, device);
    CHECK(error.find("percentage of the device's memory") != std::string::npos);
  }
  CHECK(error_of("12X", device).find("or a percentage of the device's memory") != std::string::npos);
}

TEST_CASE("sizes: rates end in /s where a rate is read", "[trace_core][bytes]") {
  const ByteGrammar rate{.share_of = {}, .zero = false, .rate = true};
  CHECK(parse_bytes("55GB/s", rate)->bytes == 55'000'000'000);
  CHECK(parse_bytes("51G/s", rate)->bytes == 51 * kKi * kKi * kKi);
  CHECK(parse_bytes("12.5GiB/s", rate)->bytes == 13'421'772'800);
  CHECK(parse_bytes("900MB", rate)->bytes == 900'000'000);  // "/s" may be left out
  for (const char* bad : {"/s", "fast", "0GB/s", "55GB/s/s", "55 GB/s"}) error_of(bad, rate);
}

TEST_CASE("sizes printed for people: binary units, three significant digits", "[trace_core][bytes]") {
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(1023) == "1023 B");
  CHECK(human_bytes(1024) == "1.00 KiB");
  CHECK(human_bytes(1536) == "1.50 KiB");
  CHECK(human_bytes(10 * kKi) == "10.0 KiB");
  CHECK(human_bytes(100 * kKi) == "100 KiB");
  CHECK(human_bytes(1'610'612'736) == "1.50 GiB");
  CHECK(human_bytes(kMax) == "4096 PiB");
}
