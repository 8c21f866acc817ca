// A line-based channel over a unix socket between a test and a second process it drives (the IPC
// peer): text commands and replies, and a file descriptor riding along a message (SCM_RIGHTS),
// which is how processes hand each other exported VMM and pool handles. Also the hex encoding of
// opaque handles for the command line.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace fakecuda_test {

// Sends one line (without its newline) and, when fd >= 0, that descriptor with it.
inline bool send_line(int sock, const std::string& line, int fd = -1) {
  std::string text = line + "\n";
  iovec iov{text.data(), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  return sendmsg(sock, &msg, 0) == static_cast<ssize_t>(text.size());
}

// Receives one line (one message); a descriptor that came with it lands in *fd (else -1).
inline bool receive_line(int sock, std::string& line, int* fd = nullptr) {
  char buffer[4096];
  iovec iov{buffer, sizeof buffer};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(sock, &msg, 0);
  if (n <= 0) {
    return false;
  }
  if (fd != nullptr) {
    *fd = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        std::memcpy(fd, CMSG_DATA(c), sizeof(int));
      }
    }
  }
  line.assign(buffer, static_cast<std::size_t>(n));
  while (!line.empty() && line.back() == '\n') {
    line.pop_back();
  }
  return true;
}

inline std::string to_hex(const void* data, std::size_t bytes) {
  static const char digits[] = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  for (std::size_t i = 0; i < bytes; ++i) {
    out.push_back(digits[p[i] >> 4]);
    out.push_back(digits[p[i] & 15]);
  }
  return out;
}

inline bool from_hex(const std::string& text, void* data, std::size_t bytes) {
  if (text.size() != 2 * bytes) {
    return false;
  }
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    unsigned value = 0;
    if (std::sscanf(text.c_str() + 2 * i, "%2x", &value) != 1) {
      return false;
    }
    p[i] = static_cast<unsigned char>(value);
  }
  return true;
}

// A second process running `program` with the channel's other end as its first argument, and
// `extra_env` added to (and FAKECUDA_* taken from) this process's environment.
class PeerProcess {
 public:
  PeerProcess(const std::string& program, const std::vector<std::string>& args,
              const std::vector<std::string>& extra_env) {
    int pair[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) != 0) {
      return;
    }
    sock_ = pair[0];
    fcntl(sock_, F_SETFD, FD_CLOEXEC);
    std::vector<std::string> env_strings = extra_env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string(*e).rfind("FAKECUDA_", 0) != 0) {
        env_strings.emplace_back(*e);
      }
    }
    std::vector<std::string> argv_strings{program, std::to_string(pair[1])};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, program.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) {
      pid_ = -1;
    }
    close(pair[1]);
  }
  ~PeerProcess() {
    quit();
    if (sock_ >= 0) close(sock_);
  }
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  bool running() const { return pid_ > 0 && sock_ >= 0; }
  // Sends a command, returns the reply line ("" if the peer is gone).
  std::string ask(const std::string& command, int fd = -1, int* fd_back = nullptr) {
    std::string reply;
    if (!send_line(sock_, command, fd) || !receive_line(sock_, reply, fd_back)) {
      return "";
    }
    return reply;
  }
  // Tells the peer to quit; its exit status (or 1000 + the signal that ended it).
  int quit() {
    int status = 0;
    if (pid_ > 0) {
      send_line(sock_, "quit");
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
    }
    return -1;
  }
  int socket() const { return sock_; }

 private:
  int sock_ = -1;
  pid_t pid_ = -1;
};

}  // namespace fakecuda_test
