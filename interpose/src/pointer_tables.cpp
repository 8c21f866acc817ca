// PointerTables: the addresses buffers hold, as far as memtool can know them (pointer_tables.hpp).
#include "pointer_tables.hpp"

#include <algorithm>
#include <cstring>

namespace memtool::interpose {
namespace {

// Appends the refs of `from` not yet in `into`.
template <class Ref>
void merge(std::vector<Ref>& into, const std::vector<Ref>& from) {
  for (const Ref& r : from) {
    const bool present = std::any_of(into.begin(), into.end(),
                                     [&](const Ref& have) { return have.base == r.base && have.serial == r.serial; });
    if (!present) into.push_back(r);
  }
}

}  // namespace

bool PointerTables::live(const Ref& r) const {
  const auto it = serials_.find(r.base);
  return it != serials_.end() && it->second == r.serial;
}

PointerTables::Ref PointerTables::ref_of(std::uint64_t base) const {
  const auto it = serials_.find(base);
  return Ref{base, it != serials_.end() ? it->second : 0};
}

// Memory the host reads and writes directly: what it holds changes without a call memtool sees.
bool PointerTables::host_visible(const engine::LiveBuffer& buffer) {
  return buffer.kind == trace::MemoryKind::pinned_host || buffer.kind == trace::MemoryKind::managed;
}

void PointerTables::on_alloc(std::uint64_t base) { serials_[base] = next_serial_++; }

void PointerTables::on_free(std::uint64_t base) {
  serials_.erase(base);
  contents_.erase(base);
}

void PointerTables::on_upload(const engine::BufferIndex& index, std::uint64_t dst, const unsigned char* source,
                              std::uint64_t bytes) {
  found_.clear();
  bool unknown = false;
  // A device-side pointer is 8-byte aligned in device memory: the words on the destination's grid.
  const std::uint64_t first = (8 - dst % 8) % 8;
  std::uint64_t last_base = 0;
  for (std::uint64_t offset = first; offset + sizeof(std::uint64_t) <= bytes; offset += sizeof(std::uint64_t)) {
    std::uint64_t word = 0;
    std::memcpy(&word, source + offset, sizeof word);
    const engine::LiveBuffer* buffer = index.find(word);
    if (buffer == nullptr || buffer->base == last_base) continue;
    last_base = buffer->base;
    unknown = unknown || host_visible(*buffer);
    found_.push_back(ref_of(buffer->base));
  }
  std::sort(found_.begin(), found_.end(), [](const Ref& a, const Ref& b) { return a.base < b.base; });
  found_.erase(std::unique(found_.begin(), found_.end(), [](const Ref& a, const Ref& b) { return a.base == b.base; }),
               found_.end());
  store(index, dst, bytes, found_, {}, unknown);
}

void PointerTables::on_unread_upload(const engine::BufferIndex& index, std::uint64_t dst) {
  if (const engine::LiveBuffer* buffer = index.find(dst)) contents_[buffer->base].unknown = true;
}

void PointerTables::on_device_copy(const engine::BufferIndex& index, std::uint64_t dst, std::uint64_t src,
                                   std::uint64_t bytes) {
  std::vector<Ref> definite;
  std::vector<Ref> maybe;
  bool unknown = false;
  if (const engine::LiveBuffer* from = index.find(src)) {
    unknown = host_visible(*from);
    const auto it = contents_.find(from->base);
    if (it != contents_.end()) {
      definite = it->second.definite;
      maybe = it->second.maybe;
      unknown = unknown || it->second.unknown;
    }
  } else {
    unknown = true;  // device memory memtool does not track (a global): what it holds is unknown
  }
  store(index, dst, bytes, definite, maybe, unknown);
}

void PointerTables::on_memset(const engine::BufferIndex& index, std::uint64_t dst, std::uint64_t bytes) {
  const engine::LiveBuffer* buffer = index.find(dst);
  if (buffer != nullptr && dst == buffer->base && bytes >= buffer->size) contents_.erase(buffer->base);
}

void PointerTables::store(const engine::BufferIndex& index, std::uint64_t dst, std::uint64_t bytes,
                          const std::vector<Ref>& definite, const std::vector<Ref>& maybe, bool unknown) {
  const engine::LiveBuffer* buffer = index.find(dst);
  if (buffer == nullptr) {
    escape(definite);
    escape(maybe);
    all_escaped_ = all_escaped_ || unknown;
    return;
  }
  const bool whole = dst == buffer->base && bytes >= buffer->size;
  if (whole && definite.empty() && maybe.empty() && !unknown) {
    contents_.erase(buffer->base);
    return;
  }
  Contents& c = contents_[buffer->base];
  if (whole) {
    c.definite = definite;
    c.maybe = maybe;
    c.unknown = unknown;
    return;
  }
  merge(c.definite, definite);
  merge(c.maybe, maybe);
  c.unknown = c.unknown || unknown;
}

void PointerTables::escape(const std::vector<Ref>& refs) {
  std::vector<std::uint64_t> pending;
  for (const Ref& r : refs) {
    if (live(r)) pending.push_back(r.base);
  }
  // What they hold escapes with them.
  std::unordered_set<std::uint64_t> done;
  while (!pending.empty()) {
    const std::uint64_t base = pending.back();
    pending.pop_back();
    if (!done.insert(base).second) continue;
    escaped_.push_back(base);
    const auto it = contents_.find(base);
    if (it == contents_.end()) continue;
    all_escaped_ = all_escaped_ || it->second.unknown;
    for (const auto* list : {&it->second.definite, &it->second.maybe}) {
      for (const Ref& r : *list) {
        if (live(r)) pending.push_back(r.base);
      }
    }
  }
}

bool PointerTables::on_launch(const engine::BufferIndex& index, std::vector<std::uint64_t>& touched,
                              std::vector<std::uint64_t>& reached, std::vector<std::uint64_t>& escaped) {
  escaped.insert(escaped.end(), escaped_.begin(), escaped_.end());
  escaped_.clear();
  // No pointer at all: it can only reach what an earlier launch left in a device global.
  bool all = touched.empty() || all_escaped_;
  seen_.clear();
  seen_.insert(touched.begin(), touched.end());
  std::vector<std::uint64_t>& maybe = maybe_;
  maybe.clear();
  for (std::size_t i = 0; i < touched.size(); ++i) {
    const engine::LiveBuffer* buffer = index.find(touched[i]);
    if (buffer != nullptr && host_visible(*buffer)) all = true;
    const auto it = contents_.find(touched[i]);
    if (it == contents_.end()) continue;
    const Contents& c = it->second;
    all = all || c.unknown;
    for (const Ref& r : c.definite) {
      if (live(r) && seen_.insert(r.base).second) touched.push_back(r.base);
    }
    for (const Ref& r : c.maybe) {
      if (live(r)) maybe.push_back(r.base);
    }
  }
  for (const std::uint64_t base : maybe) {
    if (seen_.insert(base).second) reached.push_back(base);
  }
  for (std::size_t i = 0; i < reached.size(); ++i) {
    const auto it = contents_.find(reached[i]);
    if (it == contents_.end()) continue;
    all = all || it->second.unknown;
    for (const auto* list : {&it->second.definite, &it->second.maybe}) {
      for (const Ref& r : *list) {
        if (live(r) && seen_.insert(r.base).second) reached.push_back(r.base);
      }
    }
  }
  // The kernel may have stored any address it reached into a small buffer it touches.
  if (touched.size() + reached.size() < 2) return all;
  for (const std::uint64_t holder : touched) {
    const engine::LiveBuffer* buffer = index.find(holder);
    if (buffer == nullptr || buffer->base != holder || buffer->size > table_bytes_ || host_visible(*buffer)) continue;
    Contents& c = contents_[holder];
    if (c.unknown) continue;
    std::erase_if(c.maybe, [&](const Ref& r) { return !live(r); });
    std::unordered_set<std::uint64_t>& held = held_;
    held.clear();
    for (const Ref& r : c.maybe) held.insert(r.base);
    for (const Ref& r : c.definite) held.insert(r.base);
    for (const auto* list : {&touched, &reached}) {
      for (const std::uint64_t base : *list) {
        if (base != holder && held.insert(base).second) c.maybe.push_back(ref_of(base));
      }
    }
    if (c.maybe.size() > kMaxMaybe) {
      c.maybe.clear();
      c.unknown = true;
    }
  }
  return all;
}

}  // namespace memtool::interpose
