// Parser of the recorded training logs (see replay_log.hpp).
#include "replay_log.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace replay {
namespace {

[[noreturn]] void fail(const std::string& path, std::uint64_t line, const std::string& why) {
  std::fprintf(stderr, "%s:%llu: %s\n", path.c_str(), static_cast<unsigned long long>(line), why.c_str());
  std::exit(2);
}

std::uint64_t parse_hex(const std::string& text, bool& ok) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 16);
  ok = !text.empty() && end != nullptr && *end == '\0';
  return value;
}

std::uint64_t parse_dec(const std::string& text, bool& ok) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  ok = !text.empty() && end != nullptr && *end == '\0';
  return value;
}

}  // namespace

std::uint64_t allocations(const std::vector<Op>& step) {
  std::uint64_t n = 0;
  for (const Op& op : step) n += op.kind == Op::Kind::alloc ? 1 : 0;
  return n;
}

Program parse_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, 0, "cannot read the log");
  Program program;
  program.model = path.substr(path.find_last_of('/') + 1);
  std::unordered_map<std::uint64_t, std::uint32_t> slot_of_id;   // log alloc id → slot
  std::unordered_map<std::uint64_t, std::uint32_t> live_at_ptr;  // base pointer → live slot
  std::unordered_map<std::string, std::uint32_t> kernel_of_name;
  std::vector<std::int64_t> born_in;  // slot → step index (-1: setup)
  std::vector<Op>* current = &program.setup;
  std::int64_t step_index = -1;
  std::string line;
  std::uint64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (line[0] == '#') {
      const auto at = line.find("model=");
      if (at != std::string::npos && number < 4) program.model = line.substr(at + 6, line.find(' ', at) - at - 6);
      continue;
    }
    std::istringstream fields(line);
    std::string tag;
    fields >> tag;
    bool ok = true;
    if (tag == "I") {
      std::string n;
      fields >> n;
      const std::uint64_t index = parse_dec(n, ok);
      if (!ok || index != program.steps.size()) fail(path, number, "iteration marks must count 0, 1, 2, ...");
      program.steps.emplace_back();
      current = &program.steps.back();
      step_index = static_cast<std::int64_t>(index);
    } else if (tag == "A") {
      std::string id, ptr, size;
      fields >> id >> ptr >> size;
      Op op;
      op.kind = Op::Kind::alloc;
      const std::uint64_t log_id = parse_dec(id, ok);
      bool ok_ptr = true, ok_size = true;
      const std::uint64_t address = parse_hex(ptr, ok_ptr);
      op.size = parse_dec(size, ok_size);
      if (!ok || !ok_ptr || !ok_size || slot_of_id.count(log_id) != 0) fail(path, number, "bad allocation line");
      op.slot = program.slots++;
      slot_of_id[log_id] = op.slot;
      live_at_ptr[address] = op.slot;
      born_in.push_back(step_index);
      current->push_back(op);
    } else if (tag == "F") {
      std::string id, ptr;
      fields >> id >> ptr;
      const std::uint64_t log_id = parse_dec(id, ok);
      bool ok_ptr = true;
      const std::uint64_t address = parse_hex(ptr, ok_ptr);
      const auto it = slot_of_id.find(log_id);
      if (!ok || !ok_ptr || it == slot_of_id.end()) fail(path, number, "free of an unknown allocation");
      if (born_in[it->second] >= 0 && born_in[it->second] != step_index) {
        fail(path, number, "a free across an iteration boundary (not supported by the replay)");
      }
      Op op;
      op.kind = Op::Kind::free;
      op.slot = it->second;
      live_at_ptr.erase(address);
      current->push_back(op);
    } else if (tag == "K") {
      std::string name, r, reads, w, writes;
      fields >> name >> r >> reads >> w >> writes;
      if (name.empty() || r != "R" || w != "W" || reads.empty() || writes.empty())
        fail(path, number, "bad operator line");
      Op op;
      op.kind = Op::Kind::launch;
      const auto [kernel, inserted] =
          kernel_of_name.try_emplace(name, static_cast<std::uint32_t>(program.kernel_names.size()));
      if (inserted) program.kernel_names.push_back(name);
      op.kernel = kernel->second;
      op.first_ref = static_cast<std::uint32_t>(program.refs.size());
      auto add = [&](const std::string& list, bool write) {
        if (list == "-") return;
        std::istringstream items(list);
        std::string item;
        while (std::getline(items, item, ',')) {
          bool ok_item = true;
          const std::uint64_t address = parse_hex(item, ok_item);
          if (!ok_item) fail(path, number, "bad pointer '" + item + "'");
          const auto live = live_at_ptr.find(address);
          if (live == live_at_ptr.end()) continue;  // not an allocation the log tracks
          Ref* found = nullptr;
          for (std::uint32_t i = op.first_ref; i < program.refs.size(); ++i) {
            if (program.refs[i].slot == live->second) found = &program.refs[i];
          }
          if (found == nullptr) {
            program.refs.push_back(Ref{live->second, false, false});
            found = &program.refs.back();
          }
          (write ? found->write : found->read) = true;
        }
      };
      add(reads, false);
      add(writes, true);
      op.ref_count = static_cast<std::uint32_t>(program.refs.size()) - op.first_ref;
      program.max_refs = std::max<std::uint64_t>(program.max_refs, op.ref_count);
      current->push_back(op);
    } else {
      fail(path, number, "unknown line '" + tag + "'");
    }
  }
  if (program.steps.empty()) fail(path, number, "no iteration in the log");
  return program;
}

}  // namespace replay
