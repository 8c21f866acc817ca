// Event signature tokens: what the iteration detector compares. One 64-bit token per event
// that says "the same kind of thing happened" independently of addresses and times:
//   allocation → hash(size, memory kind)
//   free       → hash(size of the freed buffer)   (the builder tracks address → size)
//   launch     → hash(kernel name id)
//   copy       → hash(bytes, copy kind)            (optional, on by default)
//   memset     → hash(bytes)                       (optional, on by default)
//   graph launch → hash(which graph: online its shape, which libmemtool.so reads at
//                  instantiation; offline, where the trace has no shapes, its executable graph)
// Other events (sync, marks, stream creation) give no token.
//
// Used online by the interposer (SignatureBuilder fed with the events it records) and offline
// (memtool/trace/iterations.hpp computes the same tokens from a TraceModel with the static
// token functions), so both see identical streams. Kernel name ids must be stable within one
// process/trace, which interning guarantees.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "memtool/trace/event.hpp"

namespace memtool::trace {

struct SignatureOptions {
  bool include_copies = true;
  bool include_memsets = true;
};

class SignatureBuilder {
 public:
  explicit SignatureBuilder(const SignatureOptions& options = {}) : options_(options) {}

  [[nodiscard]] std::uint64_t on_alloc(const AllocEvent& event);
  [[nodiscard]] std::uint64_t on_free(const FreeEvent& event);  // unknown address: own token
  [[nodiscard]] std::uint64_t on_launch(const LaunchEvent& event) const;
  [[nodiscard]] std::optional<std::uint64_t> on_copy(const CopyEvent& event) const;
  [[nodiscard]] std::optional<std::uint64_t> on_memset(const MemsetEvent& event) const;

  [[nodiscard]] std::size_t live_buffers() const { return sizes_.size(); }
  [[nodiscard]] const SignatureOptions& options() const { return options_; }

  // The token functions, for callers that already know sizes (offline analysis).
  [[nodiscard]] static std::uint64_t alloc_token(std::uint64_t size, MemoryKind kind);
  [[nodiscard]] static std::uint64_t free_token(std::uint64_t size);
  [[nodiscard]] static std::uint64_t unknown_free_token();
  [[nodiscard]] static std::uint64_t launch_token(StringId kernel);
  [[nodiscard]] static std::uint64_t graph_launch_token(std::uint64_t graph);
  [[nodiscard]] static std::uint64_t copy_token(std::uint64_t bytes, CopyKind kind);
  [[nodiscard]] static std::uint64_t memset_token(std::uint64_t bytes);

 private:
  SignatureOptions options_;
  std::unordered_map<std::uint64_t, std::uint64_t> sizes_;  // live address → size
};

}  // namespace memtool::trace
