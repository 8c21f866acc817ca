// The paper's brute-force repeat test, written from its description (see the header): the
// longest square of the signature, cut once, accepted above a minimum iteration length.
#include "memtool/trace/paper_detector.hpp"

namespace memtool::trace {
namespace {

struct Square {
  std::uint64_t location = 0;
  std::uint64_t length = 0;
};

// Longest length L > min_length such that some segment of length L is immediately repeated.
// For each candidate length (longest first) one scan counts consecutive matches at distance L.
std::optional<Square> longest_square(std::span<const std::uint64_t> s, std::uint64_t min_length) {
  const std::uint64_t n = s.size();
  for (std::uint64_t length = n / 2; length > min_length; --length) {
    std::uint64_t run = 0;
    for (std::uint64_t j = 0; j + length < n; ++j) {
      run = (s[j] == s[j + length]) ? run + 1 : 0;
      if (run == length) return Square{j + 1 - length, length};
    }
  }
  return std::nullopt;
}

}  // namespace

PaperIterationDetector::PaperIterationDetector(const PaperDetectorOptions& options)
    : options_(options), next_checkpoint_(options.first_checkpoint == 0 ? 1 : options.first_checkpoint) {}

bool PaperIterationDetector::push(std::uint64_t token) {
  tokens_.push_back(token);
  if (found_ || tokens_.size() < next_checkpoint_) return false;
  next_checkpoint_ *= 2;
  found_ = find(tokens_, options_.min_iteration);
  if (found_) found_->confirmed_at = tokens_.size();
  return found_.has_value();
}

std::optional<DetectedPeriod> PaperIterationDetector::find(std::span<const std::uint64_t> tokens,
                                                           std::uint64_t min_iteration) {
  auto square = longest_square(tokens, 0);
  if (!square) return std::nullopt;
  // The cut: a segment holding two (or more) iterations repeats inside itself.
  const auto inner = longest_square(tokens.subspan(square->location, square->length), min_iteration / 2);
  if (inner) square = Square{square->location + inner->location, inner->length};
  if (square->length <= min_iteration) return std::nullopt;
  return DetectedPeriod{square->length, square->location, tokens.size(), false};
}

}  // namespace memtool::trace
