// GraphCatalog: executable graphs and graph memory (see graph_catalog.hpp).
#include "memtool/interpose/graph_catalog.hpp"

#include <algorithm>

namespace memtool::interpose {

std::uint64_t graph_shape(const ScannedGraph& graph) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the shape words
  auto add = [&](std::uint64_t word) {
    for (int i = 0; i < 8; ++i) {
      h ^= (word >> (8 * i)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  };
  add(graph.nodes.size());
  add(graph.allocations.size());
  for (const GraphAllocation& a : graph.allocations) add(a.size);
  for (const ScannedNode& node : graph.nodes) add(node.words.size() + (node.opaque ? 1ULL << 32 : 0));
  return h;
}

void GraphCatalog::rebuild(Exec& exec) {
  exec.words.clear();
  exec.opaque = false;
  for (const ScannedNode& node : exec.nodes) {
    exec.words.insert(exec.words.end(), node.words.begin(), node.words.end());
    exec.opaque = exec.opaque || node.opaque;
  }
  // One word per buffer is enough, and launches scan fewer.
  std::sort(exec.words.begin(), exec.words.end());
  exec.words.erase(std::unique(exec.words.begin(), exec.words.end()), exec.words.end());
}

void GraphCatalog::add_graph_memory_locked(std::uint64_t address, std::uint64_t size) {
  auto [it, inserted] = graph_memory_.try_emplace(address, size);
  if (!inserted) {
    graph_bytes_ -= it->second;
    it->second = size;
  }
  graph_bytes_ += size;
  graph_ranges_.store(graph_memory_.size(), std::memory_order_relaxed);
}

void GraphCatalog::set_exec(std::uint64_t exec, ScannedGraph graph) {
  Exec entry;
  entry.shape = graph_shape(graph);
  entry.nodes = std::move(graph.nodes);
  entry.allocations = std::move(graph.allocations);
  rebuild(entry);
  entry.opaque = entry.opaque || graph.opaque;
  std::lock_guard lock(mutex_);
  for (const GraphAllocation& a : entry.allocations) add_graph_memory_locked(a.address, a.size);
  Exec& slot = execs_[exec];
  entry.taken = slot.taken;  // an update keeps the graph memory the driver holds for it
  slot = std::move(entry);
}

void GraphCatalog::set_node(std::uint64_t exec, ScannedNode node, const std::vector<GraphAllocation>& allocations) {
  std::lock_guard lock(mutex_);
  for (const GraphAllocation& a : allocations) add_graph_memory_locked(a.address, a.size);
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return;  // an executable graph memtool never saw: opaque anyway
  Exec& entry = it->second;
  const auto same =
      std::find_if(entry.nodes.begin(), entry.nodes.end(), [&](const ScannedNode& n) { return n.node == node.node; });
  if (same != entry.nodes.end()) {
    *same = std::move(node);
  } else {
    entry.nodes.push_back(std::move(node));
  }
  entry.allocations.insert(entry.allocations.end(), allocations.begin(), allocations.end());
  rebuild(entry);
}

void GraphCatalog::erase_exec(std::uint64_t exec) {
  std::lock_guard lock(mutex_);
  execs_.erase(exec);
  // Its graph memory keeps its addresses while the graph lives (memtool does not see graphs
  // destroyed): forget_graph_memory drops a range once the driver hands it to anything else.
}

GraphCatalog::Launch GraphCatalog::launch(std::uint64_t exec, std::vector<std::uint64_t>& words) {
  std::lock_guard lock(mutex_);
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return Launch{};
  words.insert(words.end(), it->second.words.begin(), it->second.words.end());
  const bool first = !it->second.taken;
  it->second.taken = true;
  return Launch{true, it->second.opaque, first, it->second.shape};
}

bool GraphCatalog::upload(std::uint64_t exec) {
  std::lock_guard lock(mutex_);
  const auto it = execs_.find(exec);
  if (it == execs_.end() || it->second.taken) return false;
  it->second.taken = true;
  return true;
}

std::uint64_t GraphCatalog::pending_graph_bytes() const {
  std::lock_guard lock(mutex_);
  std::uint64_t bytes = 0;
  for (const auto& [handle, exec] : execs_) {
    if (exec.taken) continue;
    for (const GraphAllocation& a : exec.allocations) bytes += a.size;
  }
  return bytes;
}

void GraphCatalog::add_graph_memory(std::uint64_t address, std::uint64_t size) {
  std::lock_guard lock(mutex_);
  add_graph_memory_locked(address, size);
}

bool GraphCatalog::is_graph_memory(std::uint64_t address) const {
  if (!any_graph_memory()) return false;
  std::lock_guard lock(mutex_);
  return graph_memory_.count(address) != 0;
}

void GraphCatalog::forget_graph_memory(std::uint64_t address, std::uint64_t size) {
  if (!any_graph_memory()) return;
  std::lock_guard lock(mutex_);
  const std::uint64_t end = address + std::max<std::uint64_t>(size, 1);
  auto it = graph_memory_.upper_bound(address);
  if (it != graph_memory_.begin()) --it;  // the range that may start before `address`
  while (it != graph_memory_.end() && it->first < end) {
    if (it->first + std::max<std::uint64_t>(it->second, 1) > address) {
      graph_bytes_ -= it->second;
      it = graph_memory_.erase(it);
    } else {
      ++it;
    }
  }
  graph_ranges_.store(graph_memory_.size(), std::memory_order_relaxed);
}

GraphCatalog::Totals GraphCatalog::totals() const {
  std::lock_guard lock(mutex_);
  Totals t;
  t.execs = execs_.size();
  t.graph_allocations = graph_memory_.size();
  t.graph_bytes = graph_bytes_;
  for (const auto& [handle, exec] : execs_) {
    if (!exec.allocations.empty()) ++t.graphs_with_memory;
    if (exec.opaque) ++t.opaque_execs;
  }
  return t;
}

}  // namespace memtool::interpose
