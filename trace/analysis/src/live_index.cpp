// LiveIndex (live_index.hpp): binary search over the blocks' first addresses, then within one
// block. A full block splits in two; one filled in address order (a program whose allocator
// hands out rising addresses) stays full and the new entry starts the next block, so such a
// trace packs 16 bytes per buffer.
#include "memtool/trace/live_index.hpp"

#include <algorithm>
#include <iterator>

namespace memtool::trace {

namespace {

bool before(const LiveIndex::Entry& e, std::uint64_t address) { return e.address < address; }

}  // namespace

LiveIndex::Block LiveIndex::make_block() const {
  Block block;
  block.reserve(kBlockEntries);
  return block;
}

std::size_t LiveIndex::block_for(std::uint64_t address) const {
  const auto it = std::upper_bound(blocks_.begin(), blocks_.end(), address,
                                   [](std::uint64_t a, const Block& b) { return a < b.front().address; });
  return it == blocks_.begin() ? 0 : static_cast<std::size_t>(it - blocks_.begin()) - 1;
}

LiveIndex::Entry* LiveIndex::find(std::uint64_t address) {
  if (blocks_.empty()) return nullptr;
  Block& block = blocks_[block_for(address)];
  const auto it = std::lower_bound(block.begin(), block.end(), address, before);
  return it != block.end() && it->address == address ? &*it : nullptr;
}

std::pair<LiveIndex::Entry*, bool> LiveIndex::try_emplace(std::uint64_t address, BufferId id) {
  if (blocks_.empty()) {
    blocks_.push_back(make_block());
    blocks_.back().push_back({address, id});
    ++size_;
    return {&blocks_.back().back(), true};
  }
  std::size_t b = block_for(address);
  Block* block = &blocks_[b];
  auto it = std::lower_bound(block->begin(), block->end(), address, before);
  if (it != block->end() && it->address == address) return {&*it, false};
  ++size_;
  if (block->size() < kBlockEntries) {
    it = block->insert(it, Entry{address, id});
    return {&*it, true};
  }
  // Full. At the end of the last block: a new block of its own (rising addresses pack full).
  if (it == block->end() && b + 1 == blocks_.size()) {
    blocks_.push_back(make_block());
    blocks_.back().push_back({address, id});
    return {&blocks_.back().back(), true};
  }
  // Otherwise split in halves and insert into the half it belongs to.
  Block upper = make_block();
  const auto middle = block->begin() + static_cast<std::ptrdiff_t>(kBlockEntries / 2);
  upper.insert(upper.end(), middle, block->end());
  block->erase(middle, block->end());
  blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(b + 1), std::move(upper));
  if (address >= blocks_[b + 1].front().address) ++b;
  block = &blocks_[b];
  it = std::lower_bound(block->begin(), block->end(), address, before);
  it = block->insert(it, Entry{address, id});
  return {&*it, true};
}

bool LiveIndex::erase(std::uint64_t address) {
  if (blocks_.empty()) return false;
  const std::size_t b = block_for(address);
  Block& block = blocks_[b];
  const auto it = std::lower_bound(block.begin(), block.end(), address, before);
  if (it == block.end() || it->address != address) return false;
  block.erase(it);
  --size_;
  if (block.empty()) blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(b));
  return true;
}

const LiveIndex::Entry* LiveIndex::at_or_below(std::uint64_t address) const {
  if (blocks_.empty()) return nullptr;
  const Block& block = blocks_[block_for(address)];
  const auto it = std::upper_bound(block.begin(), block.end(), address,
                                   [](std::uint64_t a, const Entry& e) { return a < e.address; });
  return it == block.begin() ? nullptr : &*std::prev(it);
}

}  // namespace memtool::trace
