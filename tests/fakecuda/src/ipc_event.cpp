// The shared page of an interprocess event and its counters.
#include "ipc_event.hpp"

#include "shareable.hpp"
#include "streams.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace fakecuda {

// The page's layout, the same in every process that maps it. The counters are only touched
// through __atomic builtins, which are address-free on this platform.
struct IpcEventPage::Words {
  char magic[8];
  std::uint64_t nonce;
  std::uint64_t issued;
  std::uint64_t completed;
};

namespace {

constexpr char kEventPageMagic[8] = {'f', 'c', 'e', 'v', 'e', 'n', 't', '1'};
// How often a waiter looks at a counter another process may advance: a GPU polls its semaphore
// memory much the same way.
constexpr std::chrono::microseconds kPollInterval{50};

void raise_to(std::uint64_t* word, std::uint64_t value) {
  std::uint64_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  while (seen < value && !__atomic_compare_exchange_n(word, &seen, value, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {}
}

void wait_until_at_least(const std::uint64_t* word, std::uint64_t value) {
  while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < value) {
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace

std::shared_ptr<IpcEventPage> IpcEventPage::create() {
  const int fd = memfd_create("fakecuda-event", MFD_CLOEXEC);
  if (fd < 0) {
    return nullptr;
  }
  if (ftruncate(fd, static_cast<off_t>(sizeof(Words))) != 0) {
    close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, sizeof(Words), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  auto* words = static_cast<Words*>(p);
  std::memcpy(words->magic, kEventPageMagic, sizeof words->magic);
  words->nonce = random_nonce();
  return std::shared_ptr<IpcEventPage>(new IpcEventPage(fd, words));
}

std::shared_ptr<IpcEventPage> IpcEventPage::open(int pid, int fd, std::uint64_t nonce) {
  const int own = open_foreign_fd(pid, fd);
  if (own < 0) {
    return nullptr;
  }
  void* p = mmap(nullptr, sizeof(Words), PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
  close(own);
  if (p == MAP_FAILED) {
    return nullptr;
  }
  auto* words = static_cast<Words*>(p);
  if (std::memcmp(words->magic, kEventPageMagic, sizeof words->magic) != 0 || words->nonce != nonce) {
    munmap(p, sizeof(Words));
    return nullptr;
  }
  return std::shared_ptr<IpcEventPage>(new IpcEventPage(-1, words));
}

IpcEventPage::~IpcEventPage() {
  munmap(words_, sizeof(Words));
  if (fd_ >= 0) {
    close(fd_);
  }
}

std::uint64_t IpcEventPage::nonce() const { return words_->nonce; }

void IpcEventPage::record(const std::shared_ptr<Stream>& stream) {
  const std::uint64_t number = __atomic_add_fetch(&words_->issued, 1, __ATOMIC_ACQ_REL);
  // The operation keeps the page mapped until it ran, even if the event is destroyed meanwhile.
  enqueue(stream, [page = shared_from_this(), number] { raise_to(&page->words_->completed, number); });
}

bool IpcEventPage::complete_now() const {
  const std::uint64_t issued = __atomic_load_n(&words_->issued, __ATOMIC_ACQUIRE);
  return __atomic_load_n(&words_->completed, __ATOMIC_ACQUIRE) >= issued;
}

void IpcEventPage::wait_for_issued() const {
  wait_until_at_least(&words_->completed, __atomic_load_n(&words_->issued, __ATOMIC_ACQUIRE));
}

void IpcEventPage::make_stream_wait(const std::shared_ptr<Stream>& stream) const {
  const std::uint64_t target = __atomic_load_n(&words_->issued, __ATOMIC_ACQUIRE);
  enqueue(stream, [page = shared_from_this(), target] { wait_until_at_least(&page->words_->completed, target); });
}

}  // namespace fakecuda
