// IterationLog: one observed iteration as the swapper's input (see swap_observation.hpp).
#include "swap_observation.hpp"

#include <algorithm>

namespace memtool::engine::detail {

void IterationLog::clear() {
  items_ = 0;
  reaching_all_.clear();
  signature_.clear();
  order_.clear();
  records_.clear();
}

void IterationLog::alive(const BufferName& name, std::uint64_t footprint, DevicePtr address, std::uint64_t bytes) {
  const auto [it, inserted] = records_.try_emplace(name);
  if (!inserted) return;
  it->second.footprint = footprint;
  it->second.bytes = bytes;
  it->second.address = address;
  order_.push_back(name);
}

std::uint32_t IterationLog::item() { return items_++; }

void IterationLog::allocated(std::uint64_t ordinal, std::uint64_t footprint, DevicePtr address, std::uint64_t bytes) {
  const BufferName name{Birth::current, ordinal};
  signature_.push_back(footprint);
  const auto [it, inserted] = records_.try_emplace(name);
  if (!inserted) return;  // an ordinal is allocated once per iteration
  it->second.footprint = footprint;
  it->second.bytes = bytes;
  it->second.address = address;
  it->second.alloc = items_;
  order_.push_back(name);
}

IterationLog::Record* IterationLog::find(const BufferName& name) {
  const auto it = records_.find(name);
  return it == records_.end() ? nullptr : &it->second;
}

void IterationLog::freed(const BufferName& name) {
  if (Record* r = find(name)) {
    r->freed = true;
    r->free = static_cast<std::int64_t>(items_) - 1;
  }
}

void IterationLog::used(const BufferName& name) {
  if (items_ == 0) return;
  Record* r = find(name);
  if (r == nullptr) return;
  const std::uint32_t op = items_ - 1;
  if (r->uses.empty() || r->uses.back() != op) r->uses.push_back(op);
}

void IterationLog::reaches_all() {
  if (items_ == 0) return;
  if (reaching_all_.empty() || reaching_all_.back() != items_ - 1) reaching_all_.push_back(items_ - 1);
}

namespace {

std::vector<swapper::Access> accesses(const std::vector<std::uint32_t>& ops) {
  std::vector<swapper::Access> out;
  out.reserve(ops.size());
  for (const std::uint32_t op : ops) out.push_back(swapper::Access{op, swapper::AccessMode::read_write});
  return out;
}

}  // namespace

std::optional<IterationLog::Input> IterationLog::to_input(const ItemTimes& times, std::string& why) const {
  const std::uint32_t n = items_;
  const std::vector<double>& durations_ns = times.gpu_ns;
  if (n < 2 || durations_ns.size() != n) {
    why = "an iteration needs two work items and the time of each";
    return std::nullopt;
  }
  const bool host = times.host_timed && times.host_ns.size() == n && times.syncs.size() == n;
  Input in;
  in.iteration.ops.resize(n);
  in.iteration.host_timed = host;
  for (std::uint32_t i = 0; i < n; ++i) {
    swapper::Op& op = in.iteration.ops[i];
    op.duration_ns = static_cast<std::uint64_t>(std::max(1.0, durations_ns[i]));
    if (!host) continue;
    op.host_ns = static_cast<std::uint64_t>(std::max(0.0, times.host_ns[i]));
    op.syncs = times.syncs[i];
  }
  for (const std::uint32_t i : reaching_all_) in.iteration.ops[i].reaches_all = true;
  const auto add = [&](const BufferName& name, swapper::Buffer b) {
    b.id = in.names.size();
    in.names.push_back(name);
    in.iteration.buffers.push_back(std::move(b));
  };
  const auto resident = [&](const Record& r, bool swappable, const BufferName& name) {
    swapper::Buffer b;
    b.size = r.footprint;
    b.copy_bytes = r.bytes;
    b.persistent = true;
    b.swappable = swappable;
    b.accesses = accesses(r.uses);
    add(name, std::move(b));
  };
  std::size_t swappable = 0;
  for (const BufferName& name : order_) {
    const Record& r = records_.at(name);
    if (r.footprint == 0) continue;
    if (name.birth == Birth::persistent) {
      resident(r, true, name);
      ++swappable;
      continue;
    }
    if (name.birth == Birth::previous) {
      const auto twin = records_.find(BufferName{Birth::current, name.id});
      const bool crossing = twin != records_.end() && !twin->second.freed && r.freed && r.free >= 0 &&
                            static_cast<std::uint32_t>(r.free) < std::min(twin->second.alloc, n - 1);
      if (crossing) continue;  // its uses go with its twin's
      if (!r.freed) {
        resident(r, true, BufferName{Birth::persistent, r.address});  // lives on: persistent from now on
        ++swappable;
        continue;
      }
      if (r.free < 0) continue;  // freed before any item
      swapper::Buffer b;
      b.size = r.footprint;
      b.copy_bytes = r.bytes;
      b.alloc_before_op = 0;
      b.free_after_op = static_cast<std::uint32_t>(r.free);
      b.swappable = false;  // no twin: not periodic
      b.accesses = accesses(r.uses);
      add(name, std::move(b));
      continue;
    }
    const std::uint32_t alloc = std::min(r.alloc, n - 1);
    swapper::Buffer b;
    b.size = r.footprint;
    b.copy_bytes = r.bytes;
    b.alloc_before_op = alloc;
    if (r.freed) {
      if (r.free < static_cast<std::int64_t>(alloc)) {
        // Live during no item: no buffer, but the executor makes room for it all the same.
        in.iteration.ops[alloc].transient_bytes += r.footprint;
        continue;
      }
      b.free_after_op = static_cast<std::uint32_t>(r.free);
      b.accesses = accesses(r.uses);
    } else {
      const auto twin = records_.find(BufferName{Birth::previous, name.id});
      if (twin == records_.end() || !twin->second.freed || twin->second.free < 0 ||
          static_cast<std::uint32_t>(twin->second.free) >= alloc) {
        resident(r, false, name);  // when it goes is unknown
        continue;
      }
      b.free_after_op = static_cast<std::uint32_t>(twin->second.free);
      std::vector<std::uint32_t> ops = twin->second.uses;  // before its free, then after its allocation
      ops.insert(ops.end(), r.uses.begin(), r.uses.end());
      std::sort(ops.begin(), ops.end());
      ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
      b.accesses = accesses(ops);
    }
    add(name, std::move(b));
    ++swappable;
  }
  if (swappable == 0) {
    why = "no buffer can be swapped";
    return std::nullopt;
  }
  return in;
}

}  // namespace memtool::engine::detail
