// The converter from a trace model: ops, buffers (persistent, crossing the iteration boundary,
// temporaries), accesses and their modes, the three duration models, snapshots without launches,
// and graph launches.
#include <catch2/catch.hpp>

#include <vector>

#include "memtool/swapper/candidates.hpp"
#include "memtool/swapper/trace_input.hpp"

namespace ms = memtool::swapper;
namespace mt = memtool::trace;

namespace {

// Feeds events into a TraceModel, one microsecond apart.
struct Feed {
  mt::TraceModel model;
  std::uint64_t seq = 0;
  std::uint64_t marks = 0;
  mt::EventHeader next() {
    mt::EventHeader h;
    h.seq = seq++;
    h.time_ns = h.seq * 1000;
    return h;
  }
  void alloc(std::uint64_t address, std::uint64_t size) {
    mt::AllocEvent e;
    e.header = next();
    e.address = address;
    e.size = size;
    model.on_alloc(e);
  }
  void free(std::uint64_t address) {
    mt::FreeEvent e;
    e.header = next();
    e.address = address;
    model.on_free(e);
  }
  std::uint64_t launch(std::vector<std::uint64_t> touched) {
    mt::LaunchEvent e;
    e.header = next();
    e.touched = touched;
    model.on_launch(e);
    return e.header.seq;
  }
  std::uint64_t memset(std::uint64_t address) {
    mt::MemsetEvent e;
    e.header = next();
    e.dst = address;
    e.bytes = 100;
    model.on_memset(e);
    return e.header.seq;
  }
  void graph_launch() {
    mt::GraphLaunchEvent e;
    e.header = next();
    model.on_graph_launch(e);
  }
  void mark() {
    mt::IterationMarkEvent e;
    e.header = next();
    e.index = marks++;
    model.on_iteration_mark(e);
  }
  void gpu_time(std::uint64_t event_seq, std::uint64_t duration, mt::GpuWorkKind kind) {
    mt::GpuTimeRecord r;
    r.kind = kind;
    r.event_seq = event_seq;
    r.start_ns = event_seq * 1000;
    r.end_ns = r.start_ns + duration;
    model.on_gpu_time(r);
  }
};

constexpr std::uint64_t W = 0x1000, O = 0x2000, A = 0x3000, T = 0x4000;

// Four marked iterations of: K1(W, A) K2(A, T, previous X) K3(W) memset(A) K4(A, O) K5(X), where
// X is allocated in one iteration and freed in the next (after K2).
Feed training(bool gpu_times = false, bool graph = false) {
  Feed f;
  f.alloc(W, 1000);
  f.alloc(O, 2000);
  for (int k = 0; k < 4; ++k) {
    const std::uint64_t x = 0x5000 + 0x1000 * static_cast<std::uint64_t>(k % 2);
    const std::uint64_t previous_x = 0x5000 + 0x1000 * static_cast<std::uint64_t>((k + 1) % 2);
    f.mark();
    f.alloc(A, 100);
    std::vector<std::uint64_t> seqs;
    std::uint64_t memset_seq = 0;
    seqs.push_back(f.launch({W, A}));
    f.alloc(T, 50);
    seqs.push_back(k > 0 ? f.launch({A, T, previous_x}) : f.launch({A, T}));
    f.free(T);
    if (k > 0) f.free(previous_x);
    seqs.push_back(f.launch({W}));
    if (graph && k == 2) f.graph_launch();
    memset_seq = f.memset(A);
    seqs.push_back(f.launch({A, O}));
    f.alloc(x, 70);
    seqs.push_back(f.launch({x}));
    f.free(A);
    if (gpu_times) {
      for (const std::uint64_t s : seqs) f.gpu_time(s, 500, mt::GpuWorkKind::kernel);
      f.gpu_time(memset_seq, 500, mt::GpuWorkKind::memset);
    }
  }
  return f;
}

const ms::Buffer& by_size(const ms::Iteration& it, std::uint64_t size) {
  for (const ms::Buffer& b : it.buffers) {
    if (b.size == size) return b;
  }
  FAIL("no buffer of " << size << " bytes");
  return it.buffers.front();
}

std::vector<std::uint32_t> ops(const ms::Buffer& b) {
  std::vector<std::uint32_t> list;
  for (const ms::Access& a : b.accesses) list.push_back(a.op);
  return list;
}

}  // namespace

TEST_CASE("a training iteration becomes ops, buffers and accesses", "[swapper][trace]") {
  const Feed f = training();
  const mt::Iterations its = mt::find_iterations(f.model);
  const ms::TraceInput in = ms::to_swap_input(f.model, its);
  REQUIRE(ms::validate(in.iteration).empty());
  CHECK(in.iteration_index == 1);  // iteration 0 differs (no X from before): warm-up
  CHECK_FALSE(in.pseudo_ops);
  const ms::Iteration& it = in.iteration;
  REQUIRE(it.ops.size() == 6);
  CHECK(it.ops[3].kind == ms::OpKind::memset);
  CHECK(it.buffers.size() == 5);  // W, O, A, T, this iteration's X

  const ms::Buffer& w = by_size(it, 1000);
  CHECK(w.persistent);
  CHECK(ops(w) == std::vector<std::uint32_t>{0, 2});
  const ms::Buffer& o = by_size(it, 2000);
  CHECK(o.persistent);
  CHECK(ops(o) == std::vector<std::uint32_t>{4});
  const ms::Buffer& a = by_size(it, 100);
  CHECK_FALSE(a.persistent);
  CHECK(a.alloc_before_op == 0);
  CHECK(a.free_after_op == 5);
  CHECK(ops(a) == std::vector<std::uint32_t>{0, 1, 3, 4});
  CHECK(a.accesses[2].mode == ms::AccessMode::write);  // the memset
  const ms::Buffer& t = by_size(it, 50);
  CHECK(t.alloc_before_op == 1);
  CHECK(t.free_after_op == 1);
  const ms::Buffer& x = by_size(it, 70);
  CHECK(x.crosses_iteration());
  CHECK(x.alloc_before_op == 5);
  CHECK(x.free_after_op == 1);
  CHECK(ops(x) == std::vector<std::uint32_t>{1, 5});  // K5 here, K2 of the next iteration

  // Host-time gaps between consecutive ops: K1 +2 events, K2 +3, K3 +1, memset +1, K4 +2, K5 +4.
  std::vector<std::uint64_t> durations;
  for (const ms::Op& op : it.ops) durations.push_back(op.duration_ns);
  CHECK(in.compute == ms::ComputeModel::host);
  CHECK(durations == std::vector<std::uint64_t>{2000, 3000, 1000, 1000, 2000, 4000});

  const std::vector<ms::Gap> gaps = ms::find_gaps(it);
  CHECK(gaps.size() == 5);  // A 1->3, W 0->2 and 2->6, O 4->10, X 5->7
}

TEST_CASE("op durations: GPU times, and the bytes model", "[swapper][trace]") {
  const Feed timed = training(true);
  const ms::TraceInput gpu = ms::to_swap_input(timed.model, mt::find_iterations(timed.model));
  CHECK(gpu.compute == ms::ComputeModel::gpu);
  CHECK(gpu.gpu_timed_ops == 6);
  for (const ms::Op& op : gpu.iteration.ops) CHECK(op.duration_ns == 500);

  const Feed f = training();
  ms::TraceInputOptions options;
  options.compute = ms::ComputeModel::bytes;
  options.bytes_per_ns = 1.0;
  options.min_op_ns = 80;
  const ms::TraceInput bytes = ms::to_swap_input(f.model, mt::find_iterations(f.model), options);
  std::vector<std::uint64_t> durations;
  for (const ms::Op& op : bytes.iteration.ops) durations.push_back(op.duration_ns);
  // K1: W + A; K2: A + T + X; K3: W; memset: its 100 bytes; K4: A + O; K5: X (70: the 80 floor).
  CHECK(durations == std::vector<std::uint64_t>{1100, 220, 1000, 100, 2100, 80});
  CHECK_FALSE(bytes.notes.empty());
}

TEST_CASE("an input without launches gets one op per allocation and free", "[swapper][trace]") {
  Feed f;
  f.alloc(W, 1000);
  for (int k = 0; k < 3; ++k) {
    f.mark();
    f.alloc(A, 100);
    f.alloc(T, 50);
    f.free(T);
    f.free(A);
  }
  const ms::TraceInput in = ms::to_swap_input(f.model, mt::find_iterations(f.model));
  CHECK(in.pseudo_ops);
  CHECK(in.compute == ms::ComputeModel::bytes);
  REQUIRE(ms::validate(in.iteration).empty());
  CHECK(in.iteration.ops.size() == 4);
  const ms::Buffer& a = by_size(in.iteration, 100);
  CHECK(ops(a) == std::vector<std::uint32_t>{0, 3});    // written at its allocation, read at its free
  CHECK(by_size(in.iteration, 1000).accesses.empty());  // a weight: when it is used is unknown
  const std::vector<ms::Gap> gaps = ms::find_gaps(in.iteration);
  REQUIRE(gaps.size() == 1);
  CHECK(gaps[0].from_op == 0);
  CHECK(gaps[0].to_op == 3);
  CHECK_FALSE(in.notes.empty());
}

TEST_CASE("a graph launch makes nothing swappable; bad iteration numbers are refused", "[swapper][trace]") {
  const Feed f = training(false, true);
  ms::TraceInputOptions options;
  options.iteration = 2;
  const ms::TraceInput in = ms::to_swap_input(f.model, mt::find_iterations(f.model), options);
  CHECK(in.iteration_index == 2);
  CHECK(in.unswappable_buffers == in.iteration.buffers.size());
  CHECK(ms::find_gaps(in.iteration).empty());

  options.iteration = 99;
  CHECK_THROWS_AS(ms::to_swap_input(f.model, mt::find_iterations(f.model), options), std::invalid_argument);
  const mt::TraceModel empty;
  CHECK_THROWS_AS(ms::to_swap_input(empty, mt::find_iterations(empty)), std::invalid_argument);
}
