// The link model from the environment, read at cuInit by a child process: good values are taken,
// a bad one (negative, non-numeric, out of range) is one warning on stderr and that setting's
// default, and the program still runs. Without any variable the link is unlimited, as before.
#include "fixture.hpp"
#include "spawn.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace fakecuda_test;

namespace {

struct ChildRun {
  int status = -1;
  std::string out;
  std::string err;
};

ChildRun run_link_child(const std::vector<std::string>& env) {
  const std::string stem = "/tmp/fakecuda-link-" + std::to_string(getpid());
  ChildRun r;
  r.status = run_with_env({FAKECUDA_LINK_CHILD}, env, stem + ".out", stem + ".err");
  r.out = read_text(stem + ".out");
  r.err = read_text(stem + ".err");
  std::remove((stem + ".out").c_str());
  std::remove((stem + ".err").c_str());
  return r;
}

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("without FAKECUDA_LINK_* the link is unlimited, with no latency", "[fakecuda][link]") {
  const ChildRun r = run_link_child({});
  CHECK(r.status == 0);
  CHECK(r.out == "0 0 1 0.5\n");
  CHECK(r.err.empty());
}

TEST_CASE("FAKECUDA_LINK_* values are taken as given", "[fakecuda][link]") {
  const ChildRun r = run_link_child({"FAKECUDA_LINK_GBPS=55", "FAKECUDA_LINK_LATENCY_US=2.5",
                                     "FAKECUDA_LINK_DUPLEX_FACTOR=0.8", "FAKECUDA_LINK_PAGEABLE_FACTOR=0.25"});
  CHECK(r.status == 0);
  CHECK(r.out == "55 2.5 0.8 0.25\n");
  CHECK(r.err.empty());
  CHECK(run_link_child({"FAKECUDA_LINK_GBPS=unlimited"}).out == "0 0 1 0.5\n");
}

TEST_CASE("a bad FAKECUDA_LINK_* value is one warning and the default, never a failure", "[fakecuda][link]") {
  struct Case {
    const char* setting;
    const char* variable;
  };
  const Case cases[] = {
      {"FAKECUDA_LINK_GBPS=-8", "FAKECUDA_LINK_GBPS"},
      {"FAKECUDA_LINK_GBPS=fast", "FAKECUDA_LINK_GBPS"},
      {"FAKECUDA_LINK_GBPS=8GB/s", "FAKECUDA_LINK_GBPS"},
      {"FAKECUDA_LINK_LATENCY_US=-1", "FAKECUDA_LINK_LATENCY_US"},
      {"FAKECUDA_LINK_LATENCY_US=soon", "FAKECUDA_LINK_LATENCY_US"},
      {"FAKECUDA_LINK_LATENCY_US=nan", "FAKECUDA_LINK_LATENCY_US"},
      {"FAKECUDA_LINK_DUPLEX_FACTOR=2", "FAKECUDA_LINK_DUPLEX_FACTOR"},
      {"FAKECUDA_LINK_PAGEABLE_FACTOR=0", "FAKECUDA_LINK_PAGEABLE_FACTOR"},
  };
  for (const Case& c : cases) {
    INFO(c.setting);
    const ChildRun r = run_link_child({c.setting});
    CHECK(r.status == 0);
    CHECK(r.out == "0 0 1 0.5\n");
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(c.variable) != std::string::npos);
  }
  // Only the bad one falls back.
  const ChildRun mixed = run_link_child({"FAKECUDA_LINK_GBPS=12", "FAKECUDA_LINK_LATENCY_US=x"});
  CHECK(mixed.out == "12 0 1 0.5\n");
  CHECK(lines(mixed.err) == 1);
}
