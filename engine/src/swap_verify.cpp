// SwapVerifier: checksums of swapped buffers and the reports of mismatches (swap_verify.hpp).
#include "swap_verify.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "memtool/engine/log.hpp"

namespace memtool::engine::detail {
namespace {

// Bytes read back at once: a buffer of gigabytes is checksummed piece by piece.
constexpr std::uint64_t kChunkBytes = std::uint64_t{64} << 20;

// A 64-bit word-wise FNV-1a variant: every byte and its position count.
std::uint64_t mix(std::uint64_t h, const unsigned char* bytes, std::uint64_t n) {
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes + i, 8);
    h = (h ^ word) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ bytes[i]) * 0x100000001b3ULL;
  return h;
}

}  // namespace

SwapVerifier::~SwapVerifier() {
  if (stream_ != 0) (void)device_.destroy_stream(stream_);
}

void SwapVerifier::launched(std::uint64_t work, std::string_view kernel, StreamId stream) {
  if (recent_.size() < kRecentLaunches) {
    recent_.push_back(Launch{work, std::string(kernel), stream});
    return;
  }
  Launch& slot = recent_[next_];
  next_ = (next_ + 1) % kRecentLaunches;
  slot.work = work;
  slot.kernel.assign(kernel);
  slot.stream = stream;
}

bool SwapVerifier::checksum(DevicePtr at, std::uint64_t bytes, std::uint64_t* out) {
  if (stream_ == 0 && device_.create_stream(&stream_) != kSuccess) {
    stream_ = 0;
    return false;
  }
  EventId done = 0;
  if (device_.create_event(&done) != kSuccess) return false;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  bool ok = true;
  scratch_.resize(static_cast<std::size_t>(std::min(bytes, kChunkBytes)));
  for (std::uint64_t offset = 0; ok && offset < bytes; offset += kChunkBytes) {
    const std::uint64_t n = std::min(kChunkBytes, bytes - offset);
    ok = device_.copy_to_host(scratch_.data(), at + offset, n, stream_) == kSuccess &&
         device_.record_event(done, stream_) == kSuccess && device_.synchronize_event(done) == kSuccess;
    if (ok) h = mix(h, scratch_.data(), n);
  }
  device_.destroy_event(done);
  if (!ok) return false;
  ++checks_;
  *out = h;
  return true;
}

void SwapVerifier::mismatch(DevicePtr ptr, std::uint64_t size, std::uint64_t id, std::string_view where,
                            std::uint64_t since, std::uint64_t now) {
  ++mismatches_;
  // The last launch after its last good checksum and before the work being issued now.
  const Launch* suspect = nullptr;
  for (const Launch& l : recent_) {
    if (l.work > since && l.work < now && (suspect == nullptr || l.work > suspect->work)) suspect = &l;
  }
  const std::string culprit =
      suspect != nullptr
          ? fmt::format("{} (work item {}, stream 0x{:x})", suspect->kernel, suspect->work, suspect->stream)
          : std::string("none since its last checksum (a copy, a memset or the host wrote it)");
  const std::string text = fmt::format(
      "buffer 0x{:x} ({} B, id {}) changed behind memtool's back {}; the last launch "
      "that could have changed it: {}",
      ptr, size, id, where, culprit);
  if (first_.empty()) first_ = text;
  if (mismatches_ <= kMaxReported) {
    log(LogLevel::warn, "memtool swap verify: " + text);
  } else if (mismatches_ == kMaxReported + 1) {
    log(LogLevel::warn, "memtool swap verify: more buffers changed behind memtool's back; counted in the summary");
  }
}

}  // namespace memtool::engine::detail
