// A test sink: keeps every event the recorder emits, in order, as a kind and its fields.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "memtool/interpose/event_sink.hpp"

namespace memtool::interpose::testing {

struct Launch {
  trace::LaunchEvent event;
  std::vector<std::uint64_t> touched;  // copied: the event's span points into recorder memory
};

using Recorded =
    std::variant<trace::AllocEvent, trace::FreeEvent, Launch, trace::GraphLaunchEvent, trace::CopyEvent,
                 trace::MemsetEvent, trace::SyncEvent, trace::IterationMarkEvent, trace::StreamCreateEvent>;

class CollectingSink final : public EventSink {
 public:
  struct Shared {
    std::vector<Recorded> events;
    std::vector<std::string> strings;
    std::vector<std::vector<trace::StackFrame>> stacks;
    std::vector<trace::ModuleMapping> modules;
    std::vector<trace::FailedFreeEvent> failed_frees;
    std::vector<trace::GraphNote> graph_notes;  // notes, not events: kept apart as failed frees are
    bool closed = false;
    bool abandoned = false;
    bool throw_on_write = false;
  };
  explicit CollectingSink(Shared& shared) : s_(shared) {}

  trace::StringId intern(std::string_view text) override {
    for (std::size_t i = 0; i < s_.strings.size(); ++i) {
      if (s_.strings[i] == text) return trace::StringId{static_cast<std::uint32_t>(i)};
    }
    s_.strings.emplace_back(text);
    return trace::StringId{static_cast<std::uint32_t>(s_.strings.size() - 1)};
  }
  trace::StackId intern_stack(std::span<const trace::StackFrame> frames) override {
    s_.stacks.emplace_back(frames.begin(), frames.end());
    return trace::StackId{static_cast<std::uint32_t>(s_.stacks.size() - 1)};
  }
  void metadata(std::string_view, std::string_view) override {}
  void module(const trace::ModuleMapping& module) override { s_.modules.push_back(module); }

#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  void write(const trace::Type& e) override { keep(e); }
#include "memtool/trace/events.def"

  void close() override { s_.closed = true; }
  void abandon_after_fork() override { s_.abandoned = true; }
  bool failed() const override { return false; }

 private:
  template <class Event>
  void keep(const Event& e) {
    add(e);
  }
  void keep(const trace::LaunchEvent& e) { add(Launch{e, {e.touched.begin(), e.touched.end()}}); }
  void keep(const trace::FailedFreeEvent& e) { s_.failed_frees.push_back(e); }
  void keep(const trace::GraphNote& e) { s_.graph_notes.push_back(e); }
  void add(Recorded event) {
    if (s_.throw_on_write) throw std::runtime_error("disk on fire");
    s_.events.push_back(std::move(event));
  }
  Shared& s_;
};

}  // namespace memtool::interpose::testing
