// The fixture log reader: one event per line, operator names interned in first-seen order.
#include "fixture_log.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace memtool::test {
namespace {

std::vector<std::uint64_t> parse_pointers(const std::string& list) {
  std::vector<std::uint64_t> result;
  if (list == "-") return result;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) result.push_back(std::stoull(item, nullptr, 16));
  return result;
}

}  // namespace

std::string fixture_path(const std::string& name) { return std::string(MEMTOOL_FIXTURES_DIR) + "/traces/" + name; }

LogTruth load_fixture_log(const std::string& path, trace::EventVisitor& visitor, const LogOptions& options) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path);
  LogTruth truth;
  std::unordered_map<std::string, std::uint32_t> names;
  std::uint64_t seq = 0;
  std::uint64_t marks = 0;
  std::string line;
  const auto header = [&] {
    trace::EventHeader h;
    h.seq = seq;
    h.time_ns = seq * 1000;
    ++seq;
    return h;
  };
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag == "A") {
      std::string id, ptr;
      std::uint64_t size = 0;
      in >> id >> ptr >> size;
      trace::AllocEvent e;
      e.header = header();
      e.address = std::stoull(ptr, nullptr, 16);
      e.size = size;
      visitor.on_alloc(e);
      ++truth.events;
      if (!truth.allocs.empty()) ++truth.allocs.back();
    } else if (tag == "F") {
      std::string id, ptr;
      in >> id >> ptr;
      trace::FreeEvent e;
      e.header = header();
      e.address = std::stoull(ptr, nullptr, 16);
      visitor.on_free(e);
      ++truth.events;
      if (!truth.frees.empty()) ++truth.frees.back();
    } else if (tag == "K") {
      std::string op, r, reads, w, writes;
      in >> op >> r >> reads >> w >> writes;
      auto [it, inserted] = names.try_emplace(op, static_cast<std::uint32_t>(names.size()));
      if (inserted) visitor.on_string(trace::StringId{it->second}, op);
      std::vector<std::uint64_t> touched = parse_pointers(reads);
      for (const auto p : parse_pointers(writes)) touched.push_back(p);
      trace::LaunchEvent e;
      e.header = header();
      e.kernel = trace::StringId{it->second};
      e.touched = touched;
      visitor.on_launch(e);
      ++truth.events;
      if (!truth.launches.empty()) ++truth.launches.back();
    } else if (tag == "I") {
      truth.iteration_starts.push_back(truth.events);
      truth.allocs.push_back(0);
      truth.frees.push_back(0);
      truth.launches.push_back(0);
      if (!options.strip_marks) {
        trace::IterationMarkEvent e;
        e.header = header();
        e.index = marks;
        visitor.on_iteration_mark(e);
        ++truth.events;
      }
      ++marks;
    } else {
      throw std::runtime_error("unexpected line in " + path + ": " + line);
    }
  }
  return truth;
}

}  // namespace memtool::test
