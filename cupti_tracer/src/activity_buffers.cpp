// ActivityBuffers (see activity_buffers.hpp): a free list of equal buffers, allocated on first
// need up to the cap and kept for reuse.
#include "activity_buffers.hpp"

#include <algorithm>
#include <cstdlib>

namespace memtool::cupti::detail {

ActivityBuffers::ActivityBuffers(std::size_t bytes, std::size_t cap)
    : bytes_((std::max<std::size_t>(bytes, 64) + 7) & ~std::size_t{7}), cap_(std::max<std::size_t>(cap, 1)) {
  free_.reserve(cap_);
}

ActivityBuffers::~ActivityBuffers() {
  for (std::uint8_t* buffer : free_) std::free(buffer);
}

std::uint8_t* ActivityBuffers::take() noexcept {
  std::lock_guard lock(mutex_);
  if (!free_.empty()) {
    std::uint8_t* buffer = free_.back();
    free_.pop_back();
    ++out_;
    return buffer;
  }
  if (allocated_ == cap_) {
    ++refused_;
    return nullptr;
  }
  auto* buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, bytes_));
  if (buffer == nullptr) {
    ++refused_;
    return nullptr;
  }
  ++allocated_;
  ++out_;
  return buffer;
}

void ActivityBuffers::give_back(std::uint8_t* buffer) noexcept {
  if (buffer == nullptr) return;
  std::lock_guard lock(mutex_);
  if (out_ == 0 || free_.size() == free_.capacity()) {  // not ours (or a double return): not pooled
    std::free(buffer);
    return;
  }
  --out_;
  free_.push_back(buffer);
}

std::uint64_t ActivityBuffers::refused() const noexcept {
  std::lock_guard lock(mutex_);
  return refused_;
}

std::size_t ActivityBuffers::out() const noexcept {
  std::lock_guard lock(mutex_);
  return out_;
}

}  // namespace memtool::cupti::detail
