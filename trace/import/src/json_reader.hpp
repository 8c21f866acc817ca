// Reads a JSON document into a ValueTree with nlohmann's SAX parser, so a PyTorch snapshot in
// JSON goes through the same schema walk as one in a pickle. Building our flat tree instead of
// an nlohmann DOM keeps memory small and never recurses, however deep the nesting.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "value_tree.hpp"

namespace memtool::trace::detail {

struct JsonDocument {
  ValueTree tree;
  ValueRef root = 0;
};

// Parses `text` as one JSON value (nothing but whitespace may follow). Syntax errors throw
// InputError at the byte offset nlohmann reports; values carry the offset the parser had
// reached when it delivered them (just past a scalar, at a container's opening bracket).
// `progress`, when set, is called every few MiB with (bytes parsed, total bytes).
// `budget` is charged for the tree (and goes on to the schema walk); without one, the input's
// own budget is used.
[[nodiscard]] JsonDocument read_json(std::string_view text, const std::string& name, DecodeBudget& budget,
                                     const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});
[[nodiscard]] JsonDocument read_json(std::string_view text, const std::string& name,
                                     const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});

}  // namespace memtool::trace::detail
