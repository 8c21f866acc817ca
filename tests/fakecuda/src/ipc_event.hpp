// Events shared between processes (cuIpcGetEventHandle / cuIpcOpenEventHandle). An interprocess
// event carries a page of shared memory with two counters: records issued and records completed.
// cuEventRecord in either process issues the next number and its stream marks it completed when it
// gets there; cuEventQuery, cuEventSynchronize and cuStreamWaitEvent wait for the number that was
// last issued when they were called, as with a local event's latest record.
#pragma once

#include "cuda_abi.hpp"

#include <cstdint>
#include <memory>

namespace fakecuda {

class Stream;

class IpcEventPage : public std::enable_shared_from_this<IpcEventPage> {
 public:
  // A new page for an event of this process; nullptr if it cannot be made.
  static std::shared_ptr<IpcEventPage> create();
  // The page of another process's event named by its handle; nullptr if it is gone.
  static std::shared_ptr<IpcEventPage> open(int pid, int fd, std::uint64_t nonce);
  ~IpcEventPage();
  IpcEventPage(const IpcEventPage&) = delete;
  IpcEventPage& operator=(const IpcEventPage&) = delete;

  int fd() const { return fd_; }
  std::uint64_t nonce() const;
  // cuEventRecord on `stream`: the next record number, completed when the stream gets there.
  void record(const std::shared_ptr<Stream>& stream);
  // Whether every record issued before now has completed.
  bool complete_now() const;
  // Blocks until what was issued at the call has completed (cuEventSynchronize).
  void wait_for_issued() const;
  // Makes `stream` wait, in stream order, for what was issued at the call (cuStreamWaitEvent).
  void make_stream_wait(const std::shared_ptr<Stream>& stream) const;

 private:
  struct Words;
  IpcEventPage(int fd, Words* words) : fd_(fd), words_(words) {}
  int fd_ = -1;
  Words* words_ = nullptr;
};

}  // namespace fakecuda
