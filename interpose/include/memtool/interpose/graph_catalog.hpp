// What memtool knows of the program's CUDA graphs (issue 32): per executable graph, the words
// its nodes may name memory by (graph_scanner.hpp), kept per node so that a
// cuGraphExec*SetParams replaces just that node's, and whether it is opaque; and the graph
// memory — allocations made on a capturing stream or by mem-alloc nodes, which belong to their
// graph for its life and are never served, moved or reused by memtool.
//
// A launch of an executable graph is one work item whose buffers are its words resolved against
// the live buffers at the launch (Recorder::on_graph_launch); an executable graph memtool never
// saw instantiated (or could not read) is opaque.
//
// Thread-safe: one mutex; nothing is done under it but copying.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "memtool/interpose/graph_scanner.hpp"

namespace memtool::interpose {

class GraphCatalog {
 public:
  // What a launch of an executable graph touches.
  struct Launch {
    bool known = false;       // instantiated while memtool watched
    bool opaque = true;       // may touch any buffer
    bool first = false;       // its first launch (or upload): the driver takes its graph memory now
    std::uint64_t shape = 0;  // which graph it is, for the step signature (graph_shape)
  };
  struct Totals {
    std::uint64_t execs = 0;               // executable graphs alive
    std::uint64_t graph_allocations = 0;   // graph memory allocations known (alive)
    std::uint64_t graph_bytes = 0;         // their bytes
    std::uint64_t graphs_with_memory = 0;  // executable graphs with mem-alloc nodes
    std::uint64_t opaque_execs = 0;
  };

  // Instantiation, or a whole-graph update, of `exec`: replaces what was known of it.
  void set_exec(std::uint64_t exec, ScannedGraph graph);
  // A node of `exec` got new parameters (its words replace the node's); unknown nodes are
  // added. A child graph node's new allocations are graph memory.
  void set_node(std::uint64_t exec, ScannedNode node, const std::vector<GraphAllocation>& allocations = {});
  void erase_exec(std::uint64_t exec);
  // The words of a launch of `exec` are appended to `words`.
  Launch launch(std::uint64_t exec, std::vector<std::uint64_t>& words);
  // cuGraphUpload of `exec`: its graph memory is the driver's from now on; true the first time.
  bool upload(std::uint64_t exec);
  // Graph memory of executable graphs never launched nor uploaded: what the driver will take
  // at their first launch, on top of what it holds now.
  [[nodiscard]] std::uint64_t pending_graph_bytes() const;

  // --- graph memory ---
  void add_graph_memory(std::uint64_t address, std::uint64_t size);
  // Whether `address` is the start of a graph allocation memtool knows.
  [[nodiscard]] bool is_graph_memory(std::uint64_t address) const;
  // The driver handed [address, address + size) to something else: it is no graph's any more.
  void forget_graph_memory(std::uint64_t address, std::uint64_t size);
  [[nodiscard]] bool any_graph_memory() const noexcept { return graph_ranges_.load(std::memory_order_relaxed) != 0; }

  [[nodiscard]] Totals totals() const;

 private:
  struct Exec {
    std::vector<ScannedNode> nodes;
    std::vector<std::uint64_t> words;  // every node's, rebuilt when a node changes
    std::vector<GraphAllocation> allocations;
    bool opaque = false;
    bool taken = false;  // launched or uploaded: the driver holds its graph memory
    std::uint64_t shape = 0;
  };
  static void rebuild(Exec& exec);
  void add_graph_memory_locked(std::uint64_t address, std::uint64_t size);

  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, Exec> execs_;
  std::map<std::uint64_t, std::uint64_t> graph_memory_;  // base → size
  std::uint64_t graph_bytes_ = 0;
  std::atomic<std::size_t> graph_ranges_{0};
};

// A graph's identity in the step signature: its node types and kernels in creation order (an
// update that changes only parameters keeps it; the executable graph's handle plays no part).
std::uint64_t graph_shape(const ScannedGraph& graph);

}  // namespace memtool::interpose
