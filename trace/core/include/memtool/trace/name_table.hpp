// Tables of named things (the engine's strategies, the swapper's strategies, the simulated
// resources): lookup by name and the list of names for messages, written once. An entry is any
// struct with a `name` that compares with a std::string_view.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace memtool::trace {

// The entry called `name`, or nullptr.
template <class Entry>
[[nodiscard]] const Entry* find_named(std::span<const Entry> table, std::string_view name) {
  for (const Entry& entry : table) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

// "a, b, c": every name, in table order, for a message that lists what is valid.
template <class Entry>
[[nodiscard]] std::string names_of(std::span<const Entry> table, std::string_view separator = ", ") {
  std::string names;
  for (const Entry& entry : table) {
    if (!names.empty()) names += separator;
    names += entry.name;
  }
  return names;
}

}  // namespace memtool::trace
