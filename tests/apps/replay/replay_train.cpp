// replay_train: replays a recorded PyTorch training run (replay_log.hpp) through the driver API,
// resolved as cudart resolves it (dlopen + cuGetProcAddress_v2): every allocation and free as
// cuMemAlloc/cuMemFree (or cuMemAllocAsync/cuMemFreeAsync on the compute stream), every operator
// as one launch of a kernel of its own name (replay_op_<n>) whose arguments are the buffers it
// reads and writes. The kernels check that what an operator reads is what its last writer left
// (replay_kernels.cpp), so any memory handed out twice shows up as corrupted words. With --table,
// an operator's buffers (all, or only those it writes) reach its kernel only through a pointer
// table in device memory, uploaded with cuMemcpyHtoDAsync before the launch, as a grouped GEMM's
// pointer arrays are: the argument scan sees the table, not the buffers.
//
// stdout, one line per step:   step 3 allocs 180 launches 196 corrupted 0
// Exit status: 0; 3 when any word was corrupted; 2 for a bad command line or log; 1 when a
// driver call fails (its name on stderr).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../common/arguments.hpp"
#include "../common/driver_api.hpp"
#include "../common/session.hpp"
#include "replay_abi.h"
#include "replay_log.hpp"

namespace {

struct Options {
  std::string log;
  std::string module;
  long steps = 0;  // 0: the log's own
  bool async = false;
  bool default_stream = false;
  int threads = 1;
  bool mark = false;
  bool self_test_corrupt = false;  // overwrite a word the next operator reads (the checker must see it)
  int cuda_version = 12000;
  double compute_gbps = 0;  // 0: kernels take only the time of their checks
  bool step_times = false;
  // A job's ranks that differ (--extra-on-rank, --kill-on-rank): this process's rank is RANK,
  // else LOCAL_RANK, as torchrun sets them.
  long extra_rank = -1;
  std::uint64_t extra_bytes = 0;  // every step of that rank also holds a buffer this large
  long kill_rank = -1;
  long kill_step = -1;  // that rank kills itself (SIGKILL) as this step starts
  enum class Table : std::uint8_t { none, all, written } table = Table::none;
  bool table_pageable = false;  // the table's host side in ordinary memory (default: pinned)
  bool no_launches = false;     // allocations and frees only: what memtool sees without launch information
};

[[noreturn]] void usage(int status) {
  std::fprintf(
      status == 0 ? stdout : stderr,
      "usage: replay_train --log FILE [--steps N] [--async] [--default-stream] [--threads T]\n"
      "                    [--mark] [--module PATH] [--cuda-version V] [--compute-gbps G]\n"
      "  --log FILE        a recorded training log (tests/fixtures/traces/*.log)\n"
      "  --steps N         steps to run (default: the log's); past the log its last step repeats\n"
      "  --async           cuMemAllocAsync / cuMemFreeAsync on the compute stream\n"
      "  --default-stream  run on the legacy default stream instead of a created one\n"
      "  --threads T       step s runs on thread s %% T (1..16; default 1)\n"
      "  --mark            call memtool_iteration_mark() at each step's start, when preloaded\n"
      "  --module PATH     the kernels' module image (default replay_kernels.fakecuda beside the program)\n"
      "  --compute-gbps G  each kernel takes the bytes it touches at G GB/s, at least 5 us (a GPU's run\n"
      "                    time: the kernel's worker sleeps; default: only the time of its checks)\n"
      "  --step-times      after each step's line, 'step-ms S MS': its wall time, synchronised\n"
      "  --extra-on-rank R:BYTES  where this process is rank R (RANK, else LOCAL_RANK), every step also\n"
      "                    holds a buffer of BYTES from its start to its end (a pipeline stage's extra)\n"
      "  --kill-on-rank R:S       where this process is rank R, it kills itself with SIGKILL as step S starts\n"
      "  --table WHAT      all: every buffer an operator touches reaches its kernel only through a\n"
      "                    pointer table in device memory (cuMemcpyHtoDAsync before the launch);\n"
      "                    written: only those it writes\n"
      "  --table-pageable  the table's host side in ordinary memory (default: pinned)\n"
      "  --no-launches     allocations and frees only: no operator is launched (nothing is checked; what\n"
      "                    memtool sees of a program whose launches it cannot read)\n");
  std::exit(status);
}

// "R:N" of --extra-on-rank and --kill-on-rank.
std::pair<long, long> rank_pair(apps::Arguments& args) {
  const char* text = args.value();
  const char* colon = std::strchr(text, ':');
  if (colon == nullptr) args.fail("%s wants RANK:NUMBER, got '%s'", args.option(), text);
  const std::string rank(text, colon);
  return {args.integer_of(rank.c_str(), 0, 1 << 20), args.integer_of(colon + 1, 0, 1LL << 40)};
}

// This process's rank as torchrun sets it: RANK, else LOCAL_RANK; -1 outside a job.
long process_rank() {
  for (const char* name : {"RANK", "LOCAL_RANK"}) {
    const char* text = std::getenv(name);
    if (text != nullptr && *text != '\0') return std::strtol(text, nullptr, 10);
  }
  return -1;
}

Options parse_options(int argc, char** argv) {
  Options o;
  apps::Arguments args("replay_train", argc, argv);
  while (args.next()) {
    if (args.is("--help"))
      usage(0);
    else if (args.is("--log"))
      o.log = args.value();
    else if (args.is("--module"))
      o.module = args.value();
    else if (args.is("--steps"))
      o.steps = static_cast<long>(args.integer(1, 1000000));
    else if (args.is("--async"))
      o.async = true;
    else if (args.is("--default-stream"))
      o.default_stream = true;
    else if (args.is("--threads"))
      o.threads = static_cast<int>(args.integer(1, 16));
    else if (args.is("--mark"))
      o.mark = true;
    else if (args.is("--step-times"))
      o.step_times = true;
    else if (args.is("--extra-on-rank")) {
      const auto [rank, bytes] = rank_pair(args);
      o.extra_rank = rank;
      o.extra_bytes = static_cast<std::uint64_t>(bytes);
    } else if (args.is("--kill-on-rank")) {
      const auto [rank, step] = rank_pair(args);
      o.kill_rank = rank;
      o.kill_step = step;
    } else if (args.is("--table-pageable"))
      o.table_pageable = true;
    else if (args.is("--table"))
      o.table = args.choice<Options::Table>({{"all", Options::Table::all}, {"written", Options::Table::written}});
    else if (args.is("--no-launches"))
      o.no_launches = true;
    else if (args.is("--compute-gbps"))
      o.compute_gbps = static_cast<double>(args.integer(1, 100000));
    else if (args.is("--self-test-corrupt"))
      o.self_test_corrupt = true;
    else if (args.is("--cuda-version"))
      o.cuda_version = static_cast<int>(args.integer(1000, 99000));
    else {
      std::fprintf(stderr, "replay_train: unknown option '%s'\n", args.current());
      usage(2);
    }
  }
  if (o.log.empty()) {
    std::fprintf(stderr, "replay_train: --log is required\n");
    usage(2);
  }
  if (o.module.empty()) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    std::string dir = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string("./replay_train");
    o.module = dir.substr(0, dir.find_last_of('/') + 1) + "replay_kernels.fakecuda";
  }
  return o;
}

// The shared object a fake module image names (its second line).
std::string module_object(const std::vector<char>& image) {
  const std::string text(image.data());
  const auto first = text.find('\n');
  if (first == std::string::npos) return {};
  const auto second = text.find('\n', first + 1);
  return text.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
}

struct Buffer {
  CUdeviceptr ptr = 0;
  std::uint64_t size = 0;
  std::uint64_t instance = 0;  // a new one per allocation
  std::uint64_t version = 0;   // writes since the allocation
};

class Replayer {
 public:
  Replayer(const apps::DriverApi& api, const replay::Program& program, const Options& options)
      : api_(api), program_(program), options_(options), buffers_(program.slots) {
    if (program_.max_refs > REPLAY_MAX_REFS) {
      std::fprintf(stderr, "replay_train: an operator touches %llu buffers; the kernels take %u\n",
                   static_cast<unsigned long long>(program_.max_refs), REPLAY_MAX_REFS);
      std::exit(2);
    }
    if (program_.kernel_names.size() > REPLAY_KERNELS) {
      std::fprintf(stderr, "replay_train: %zu operator names; the module has %u kernels\n",
                   program_.kernel_names.size(), REPLAY_KERNELS);
      std::exit(2);
    }
    APP_CHECK(api_, cuInit(0));
    APP_CHECK(api_, cuDeviceGet(&device_, 0));
    APP_CHECK(api_, cuDevicePrimaryCtxRetain(&context_, device_));
    APP_CHECK(api_, cuCtxSetCurrent(context_));
    const std::vector<char> image = apps::read_module_image(options_.module);
    APP_CHECK(api_, cuModuleLoadData(&module_, image.data()));
    for (std::size_t k = 0; k < program_.kernel_names.size(); ++k) {
      CUfunction f = nullptr;
      const std::string name = "replay_op_" + std::to_string(k);
      APP_CHECK(api_, cuModuleGetFunction(&f, module_, name.c_str()));
      kernels_.push_back(f);
    }
    void* object = dlopen(module_object(image).c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (object != nullptr) {
      corrupted_ = reinterpret_cast<unsigned long long (*)()>(dlsym(object, "replay_corrupted_words"));
    }
    if (!options_.default_stream) APP_CHECK(api_, cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
    if (options_.table != Options::Table::none) {
      // One table in device memory, rewritten before every launch in stream order; its host
      // side one row per launch of the longest step, so no upload's source is reused before the
      // step's synchronisation.
      APP_CHECK(api_, cuMemAlloc_v2(&table_, kTableBytes));
      std::size_t launches = 0;
      for (const auto& step : program_.steps) {
        launches = std::max<std::size_t>(
            launches, static_cast<std::size_t>(std::count_if(step.begin(), step.end(), [](const replay::Op& op) {
              return op.kind == replay::Op::Kind::launch;
            })));
      }
      launches = std::max<std::size_t>(
          launches, static_cast<std::size_t>(
                        std::count_if(program_.setup.begin(), program_.setup.end(),
                                      [](const replay::Op& op) { return op.kind == replay::Op::Kind::launch; })));
      table_rows_ = std::max<std::size_t>(launches, 1);
      if (options_.table_pageable) {
        pageable_rows_.assign(table_rows_ * REPLAY_MAX_REFS, 0);
      } else {
        APP_CHECK(api_, cuMemAllocHost_v2(&pinned_rows_, table_rows_ * kTableBytes));
      }
    }
    if (options_.mark) mark_ = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "memtool_iteration_mark"));
  }

  ~Replayer() {
    synchronize();
    for (Buffer& b : buffers_) {
      if (b.ptr != 0) APP_CHECK(api_, cuMemFree_v2(b.ptr));
    }
    if (table_ != 0) APP_CHECK(api_, cuMemFree_v2(table_));
    if (pinned_rows_ != nullptr) APP_CHECK(api_, cuMemFreeHost(pinned_rows_));
    if (stream_ != nullptr) APP_CHECK(api_, cuStreamDestroy_v2(stream_));
    APP_CHECK(api_, cuModuleUnload(module_));
    APP_CHECK(api_, cuDevicePrimaryCtxRelease_v2(device_));
  }

  void bind_thread() { APP_CHECK(api_, cuCtxSetCurrent(context_)); }

  // Runs one step's events; returns the line to print.
  std::string run(std::uint32_t step_number, const std::vector<replay::Op>& ops) {
    if (mark_ != nullptr && step_number != kSetup) mark_();
    std::vector<replay_launch> launches;
    launches.reserve(ops.size());  // addresses stay valid until the kernels ran (synchronize)
    std::uint64_t allocs = 0;
    std::uint64_t launched = 0;
    CUdeviceptr extra = 0;
    if (step_number != kSetup && options_.extra_rank >= 0 && options_.extra_rank == process_rank()) {
      extra = allocate_raw(options_.extra_bytes);
      ++allocs;
    }
    for (const replay::Op& op : ops) {
      switch (op.kind) {
        case replay::Op::Kind::alloc:
          allocate(op);
          ++allocs;
          break;
        case replay::Op::Kind::free:
          release(op);
          break;
        case replay::Op::Kind::launch:
          if (options_.no_launches) break;
          launches.emplace_back();
          launch(op, step_number, launched++, launches.back());
          break;
      }
    }
    if (extra != 0) release_raw(extra);
    synchronize();
    const unsigned long long corrupted = corrupted_ != nullptr ? corrupted_() : 0;
    char line[160];
    std::snprintf(line, sizeof line, "step %u allocs %llu launches %llu corrupted %llu", step_number,
                  static_cast<unsigned long long>(allocs), static_cast<unsigned long long>(launched), corrupted);
    return line;
  }

  unsigned long long corrupted() const { return corrupted_ != nullptr ? corrupted_() : 0; }

  static constexpr std::uint32_t kSetup = ~0u;

 private:
  CUdeviceptr allocate_raw(std::uint64_t bytes) {
    CUdeviceptr ptr = 0;
    if (options_.async) {
      APP_CHECK(api_, cuMemAllocAsync(&ptr, bytes, stream_));
    } else {
      APP_CHECK(api_, cuMemAlloc_v2(&ptr, bytes));
    }
    return ptr;
  }

  void release_raw(CUdeviceptr ptr) {
    if (options_.async) {
      APP_CHECK(api_, cuMemFreeAsync(ptr, stream_));
    } else {
      APP_CHECK(api_, cuMemFree_v2(ptr));
    }
  }

  void allocate(const replay::Op& op) {
    Buffer& b = buffers_[op.slot];
    b.ptr = allocate_raw(op.size);
    b.size = op.size;
    b.instance = ++instances_;
    b.version = 0;
  }

  void release(const replay::Op& op) {
    Buffer& b = buffers_[op.slot];
    if (options_.async) {
      APP_CHECK(api_, cuMemFreeAsync(b.ptr, stream_));
    } else {
      APP_CHECK(api_, cuMemFree_v2(b.ptr));
    }
    b.ptr = 0;
  }

  void launch(const replay::Op& op, std::uint32_t step_number, std::uint64_t index, replay_launch& desc) {
    std::memset(&desc, 0, sizeof desc);
    desc.step = step_number;
    desc.op = index;
    CUdeviceptr pointers[REPLAY_MAX_REFS] = {};
    void* params[2 + REPLAY_MAX_REFS];
    replay_launch* desc_ptr = &desc;
    params[0] = &desc_ptr;
    CUdeviceptr table = 0;
    params[1] = &table;
    std::uint32_t n = 0;
    for (std::uint32_t i = 0; i < op.ref_count; ++i) {
      const replay::Ref& ref = program_.refs[op.first_ref + i];
      Buffer& b = buffers_[ref.slot];
      if (b.ptr == 0) continue;  // freed before the operator line (a temporary of the op)
      replay_ref& r = desc.refs[n];
      r.bytes = b.size;
      r.slot = ref.slot;
      if (ref.read && b.version != 0) r.check_tag = tag(b);
      if (ref.write) {
        ++b.version;
        r.fill_tag = tag(b);
      }
      pointers[n] = b.ptr;
      ++n;
    }
    desc.count = n;
    if (options_.compute_gbps > 0) {
      std::uint64_t bytes = 0;
      for (std::uint32_t i = 0; i < n; ++i) bytes += desc.refs[i].bytes;
      desc.compute_ns = std::max<std::uint64_t>(
          5'000, static_cast<std::uint64_t>(static_cast<double>(bytes) / options_.compute_gbps));
    }
    for (std::uint32_t i = 0; i < REPLAY_MAX_REFS; ++i) params[2 + i] = &pointers[i];
    if (options_.self_test_corrupt && step_number == 1 && !corrupted_once_) {
      for (std::uint32_t i = 0; i < n; ++i) {
        if (desc.refs[i].check_tag == 0 || desc.refs[i].bytes < 8) continue;
        synchronize();  // the write lands after every earlier use and before this operator
        const std::uint64_t garbage = 0x0BADC0DE0BADC0DEull;
        APP_CHECK(api_, cuMemcpyHtoD_v2(pointers[i], &garbage, sizeof garbage));
        corrupted_once_ = true;
        break;
      }
    }
    if (options_.table != Options::Table::none) {
      // The table holds every ref's address; the refs it stands for lose their own parameter.
      CUdeviceptr* row = options_.table_pageable
                             ? &pageable_rows_[table_row_ * REPLAY_MAX_REFS]
                             : static_cast<CUdeviceptr*>(pinned_rows_) + table_row_ * REPLAY_MAX_REFS;
      table_row_ = (table_row_ + 1) % table_rows_;
      for (std::uint32_t i = 0; i < REPLAY_MAX_REFS; ++i) row[i] = i < n ? pointers[i] : 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        if (options_.table == Options::Table::all || desc.refs[i].fill_tag != 0) {
          desc.via_table |= std::uint64_t{1} << i;
          pointers[i] = 0;
        }
      }
      APP_CHECK(api_, cuMemcpyHtoDAsync_v2(table_, row, kTableBytes, stream_));
      table = table_;
    }
    APP_CHECK(api_, cuLaunchKernel(kernels_[op.kernel], 1, 1, 1, 1, 1, 1, 0, stream_, params, nullptr));
  }

  static std::uint64_t tag(const Buffer& b) { return (b.instance << 24) | b.version; }
  static constexpr std::size_t kTableBytes = REPLAY_MAX_REFS * sizeof(CUdeviceptr);

  void synchronize() {
    if (stream_ != nullptr) {
      APP_CHECK(api_, cuStreamSynchronize(stream_));
    } else if (api_.cuCtxSynchronize_v2 != nullptr) {
      APP_CHECK(api_, cuCtxSynchronize_v2(context_));
    } else {
      APP_CHECK(api_, cuCtxSynchronize());
    }
  }

  const apps::DriverApi& api_;
  const replay::Program& program_;
  const Options& options_;
  std::vector<Buffer> buffers_;
  std::uint64_t instances_ = 0;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  CUstream stream_ = nullptr;
  std::vector<CUfunction> kernels_;
  unsigned long long (*corrupted_)() = nullptr;
  void (*mark_)() = nullptr;
  bool corrupted_once_ = false;
  CUdeviceptr table_ = 0;        // --table: the device side
  std::size_t table_rows_ = 0;   // host rows, one per launch of the longest step
  std::size_t table_row_ = 0;    // the next one
  void* pinned_rows_ = nullptr;  // pinned host rows
  std::vector<CUdeviceptr> pageable_rows_;
};

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  const replay::Program program = replay::parse_log(options.log);
  const apps::DriverApi api = apps::getproc_driver_api({options.cuda_version, false});
  const long steps = options.steps > 0 ? options.steps : static_cast<long>(program.steps.size());
  {
    Replayer replayer(api, program, options);
    (void)replayer.run(Replayer::kSetup, program.setup);
    // Step s runs on thread s % T, one at a time in step order (like a framework whose
    // backward pass runs on its own thread): the call order stays deterministic.
    std::mutex mutex;
    std::condition_variable turn;
    long next = 0;
    auto worker = [&](int id) {
      replayer.bind_thread();
      for (long s = id; s < steps; s += options.threads) {
        std::unique_lock lock(mutex);
        turn.wait(lock, [&] { return next == s; });
        const std::size_t logged = program.steps.size();
        const auto& ops =
            program.steps[static_cast<std::size_t>(s) < logged ? static_cast<std::size_t>(s) : logged - 1];
        if (options.kill_rank >= 0 && options.kill_rank == process_rank() && options.kill_step == s) {
          std::fflush(stdout);
          std::raise(SIGKILL);  // a rank lost mid-run, as kill -9 leaves it
        }
        const auto start = std::chrono::steady_clock::now();
        const std::string line = replayer.run(static_cast<std::uint32_t>(s), ops);
        std::printf("%s\n", line.c_str());
        if (options.step_times) {
          std::printf("step-ms %ld %.3f\n", s,
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
        std::fflush(stdout);
        ++next;
        turn.notify_all();
      }
    };
    if (options.threads == 1) {
      worker(0);
    } else {
      std::vector<std::thread> threads;
      for (int t = 0; t < options.threads; ++t) threads.emplace_back(worker, t);
      for (std::thread& t : threads) t.join();
    }
    if (replayer.corrupted() != 0) {
      std::fprintf(stderr, "replay_train: %llu corrupted words\n", replayer.corrupted());
      return 3;
    }
  }
  return 0;
}
