// PickleWriter against memtool's own unpickler (trace/import): every integer width, short and
// long strings, batches of more than 1000 items, shared (memoised) values, and the protocols.
#include <catch2/catch.hpp>

#include <string>

#include "pickle_reader.hpp"
#include "pickle_writer.hpp"
#include "text.hpp"

using namespace memtool::trace;
using detail::PickleWriter;
using detail::ValueKind;

namespace {

detail::PickleDocument decode(const StringSink& sink) { return detail::read_pickle(sink.str(), "test.pickle"); }

}  // namespace

TEST_CASE("pickle writer: integers of every width read back exactly", "[export][pickle]") {
  const std::uint64_t values[] = {0,
                                  1,
                                  255,
                                  256,
                                  65535,
                                  65536,
                                  0x7fffffffULL,
                                  0x80000000ULL,
                                  0xffffffffULL,
                                  0x7f3a00000000ULL,
                                  0x7fffffffffffffffULL,
                                  0x8000000000000000ULL,
                                  ~0ULL};
  for (int protocol : {2, 3, 4}) {
    StringSink sink;
    PickleWriter p(sink, protocol);
    p.begin_list();
    for (auto v : values) p.integer(v);
    p.end_list();
    p.finish();
    const auto doc = decode(sink);
    CHECK(doc.protocol == protocol);
    const auto items = doc.tree.items(doc.root);
    REQUIRE(items.size() == std::size(values));
    for (std::size_t i = 0; i < items.size(); ++i) {
      INFO("value " << values[i] << " protocol " << protocol);
      CHECK(doc.tree.as_unsigned(items[i]) == values[i]);
    }
  }
}

TEST_CASE("pickle writer: strings, booleans, None, tuples and dicts", "[export][pickle]") {
  StringSink sink;
  PickleWriter p(sink, 4);
  p.begin_dict();
  p.text("short");
  p.text("x");
  p.text("long");
  p.text(std::string(300, 'y'));
  p.text("utf8");
  p.text("función_ß");
  p.text("flags");
  p.begin_tuple();
  p.boolean(true);
  p.boolean(false);
  p.none();
  p.end_tuple();
  p.end_dict();
  p.finish();
  const auto doc = decode(sink);
  const auto& t = doc.tree;
  const auto items = t.items(doc.root);
  REQUIRE(t.kind(doc.root) == ValueKind::dict);
  REQUIRE(items.size() == 8);
  CHECK(t.text(items[1]) == "x");
  CHECK(t.text(items[3]) == std::string(300, 'y'));
  CHECK(t.text(items[5]) == "función_ß");
  REQUIRE(t.kind(items[7]) == ValueKind::tuple);
  const auto flags = t.items(items[7]);
  CHECK(t.as_bool(flags[0]) == true);
  CHECK(t.as_bool(flags[1]) == false);
  CHECK(t.kind(flags[2]) == ValueKind::none);
}

TEST_CASE("pickle writer: lists and dicts larger than one batch, and shared values", "[export][pickle]") {
  StringSink sink;
  PickleWriter p(sink, 4);
  p.begin_dict();
  const std::uint32_t key = p.text_memoized("frames");
  p.begin_list();
  p.text("shared frame");
  const std::uint32_t shared = p.end_list_memoized();
  for (std::uint64_t i = 0; i < 2500; ++i) {  // 2501 pairs: SETITEMS in batches
    p.integer(i);
    p.get(i % 2 == 0 ? shared : key);
  }
  p.text("many");
  p.begin_list();
  for (std::uint64_t i = 0; i < 2345; ++i) p.integer(i * 3);
  p.end_list();
  p.end_dict();
  p.finish();
  const auto doc = decode(sink);
  const auto& t = doc.tree;
  const auto items = t.items(doc.root);
  REQUIRE(items.size() == 2 * 2502);
  CHECK(t.text(items[0]) == "frames");
  for (std::size_t i = 0; i < 2500; ++i) {
    const auto value = items[2 + 2 * i + 1];
    if (i % 2 == 0) {
      REQUIRE(t.kind(value) == ValueKind::list);
      CHECK(t.text(t.items(value)[0]) == "shared frame");
    } else {
      CHECK(t.text(value) == "frames");
    }
  }
  const auto many = t.items(items.back());
  REQUIRE(many.size() == 2345);
  CHECK(t.as_unsigned(many[2344]) == 2344 * 3);
}

TEST_CASE("pickle writer: only the opcodes the web viewer knows, and no protocol 5", "[export][pickle]") {
  CHECK_THROWS_AS(PickleWriter(*std::make_unique<StringSink>(), 5), std::invalid_argument);
  CHECK_THROWS_AS(PickleWriter(*std::make_unique<StringSink>(), 1), std::invalid_argument);
  StringSink sink;
  PickleWriter p(sink, 4);
  p.begin_list();
  p.text(std::string(256, 'a'));  // BINUNICODE
  p.integer(1ULL << 40);          // LONG1
  p.end_list();
  p.finish();
  const std::string& bytes = sink.str();
  CHECK(static_cast<unsigned char>(bytes[0]) == 0x80);
  CHECK(bytes[1] == 4);
  CHECK(bytes.back() == '.');
  CHECK(bytes.find('\x95') == std::string::npos);  // no FRAME
}

TEST_CASE("utf8_clean keeps well-formed text and replaces malformed bytes", "[export][text]") {
  CHECK(detail::utf8_clean("plain") == "plain");
  CHECK(detail::utf8_clean("función") == "función");
  CHECK(detail::utf8_clean("bad\xff\xfe") == "bad??");
  CHECK(detail::utf8_clean("\xc3") == "?");            // truncated sequence
  CHECK(detail::utf8_clean("\xed\xa0\x80") == "???");  // surrogate
  CHECK(detail::utf8_clean("\xc0\xaf") == "??");       // overlong
  CHECK(detail::json_string("a\"b\\c\n</script>") == R"("a\"b\\c\n\u003c/script>")");
  // Sizes for people: trace::human_bytes (tests/unit/trace_core/test_bytes.cpp).
}
