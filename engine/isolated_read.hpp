// Reading an untrusted file with a library that may crash or loop forever on it (libhdf5 1.10.8 on crafted HDF5
// files): the reader runs in a forked child process with a time and memory limit and sends what it read back
// through a pipe, so a crash or hang becomes an error naming the file instead of taking the run down.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>
#include "engine/types.hpp"

namespace anasim {

// Values passed from the reading child to the parent: put() appends, get() reads back in the same order (same
// machine, so plain bytes). get() returns false when the bytes run out (a truncated reply).
class Wire {
 public:
  template <class T>
  void put(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      put(static_cast<std::uint64_t>(v.size()));
      bytes_.append(v);
    } else {
      static_assert(std::is_trivially_copyable_v<T>);
      bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
  }
  template <class T>
  void put(const std::vector<T>& v) {
    put(static_cast<std::uint64_t>(v.size()));
    if constexpr (std::is_same_v<T, std::string>) {
      for (const auto& s : v) put(s);
    } else {
      static_assert(std::is_trivially_copyable_v<T>);
      bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    }
  }
  template <class T>
  bool get(T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      std::uint64_t n = 0;
      if (!get(n) || n > bytes_.size() - at_) return false;
      v.assign(bytes_, at_, n);
      at_ += n;
      return true;
    } else {
      static_assert(std::is_trivially_copyable_v<T>);
      if (sizeof v > bytes_.size() - at_) return false;
      std::memcpy(&v, bytes_.data() + at_, sizeof v);
      at_ += sizeof v;
      return true;
    }
  }
  template <class T>
  bool get(std::vector<T>& v) {
    std::uint64_t n = 0;
    if (!get(n)) return false;
    if constexpr (std::is_same_v<T, std::string>) {
      if (n > bytes_.size() - at_) return false;  // every string takes at least its 8-byte length
      v.resize(n);
      for (auto& s : v)
        if (!get(s)) return false;
    } else {
      if (n > (bytes_.size() - at_) / sizeof(T)) return false;
      v.resize(n);
      std::memcpy(v.data(), bytes_.data() + at_, n * sizeof(T));
      at_ += n * sizeof(T);
    }
    return true;
  }
  // n values of a trivially copyable type whose count the reader knows already (an Eigen matrix's storage).
  template <class T>
  void put_array(const T* p, std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(p), n * sizeof(T));
  }
  template <class T>
  bool get_array(T* p, std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (n > (bytes_.size() - at_) / sizeof(T)) return false;
    if (n > 0) std::memcpy(p, bytes_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
    return true;
  }
  // Raw access for the transport: the bytes so far, and replacing them (reading starts again at the front).
  const std::string& bytes() const { return bytes_; }
  void assign(std::string bytes) {
    bytes_ = std::move(bytes);
    at_ = 0;
  }

 private:
  std::string bytes_;
  std::size_t at_ = 0;
};

// Runs `read` on the file `path` in a forked child process and returns the Status it returned; what it put into
// its Wire is in `reply` (for the caller to get() when the Status is ok). The child only reads and sends; it
// leaves with _exit (no atexit handlers, no library shutdown: the parent's open HDF5 files are not touched).
// `library` names what does the reading in the errors ("libhdf5").
//
// Errors of the isolation itself are Input errors located at `path`: the child died from a signal (a crash in
// the library), did not finish within the time limit (killed), ran out of its memory limit, or sent an
// incomplete reply. Limits: ANASIM_READ_TIMEOUT seconds (default 20 s plus 1 s per 8 MiB of file), and an
// address-space limit of the process's current size plus 4 GiB plus 32 times the file size (not under the
// address sanitizer, which reserves terabytes). Not a child (the read runs in this process, as before) when
// ANASIM_READ_ISOLATION=0, or with a warning when fork() fails.
//
// Threads: only the calling thread exists in the child. That is safe as long as no other thread is inside the
// same library at the time (HDF5 calls are serialized in anasim anyway); a lock another thread held at the fork
// can at worst leave the child waiting, which the time limit ends with an error.
Status read_isolated(const std::string& path, std::string_view library, const std::function<Status(Wire&)>& read,
                     Wire& reply);

}  // namespace anasim
