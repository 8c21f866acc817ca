// A job's ranks (issue 36): four processes on fakecuda replaying a real training log
// (tests/fixtures/traces/alexnet.log through tests/apps/replay), started by launch_ranks — a
// stand-in for torchrun that asks the driver for its device count in its own process, then
// gives each rank RANK, LOCAL_RANK and WORLD_SIZE. Rank 3 holds an extra 4 MiB buffer every step
// (as a pipeline stage would); rank 2 is killed (SIGKILL) mid-run. What must hold: memtool in
// front of the launcher gets every rank its own trace and the launcher none, and passes the
// launcher's exit status through; `memtool report` of the ranks gives each rank exactly the
// figures `memtool report` of its trace alone gives, the spread (rank 3 is 4 MiB above the
// others, and that allocation is named), the rank nearest the limit, and says rank 2's trace is
// cut; the Perfetto export has a process track per rank whose live bytes peak where each rank's
// report says and whose aligned iteration starts at one timestamp in all ranks; the HTML export
// has a chart per rank. `memtool run` in front of the launcher, and memtool behind it, too.
#include <catch2/catch.hpp>

#if MEMTOOL_HAVE_FAKECUDA && defined(REPLAY_TRAIN) && defined(LAUNCH_RANKS)

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <regex>

#include "json_files.hpp"
#include "process.hpp"

namespace {

using memtool::testing::Outcome;
using memtool::testing::read_json;
using memtool::testing::run;
using memtool::testing::slurp;
using memtool::testing::u;
using Env = std::map<std::string, std::string>;
namespace fs = std::filesystem;

constexpr std::uint64_t kExtra = 4u << 20;  // rank 3's extra buffer per step
const std::string kLog = std::string(REPLAY_FIXTURES_DIR) + "/traces/alexnet.log";

Env fakecuda() { return {{"LD_LIBRARY_PATH", FAKECUDA_DIR}}; }

nlohmann::json report_json(const std::vector<std::string>& inputs, const std::string& dir,
                           std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{MEMTOOL_TOOL, "report", "--format", "json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  const Outcome r = run(argv, {}, dir);
  INFO(r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

// --- a minimal protobuf walk, enough to read the Perfetto export back -------------------------

struct Field {
  std::uint32_t number = 0;
  std::uint64_t varint = 0;
  std::string_view bytes;  // length-delimited
  bool delimited = false;
};

std::uint64_t read_varint(std::string_view data, std::size_t& at) {
  std::uint64_t value = 0;
  for (int shift = 0; at < data.size(); shift += 7) {
    const auto byte = static_cast<std::uint8_t>(data[at++]);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  return value;
}

std::vector<Field> fields(std::string_view message) {
  std::vector<Field> out;
  std::size_t at = 0;
  while (at < message.size()) {
    const std::uint64_t key = read_varint(message, at);
    Field f;
    f.number = static_cast<std::uint32_t>(key >> 3);
    switch (key & 7) {
      case 0:
        f.varint = read_varint(message, at);
        break;
      case 1:
        at += 8;
        break;
      case 5:
        at += 4;
        break;
      case 2: {
        const std::uint64_t length = read_varint(message, at);
        f.bytes = message.substr(at, length);
        f.delimited = true;
        at += length;
        break;
      }
      default:
        FAIL("unexpected wire type");
        return out;
    }
    out.push_back(f);
  }
  return out;
}

std::optional<Field> first(std::string_view message, std::uint32_t number) {
  for (const Field& f : fields(message))
    if (f.number == number) return f;
  return std::nullopt;
}

// Per packet sequence (one per rank): the process, the live-bytes peak and slice starts by name.
struct RankTracks {
  std::uint64_t pid = 0;
  std::string process_name;
  std::uint64_t live_track = 0;
  std::int64_t live_peak = 0;
  std::map<std::uint64_t, std::string> names;             // interned event names
  std::map<std::string, std::uint64_t> slice_begin_time;  // first begin of each slice name
};

std::map<std::uint64_t, RankTracks> read_perfetto(const std::string& path) {
  const std::string data = slurp(path);
  std::map<std::uint64_t, RankTracks> sequences;
  std::map<std::uint64_t, std::uint64_t> live_tracks;  // uuid -> sequence
  for (const Field& packet_field : fields(data)) {
    REQUIRE(packet_field.number == 1);  // Trace.packet
    const std::string_view packet = packet_field.bytes;
    const std::uint64_t sequence = first(packet, 10)->varint;
    RankTracks& tracks = sequences[sequence];
    if (const auto descriptor = first(packet, 60)) {
      if (const auto process = first(descriptor->bytes, 3)) {
        tracks.pid = first(process->bytes, 1)->varint;
        tracks.process_name = std::string(first(process->bytes, 6)->bytes);
      }
      const auto name = first(descriptor->bytes, 2);
      if (name && name->bytes == "live bytes") {
        tracks.live_track = first(descriptor->bytes, 1)->varint;
        live_tracks[tracks.live_track] = sequence;
      }
    }
    if (const auto interned = first(packet, 12)) {
      for (const Field& entry : fields(interned->bytes)) {
        if (entry.number == 2) tracks.names[first(entry.bytes, 1)->varint] = std::string(first(entry.bytes, 2)->bytes);
      }
    }
    if (const auto event = first(packet, 11)) {
      const std::uint64_t type = first(event->bytes, 9)->varint;
      const std::uint64_t track = first(event->bytes, 11)->varint;
      if (type == 4 && track == tracks.live_track) {
        tracks.live_peak = std::max(tracks.live_peak, static_cast<std::int64_t>(first(event->bytes, 30)->varint));
      }
      if (type == 1) {
        if (const auto iid = first(event->bytes, 10)) {
          tracks.slice_begin_time.try_emplace(tracks.names[iid->varint], first(packet, 8)->varint);
        }
      }
    }
  }
  return sequences;
}

}  // namespace

TEST_CASE("ranks: memtool record in front of a launcher, report and export of the job", "[ranks]") {
  const std::string dir = memtool::testing::fresh_work_dir("ranks", "record");
  const Outcome recorded = run(
      {MEMTOOL_TOOL, "record", "--no-framework-env", "-o", dir + "/job.trace", "--", LAUNCH_RANKS, "4", REPLAY_TRAIN,
       "--log", kLog, "--steps", "5", "--extra-on-rank", "3:" + std::to_string(kExtra), "--kill-on-rank", "2:3"},
      fakecuda(), dir);
  INFO(recorded.err);
  CHECK(recorded.status == 128 + 9);            // the launcher's status: rank 2 was killed
  CHECK_FALSE(fs::exists(dir + "/job.trace"));  // the launcher asked the driver for devices, and wrote nothing
  for (int rank = 0; rank < 4; ++rank) REQUIRE(fs::exists(dir + "/job.rank" + std::to_string(rank) + ".trace"));
  CHECK(recorded.err.find("memtool: rank 2: " + dir + "/job.rank2.trace") != std::string::npos);
  CHECK(recorded.err.find("the trace is cut short") != std::string::npos);
  CHECK(recorded.err.find("memtool: next: memtool report '" + dir + "/job.rank%r.trace'") != std::string::npos);

  // Each rank's own report, then the job's.
  std::map<int, nlohmann::json> own;
  for (int rank = 0; rank < 4; ++rank)
    own[rank] = report_json({dir + "/job.rank" + std::to_string(rank) + ".trace"}, dir);
  const nlohmann::json job = report_json({dir + "/job.rank%r.trace"}, dir, {"--capacity", "1G"});
  REQUIRE(job["ranks"].size() == 4);
  for (int rank = 0; rank < 4; ++rank) {
    const nlohmann::json& row = job["ranks"][rank];
    INFO("rank " << rank);
    CHECK(row["rank"] == rank);
    CHECK(row["status"] == (rank == 2 ? "cut" : "whole"));
    for (const char* key : {"iteration_period_allocs", "iteration_period", "steady_state_peak_live_bytes",
                            "peak_live_bytes", "persistent_bytes"}) {
      CHECK(row[key] == own[rank][key]);
    }
    CHECK(row["largest_at_peak"][0]["size"] == own[rank]["largest_at_peak"][0]["size"]);
    if (rank != 2) CHECK(u(row, "pool_bytes") >= u(row, "lower_bound_bytes"));  // rank 2 may have no whole steady step
  }
  CHECK(u(own[3], "iteration_period_allocs") == u(own[0], "iteration_period_allocs") + 1);
  CHECK(u(own[3], "steady_state_peak_live_bytes") == u(own[0], "steady_state_peak_live_bytes") + kExtra);
  CHECK(job["compared_ranks"] == nlohmann::json::array({0, 1, 3}));
  CHECK(job["spread"]["highest_peak_rank"] == 3);
  CHECK(u(job["spread"], "difference_bytes") == kExtra);
  REQUIRE(job["differences"].size() == 1);
  CHECK(job["differences"][0]["size"] == kExtra);
  CHECK(job["differences"][0]["where"] == "per_step");
  CHECK(job["differences"][0]["counts"] == nlohmann::json({{"0", 0}, {"1", 0}, {"3", 1}}));
  CHECK(job["nearest_limit"]["rank"] == 3);
  CHECK(job["nearest_limit"]["headroom_bytes"] ==
        (std::int64_t{1} << 30) - static_cast<std::int64_t>(u(own[3], "peak_live_bytes")));

  const Outcome text = run({MEMTOOL_TOOL, "report", dir + "/job.rank0.trace", dir + "/job.rank1.trace",
                            dir + "/job.rank2.trace", dir + "/job.rank3.trace"},
                           {}, dir);
  INFO(text.out);
  CHECK(text.status == 0);
  CHECK(text.out.find("rank 2: its trace stops without an end record") != std::string::npos);
  CHECK(std::regex_search(text.out, std::regex("4\\.00 MiB per step  : rank 3: 1; ranks 0, 1: 0")));
  CHECK(text.out.find("Nearest its device's limit: rank 3") != std::string::npos);

  // Perfetto: a process track per rank, live bytes peaking where each rank's report says, the
  // aligned iteration starting at one timestamp everywhere.
  const Outcome perfetto = run(
      {MEMTOOL_TOOL, "export", "--format", "perfetto", "-o", dir + "/job.pftrace", dir + "/job.rank%r.trace"}, {}, dir);
  INFO(perfetto.err);
  REQUIRE(perfetto.status == 0);
  const auto sequences = read_perfetto(dir + "/job.pftrace");
  REQUIRE(sequences.size() == 4);
  std::optional<std::uint64_t> aligned_time;
  for (const auto& [sequence, tracks] : sequences) {
    const int rank = static_cast<int>(sequence) - 1;
    INFO("rank " << rank << ": " << tracks.process_name);
    CHECK(tracks.pid == sequence);
    CHECK(tracks.process_name.rfind("rank " + std::to_string(rank) + ": ", 0) == 0);
    CHECK(static_cast<std::uint64_t>(tracks.live_peak) == u(own[rank], "peak_live_bytes"));
    std::smatch match;
    if (!std::regex_search(tracks.process_name, match, std::regex("iteration ([0-9]+) starts"))) {
      // Only the killed rank may have lost its steps (SIGKILL loses up to the last second's records).
      CHECK(rank == 2);
      CHECK(tracks.process_name.find("no iteration found: not aligned") != std::string::npos);
      continue;
    }
    const auto begin = tracks.slice_begin_time.find("iteration " + match[1].str());
    std::string names;
    for (const auto& [name, time] : tracks.slice_begin_time) names += name + "|";
    INFO(names);
    REQUIRE(begin != tracks.slice_begin_time.end());
    if (!aligned_time) aligned_time = begin->second;
    CHECK(begin->second == *aligned_time);
  }

  const Outcome html =
      run({MEMTOOL_TOOL, "export", "--format", "html", "-o", dir + "/job.html", dir + "/job.rank%r.trace"}, {}, dir);
  REQUIRE(html.status == 0);
  const std::string page = slurp(dir + "/job.html");
  for (int rank = 0; rank < 4; ++rank)
    CHECK(page.find("id=\"live-chart-rank-" + std::to_string(rank) + "\"") != std::string::npos);
  CHECK(page.find("rank 2: its trace stops without an end record") != std::string::npos);

  const Outcome viz =
      run({MEMTOOL_TOOL, "export", "--format", "memory-viz", "-o", dir + "/job.pickle", dir + "/job.rank%r.trace"}, {},
          dir);
  CHECK(viz.status == 2);
  CHECK_FALSE(fs::exists(dir + "/job.pickle"));

  // A rank that left no file at all: the others' world size (4, in their traces) names it missing.
  fs::remove(dir + "/job.rank3.trace");
  const nlohmann::json without = report_json({dir + "/job.rank%r.trace"}, dir);
  REQUIRE(without["ranks"].size() == 4);
  CHECK(without["ranks"][3]["status"] == "missing");
  CHECK(without["ranks"][3]["trace"].is_null());
  CHECK(without["compared_ranks"] == nlohmann::json::array({0, 1}));
  CHECK(without["differences"].empty());
}

TEST_CASE("ranks: memtool run in front of a launcher, and memtool behind it", "[ranks]") {
  const std::string dir = memtool::testing::fresh_work_dir("ranks", "run");
  Env env = fakecuda();
  env["MEMTOOL_POOL_SYNC_PLANNING"] = "1";  // planned as soon as the step is found: served from the next one
  const Outcome ran = run({MEMTOOL_TOOL, "run", "--strategy", "pool", "--no-framework-env", "--summary",
                           dir + "/s.json", "--trace", dir + "/t.trace", "--", LAUNCH_RANKS, "2", REPLAY_TRAIN, "--log",
                           kLog, "--steps", "5", "--extra-on-rank", "1:" + std::to_string(kExtra)},
                          env, dir);
  INFO(ran.err);
  CHECK(ran.status == 0);
  // The launcher loaded the driver (and so libmemtool.so's engine) but did no work on the GPU: no
  // summary or trace of its own (it has no rank, so it would have written s.json and t.trace).
  CHECK(ran.err.find("launch_ranks: 1 devices") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/s.json"));
  CHECK_FALSE(fs::exists(dir + "/t.trace"));
  CHECK(ran.err.find("memtool: rank 0 (" + dir + "/s.rank0.json):") != std::string::npos);
  CHECK(ran.err.find("memtool: rank 1 (" + dir + "/s.rank1.json):") != std::string::npos);
  CHECK(ran.err.find("memtool: next: memtool report '" + dir + "/t.rank%r.trace' --summary '" + dir +
                     "/s.rank%r.json'") != std::string::npos);
  const nlohmann::json job = report_json({dir + "/t.rank%r.trace"}, dir, {"--summary", dir + "/s.rank%r.json"});
  REQUIRE(job["ranks"].size() == 2);
  for (int rank = 0; rank < 2; ++rank) {
    const nlohmann::json& row = job["ranks"][rank];
    const nlohmann::json summary = read_json(dir + "/s.rank" + std::to_string(rank) + ".json");
    CHECK(row["strategy"] == "pool");
    CHECK(row["summary"] == dir + "/s.rank" + std::to_string(rank) + ".json");
    CHECK(row["pool_bytes"] == summary["pool_bytes"]);
    CHECK(row["device_peak_bytes"] == summary["peak_device_bytes_with_pool"]);
    CHECK(u(summary, "iterations_planned") > 0);
  }
  CHECK(job["spread"]["highest_peak_rank"] == 1);

  // Behind the launcher: each rank's memtool writes and speaks for its own file.
  const std::string behind = memtool::testing::fresh_work_dir("ranks", "behind");
  const Outcome b = run({LAUNCH_RANKS, "--no-driver", "2", MEMTOOL_TOOL, "record", "--no-framework-env", "-o",
                         behind + "/b.trace", "--", REPLAY_TRAIN, "--log", kLog, "--steps", "3"},
                        fakecuda(), behind);
  INFO(b.err);
  CHECK(b.status == 0);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string file = behind + "/b.rank" + std::to_string(rank) + ".trace";
    CHECK(fs::exists(file));
    CHECK(b.err.find("memtool: trace written to " + file) != std::string::npos);
  }
  CHECK_FALSE(fs::exists(behind + "/b.trace"));
}

#endif
