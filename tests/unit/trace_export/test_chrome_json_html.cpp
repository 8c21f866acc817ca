// The Chrome JSON export (parsed back, slices balanced, the memory counter reaching the peak)
// and the HTML page's contents (tables, plan rectangles, the swap section only when given).
// The page's rendering is checked in a real browser by tests/cli/export/check_html.py.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "memtool/trace/export.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "synthetic_trace.hpp"

using namespace memtool::trace;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("chrome json: async buffer slices, iterations and the memory counter", "[export][chrome]") {
  test::SyntheticTrace trace;
  const TraceModel& model = test::three_iterations(trace);
  const Iterations iterations = find_iterations(model);
  StringSink sink;
  const ExportStats stats = export_chrome_json(ExportSource{model, iterations, "synthetic \"quoted\""}, {}, sink);
  const auto json = nlohmann::json::parse(sink.str());
  const auto& events = json.at("traceEvents");
  CHECK(events.size() == stats.records);
  std::map<std::string, int> phases;
  std::uint64_t max_live = 0;
  std::set<std::string> thread_names;
  for (const auto& e : events) {
    phases[e.at("ph").get<std::string>()]++;
    if (e.at("ph") == "C") max_live = std::max(max_live, e.at("args").at("live bytes").get<std::uint64_t>());
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      thread_names.insert(e.at("args").at("name").get<std::string>());
  }
  CHECK(phases["b"] == static_cast<int>(model.buffer_count()));
  CHECK(phases["e"] == phases["b"]);
  CHECK(phases["B"] == 3);
  CHECK(phases["E"] == 3);
  CHECK(phases["i"] == 3 + 3 + 1);  // launches, marks, the weight's copy
  CHECK(thread_names == std::set<std::string>{"iterations", "stream 0 (legacy default)", "stream 0x7"});
  const auto curve = live_bytes_curve(model);
  CHECK(max_live == *std::max_element(curve.begin(), curve.end()));
  CHECK(json.at("otherData").at("source") == "synthetic \"quoted\"");
}

TEST_CASE("html: summary, tables, the plan beside the baselines, swaps only when given", "[export][html]") {
  test::SyntheticTrace trace;
  const TraceModel& model = test::three_iterations(trace);
  const Iterations iterations = find_iterations(model);
  PoolPlanView plan = test::two_buffer_plan();
  plan.baselines = {{"cudaMalloc", 4 << 20}, {"cnmem", 2 << 20}, {"pytorch", 2 << 20}};

  ExportOptions options;
  options.plan = &plan;
  StringSink sink;
  (void)export_html(ExportSource{model, iterations, "run<1>.trace"}, options, sink);
  const std::string& page = sink.str();
  CHECK(page.starts_with("<!DOCTYPE html>"));
  CHECK(page.find("run&lt;1&gt;.trace") != std::string::npos);
  CHECK(page.find("http") == page.find("http://www.w3.org/2000/svg"));  // nothing fetched: only SVG namespaces
  const auto curve = live_bytes_curve(model);
  const std::uint64_t peak = *std::max_element(curve.begin(), curve.end());
  CHECK(page.find(std::to_string(peak) + " B)") != std::string::npos);
  CHECK(count(page, "<tr><td>") == 3 + 3);  // three iterations, three buffers live at the peak
  CHECK(count(page, "mark-") == 3);
  CHECK(page.find(R"(data-probe="plan-largest")") != std::string::npos);
  CHECK(count(page, "data-tip=\"buffer ") == 2);
  CHECK(page.find(R"(data-probe="bar-pytorch")") != std::string::npos);
  CHECK(page.find("Swap schedule") == std::string::npos);

  SwapScheduleView swaps{"no-overhead", 1 << 20, {{BufferId{1}, 1 << 20, true, 3, 5}}};
  options.swaps = &swaps;
  StringSink with_swaps;
  (void)export_html(ExportSource{model, iterations, "run"}, options, with_swaps);
  CHECK(with_swaps.str().find("Swap schedule") != std::string::npos);
  CHECK(with_swaps.str().find(R"(data-probe="swap-first")") != std::string::npos);
}
