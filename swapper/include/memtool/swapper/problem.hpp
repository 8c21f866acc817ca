// A swap planning problem as a file: the iteration, the link and the budget the planner was
// given. The process writes the one it plans from (MEMTOOL_SWAP_DUMP), and `memtool simulate`
// reads it back, so a plan made in the process can be made again, and looked into, offline.
//
// The format is text, one record a line (docs/swapper.md, "The problem file"):
//   memtool-swap-problem 1
//   budget BYTES
//   link D2H_BYTES_PER_NS H2D_BYTES_PER_NS D2H_LATENCY_NS H2D_LATENCY_NS DUPLEX_FACTOR
//   host PER_OP_NS PER_COPY_NS [PER_SYNC_NS]   optional: the host costs (simulate.hpp: HostCosts),
//                                   written only when one is not 0; PER_SYNC_NS only when it is
//                                   not 0 (files before it read as 0)
//   ops COUNT [host-timed]  then COUNT lines:  op DURATION_NS STREAM launch|copy|memset [reaches-all]
//                                              [host=NS [syncs]]   (host=: every op of a host-timed file)
//   buffers COUNT        then COUNT lines:  buffer ID SIZE ALLOC_BEFORE FREE_AFTER FLAGS [copy=BYTES]
//                                           OP:MODE...
//   end
// FLAGS is "-" or letters: p (persistent), u (not swappable); MODE is r, w or rw; copy=: the
// bytes a copy of it moves where fewer than SIZE (Buffer::copy_bytes; files without it copy
// SIZE). An op marked
// reaches-all may reach every buffer (Op::reaches_all); files written before the mark read as
// none. Lines starting with '#' are comments. Doubles are written in their shortest form that
// reads back exact.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "memtool/swapper/iteration.hpp"
#include "memtool/swapper/simulate.hpp"

namespace memtool::swapper {

struct Problem {
  Iteration iteration;
  Link link;
  std::uint64_t budget_bytes = 0;
  HostCosts host{};  // none unless measured or given
};

inline constexpr int kProblemVersion = 1;

void write_problem(std::ostream& out, const Problem& problem);

// Throws std::invalid_argument naming the line and what is wrong with it (a malformed or
// truncated record, a count that does not match, numbers out of range, an iteration or link that
// validate() refuses). Reads no further than `end`.
[[nodiscard]] Problem read_problem(std::istream& in);

// Does this text start like a problem file (its first line)?
[[nodiscard]] bool looks_like_problem(std::string_view head);

}  // namespace memtool::swapper
