// KernelNameMatcher (MEMTOOL_ITERATION_KERNEL): the same answers as std::regex_search on the
// syntax it supports, refusals for what needs backtracking, and patterns that make std::regex
// take exponential time or overflow its stack answered at once on long mangled names.
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include "kernel_name_matcher.hpp"

using memtool::interpose::KernelNameMatcher;

namespace {

bool matches(const std::string& pattern, const std::string& name) {
  std::string error;
  const auto matcher = KernelNameMatcher::compile(pattern, &error);
  INFO(pattern << ": " << error);
  REQUIRE(matcher);
  return matcher->matches(name);
}

std::string refusal(const std::string& pattern) {
  std::string error;
  CHECK_FALSE(KernelNameMatcher::compile(pattern, &error));
  return error;
}

}  // namespace

TEST_CASE("kernel names: the same answers as std::regex_search", "[interpose][matcher]") {
  const std::vector<std::string> patterns{
      "adam",
      "^adam_",
      "step$",
      "^adam_step$",
      "a.c",
      "^.*$",
      "",
      "x*",
      "ab|cd",
      "^(ab|cd)+$",
      "(?:ab)?c",
      "a{2}",
      "a{2,}",
      "a{1,3}b",
      "^a{0,2}$",
      "[a-c]+",
      "[^a-c]",
      "[-a]",
      "[a-]",
      "\\d+",
      "\\D",
      "\\w+_\\d",
      "\\W",
      "\\s",
      "\\bstep\\b",
      "\\Bte",
      "_Z\\d+",
      "\\.",
      "a\\|b",
      "[\\]]",
      "[\\d_]+$",
      "(a|b)*c",
      "(a*)*b",
      "^(([a-z_0-9])*)*X$",
      "sgd|adam|lamb",
      "^void at::native::.*elementwise",
      "kernel<.*>",
      "[.]",
      "\\x41",
      "a+?b",
      "a*?$",
      "(ab){2}",
      "^$",
      "z",
      "^(a|ab)(c|bcd)(d*)$",
  };
  const std::vector<std::string> names{
      "",       "adam_step",     "sgd_step", "void at::native::vectorized_elementwise_kernel<4>",
      "abc",    "aac",           "ab",       "cd",
      "abcd",   "abab",          "aaab",     "c",
      "a-b",    "x.y",           "A1",       "step",
      "mystep", "_Z3foov",       "a|b",      "]",
      "_1_2",   "kernel<float>", "a b",      "abcdbcd",
      "X",      "abX",           "ab X",
  };
  for (const std::string& pattern : patterns) {
    const std::regex reference(pattern, std::regex::ECMAScript);
    for (const std::string& name : names) {
      INFO("pattern '" << pattern << "' name '" << name << "'");
      CHECK(matches(pattern, name) == std::regex_search(name, reference));
    }
  }
}

TEST_CASE("kernel names: backtracking patterns on long names cost linear time", "[interpose][matcher]") {
  // std::regex needs ~2^n steps here (and recurses per character); the NFA visits each of the
  // pattern's states once per byte.
  std::string mangled = "_ZN2at6native";
  while (mangled.size() < 100000) mangled += "abcdefghij_0123456789";
  CHECK_FALSE(matches("^(([a-z_0-9])*)*X$", mangled));
  CHECK(matches("^(([a-z_0-9A-Z])*)*$", mangled));
  CHECK_FALSE(matches("(a*)*(b*)*c", std::string(50000, 'a') + std::string(50000, 'b')));
  CHECK(matches("(x+x+)+y", std::string(100000, 'x') + "y"));
}

TEST_CASE("kernel names: what needs backtracking or is malformed is refused", "[interpose][matcher]") {
  CHECK_THAT(refusal("(a)\\1"), Catch::Contains("back-references"));
  CHECK_THAT(refusal("adam(?=_)"), Catch::Contains("lookaround"));
  CHECK_THAT(refusal("adam(?!_)"), Catch::Contains("lookaround"));
  CHECK_THAT(refusal("sgd_("), Catch::Contains("missing ')'"));
  CHECK_THAT(refusal("a)"), Catch::Contains("unmatched ')'"));
  CHECK_THAT(refusal("[abc"), Catch::Contains("missing ']'"));
  CHECK_THAT(refusal("*a"), Catch::Contains("nothing to repeat"));
  CHECK_THAT(refusal("a**"), Catch::Contains("nothing to repeat"));
  CHECK_THAT(refusal("a{3,1}"), Catch::Contains("m < n"));
  CHECK_THAT(refusal("[z-a]"), Catch::Contains("out of order"));
  CHECK_THAT(refusal("a\\"), Catch::Contains("ends with"));
  CHECK_THAT(refusal("\\q"), Catch::Contains("unknown escape"));
  CHECK_THAT(refusal(std::string(100, '(') + std::string(100, ')')), Catch::Contains("nested deeper"));
  CHECK_THAT(refusal("(((a{1000}){1000}){1000})"), Catch::Contains("instructions"));
  CHECK_THAT(refusal(std::string(5000, 'a')), Catch::Contains("longer than"));
}
