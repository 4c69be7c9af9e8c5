// read_isolated: fork, run the reader in the child under a memory limit, collect its reply through a pipe with a
// time limit in the parent, and turn a crash, a hang or a short reply into an error naming the file.
#include "engine/isolated_read.hpp"
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define ANASIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ANASIM_ASAN 1
#endif
#endif

namespace anasim {

namespace {

constexpr std::uint64_t kReplyMagic = 0x414e4153494d5231ull;  // "ANASIMR1": a reply the child completed

bool isolation_enabled() {
  const char* v = std::getenv("ANASIM_READ_ISOLATION");
  return !(v && std::string_view(v) == "0");
}

// Seconds the child may take: ANASIM_READ_TIMEOUT if set to a positive number, else 20 s + 1 s per 8 MiB.
double time_limit(std::uintmax_t file_bytes) {
  if (const char* v = std::getenv("ANASIM_READ_TIMEOUT")) {
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (end != v && s > 0) return s;
  }
  return 20.0 + static_cast<double>(file_bytes) / (8 << 20);
}

// Bytes the child may map beyond the parent's size at the fork: 4 GiB plus 32 times the file.
std::uintmax_t memory_budget(std::uintmax_t file_bytes) { return (std::uintmax_t{4} << 30) + 32 * file_bytes; }

void put_status(Wire& w, const Status& st) {
  w.put(static_cast<std::uint64_t>(st.errors.size()));
  for (const Diag& d : st.errors) {
    w.put(static_cast<int>(d.kind));
    w.put(d.message);
    w.put(d.loc.src ? d.loc.src->path() : std::string());
    w.put(d.loc.line);
    w.put(d.loc.col);
  }
  w.put(st.warnings);
}

bool get_status(Wire& w, Status& st) {
  std::uint64_t n = 0;
  if (!w.get(n)) return false;
  for (std::uint64_t i = 0; i < n; ++i) {
    int kind = 0, line = 0, col = 0;
    Diag d;
    std::string path;
    if (!w.get(kind) || !w.get(d.message) || !w.get(path) || !w.get(line) || !w.get(col)) return false;
    d.kind = static_cast<ErrorKind>(kind);
    if (!path.empty()) d.loc = SourceLoc(SourceFile::path_only(path), line, col);
    st.errors.push_back(std::move(d));
  }
  return w.get(st.warnings);
}

bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

// Closes every descriptor from `first` up, so that the child holds no other thread's pipe open (a reply pipe
// reaches end-of-file only when every copy of its write end is closed).
void close_from(int first) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, first, ~0u, 0) == 0) return;
#endif
  const long top = std::min<long>(::sysconf(_SC_OPEN_MAX), 1 << 16);
  for (long fd = first; fd < top; ++fd) ::close(static_cast<int>(fd));
}

// The child: limits, the read, the reply, _exit. Never returns.
[[noreturn]] void child_main(int fd, pid_t parent, const std::string& path, std::uintmax_t file_bytes,
                             const std::function<Status(Wire&)>& read) {
#ifdef __linux__
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the parent killed: no orphan left reading
  if (::getppid() != parent) ::_exit(1);
#endif
  if (fd != 3) {
    ::dup2(fd, 3);
    fd = 3;
  }
  close_from(4);
  // A crash ends the child with its signal, not in a handler the parent installed (a test framework's, Python's
  // faulthandler or the address sanitizer's, which would report a failure of the parent).
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // a crash in the library writes no core file
#ifndef ANASIM_ASAN
  long pages = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  const rlimit as{static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) +
                      memory_budget(file_bytes),
                  RLIM_INFINITY};
  if (pages > 0) ::setrlimit(RLIMIT_AS, &as);
#endif
  Wire payload;
  Status st;
  try {
    st = read(payload);
  } catch (const std::bad_alloc&) {
    st = Status::input(fmt::format("reading it needs more memory than the reader's limit ({} MiB beyond the "
                                   "process's size): a damaged file can claim huge sizes",
                                   memory_budget(file_bytes) >> 20),
                       SourceLoc::whole(path));
    payload = Wire();
  } catch (const std::exception& e) {
    st = Status::fail(ErrorKind::Other, std::string("reader failed: ") + e.what());
    payload = Wire();
  }
  // The reply: its length after these 8 bytes, the magic, the Status, then the payload's bytes.
  Wire body;
  body.put(kReplyMagic);
  put_status(body, st);
  const std::uint64_t n = body.bytes().size() + payload.bytes().size();
  const bool ok = write_all(fd, reinterpret_cast<const char*>(&n), sizeof n) &&
                  write_all(fd, body.bytes().data(), body.bytes().size()) &&
                  write_all(fd, payload.bytes().data(), payload.bytes().size());
  ::_exit(ok ? 0 : 1);
}

// The parent's side: reads the reply until end-of-file or the deadline. Returns false on timeout.
bool collect(int fd, double seconds, std::string& got) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(
                                           std::chrono::duration<double>(seconds));
  char buf[1 << 16];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return false;
    if (r < 0) return true;  // treated as end of reply; the completeness check decides
    const ssize_t k = ::read(fd, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return true;
    const bool had_length = got.size() >= sizeof(std::uint64_t);
    got.append(buf, static_cast<std::size_t>(k));
    if (!had_length && got.size() >= sizeof(std::uint64_t)) {  // the announced length: one allocation
      std::uint64_t n = 0;
      std::memcpy(&n, got.data(), sizeof n);
      if (n < (std::uint64_t{1} << 40)) got.reserve(sizeof n + n);
    }
  }
}

}  // namespace

Status read_isolated(const std::string& path, std::string_view library, const std::function<Status(Wire&)>& read,
                     Wire& reply) {
  reply = Wire();
  if (!isolation_enabled()) return read(reply);
  std::error_code ec;
  std::uintmax_t file_bytes = std::filesystem::file_size(path, ec);
  if (ec) file_bytes = 0;
  const SourceLoc at = SourceLoc::whole(path);

  int fds[2];
  if (::pipe(fds) != 0) {
    const int err = errno;
    Status st = read(reply);
    st.warnings.push_back(fmt::format("{}: read without isolation (pipe: {})", path, std::strerror(err)));
    return st;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    Status st = read(reply);
    st.warnings.push_back(fmt::format("{}: read without isolation (fork: {})", path, std::strerror(err)));
    return st;
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], parent, path, file_bytes, read);
  }
  ::close(fds[1]);
  const double seconds = time_limit(file_bytes);
  std::string got;
  const bool finished = collect(fds[0], seconds, got);
  ::close(fds[0]);
  if (!finished) ::kill(pid, SIGKILL);
  int wstatus = 0;
  pid_t w;
  do w = ::waitpid(pid, &wstatus, 0);
  while (w < 0 && errno == EINTR);
  const bool reaped = w == pid;  // false when SIGCHLD is ignored (the child was reaped already)

  if (!finished)
    return Status::input(fmt::format("cannot read this file: {} did not finish reading it within {:g} s (a damaged "
                                     "file can make it loop forever); ANASIM_READ_TIMEOUT=<seconds> allows longer",
                                     library, seconds),
                         at);
  if (reaped && WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    if (sig == SIGKILL)
      return Status::input(fmt::format("cannot read this file: the {} reader process was killed (signal 9; out of "
                                       "memory?)", library), at);
    return Status::input(fmt::format("cannot read this file: {} crashed on it (signal {}, {}); the file is "
                                     "damaged or was not written by that library",
                                     library, sig, ::strsignal(sig)),
                         at);
  }
  // A complete reply: its length, the magic and the Status; `reply` is left at the payload.
  const std::size_t received = got.size();
  reply.assign(std::move(got));
  std::uint64_t n = 0, magic = 0;
  Status st;
  const bool complete = reply.get(n) && n == received - sizeof n && reply.get(magic) && magic == kReplyMagic &&
                        get_status(reply, st);
  if (!complete) {
    reply = Wire();
    const std::string how = reaped ? fmt::format("exited with status {}", WEXITSTATUS(wstatus)) : "ended";
    return Status::input(fmt::format("cannot read this file: the {} reader process {} without a complete reply "
                                     "(the file is damaged, or memory ran out)",
                                     library, how),
                         at);
  }
  return st;
}

}  // namespace anasim
