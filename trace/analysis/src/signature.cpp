// Signature tokens: a strong 64-bit mix of (event kind, payload) so different kinds never
// collide by construction and equal payloads give equal tokens.
#include "memtool/trace/signature.hpp"

namespace memtool::trace {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t token(EventKind kind, std::uint64_t a, std::uint64_t b = 0) {
  return mix(mix(static_cast<std::uint64_t>(kind) * 0x100000001b3ULL ^ a) ^ (b * 0x9e37ULL));
}

}  // namespace

std::uint64_t SignatureBuilder::alloc_token(std::uint64_t size, MemoryKind kind) {
  return token(EventKind::alloc, size, static_cast<std::uint64_t>(kind) + 1);
}
std::uint64_t SignatureBuilder::free_token(std::uint64_t size) { return token(EventKind::free, size); }
std::uint64_t SignatureBuilder::unknown_free_token() { return token(EventKind::free, ~std::uint64_t{0}, 1); }
std::uint64_t SignatureBuilder::launch_token(StringId kernel) { return token(EventKind::launch, kernel.value()); }
std::uint64_t SignatureBuilder::graph_launch_token(std::uint64_t graph) {
  return token(EventKind::graph_launch, graph);
}
std::uint64_t SignatureBuilder::copy_token(std::uint64_t bytes, CopyKind kind) {
  return token(EventKind::copy, bytes, static_cast<std::uint64_t>(kind) + 1);
}
std::uint64_t SignatureBuilder::memset_token(std::uint64_t bytes) { return token(EventKind::memset, bytes); }

std::uint64_t SignatureBuilder::on_alloc(const AllocEvent& event) {
  sizes_[event.address] = event.size;
  return alloc_token(event.size, event.kind);
}

std::uint64_t SignatureBuilder::on_free(const FreeEvent& event) {
  const auto it = sizes_.find(event.address);
  if (it == sizes_.end()) return unknown_free_token();
  const std::uint64_t size = it->second;
  sizes_.erase(it);
  return free_token(size);
}

std::uint64_t SignatureBuilder::on_launch(const LaunchEvent& event) const { return launch_token(event.kernel); }

std::optional<std::uint64_t> SignatureBuilder::on_copy(const CopyEvent& event) const {
  if (!options_.include_copies) return std::nullopt;
  return copy_token(event.bytes, event.kind);
}

std::optional<std::uint64_t> SignatureBuilder::on_memset(const MemsetEvent& event) const {
  if (!options_.include_memsets) return std::nullopt;
  return memset_token(event.bytes);
}

}  // namespace memtool::trace
