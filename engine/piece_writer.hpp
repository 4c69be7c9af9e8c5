// PieceWriter: text made of pieces (a CSV table's rows or column ranges), formatted on two threads and written in
// order by the calling thread, which never waits long for the other one.
#pragma once
#include <omp.h>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <fmt/format.h>

namespace anasim {

// Formats n pieces and writes them in order: format(k, buffer) appends piece k's text to an empty buffer (on
// either thread, and possibly twice for one piece, so it may only read shared data); put(buffer) writes it on the
// calling thread, false on an I/O error. With two threads a helper formats pieces up to kWindow ahead of the
// writer while the writer formats too. The writer never waits long for the helper: a piece the helper has
// held for kTakeover is formatted again by the writer. On a busy machine the helper may not run for a scheduler
// time slice; waiting for it at every block made the 50-cycle diode bridge's CSV (24 MB) 2.5x slower on two
// threads than on one (0.25-0.27 s against 0.10-0.11 s).
class PieceWriter {
 public:
  // Returns false as soon as put() does (no piece is written after it).
  template <class Format, class Put>
  static bool run(size_t n, bool two_threads, const Format& format, const Put& put) {
    fmt::memory_buffer own;
    if (!two_threads) {
      for (size_t k = 0; k < n; ++k) {
        own.clear();
        format(k, own);
        if (!put(own)) return false;
      }
      return true;
    }
    PieceWriter w(n);
    bool ok = true;
#pragma omp parallel num_threads(2)
    {
      if (omp_get_thread_num() == 0) ok = w.writer(format, put, own);
      else w.helper(format);
    }
    return ok;
  }

 private:
  static constexpr size_t kWindow = 4;
  static constexpr auto kTakeover = std::chrono::milliseconds(2);
  enum State : int { Free, Busy, Ready };
  struct Slot {
    fmt::memory_buffer text;
    std::atomic<int> state{Free};
    size_t piece = 0;  // the piece in text (set by its claimer before Busy)
  };
  const size_t n_;
  std::array<Slot, kWindow> slot_;
  std::atomic<size_t> next_{0};     // the next piece to claim
  std::atomic<size_t> written_{0};  // pieces written (the writer's)
  std::atomic<bool> stop_{false};

  explicit PieceWriter(size_t n) : n_(n) {}

  // Claims the next piece if it lies in the window and its slot is free; returns it, or n_. Pieces the writer
  // has already written (formatted itself) are skipped.
  size_t claim() {
    size_t k = next_.load(std::memory_order_acquire);
    const size_t w = written_.load(std::memory_order_acquire);
    while (k < w)
      if (next_.compare_exchange_weak(k, w, std::memory_order_acq_rel)) k = w;
    if (k >= n_ || k >= w + kWindow) return n_;
    Slot& s = slot_[k % kWindow];
    if (s.state.load(std::memory_order_acquire) != Free) return n_;
    if (!next_.compare_exchange_strong(k, k + 1, std::memory_order_acq_rel)) return n_;
    s.piece = k;
    s.state.store(Busy, std::memory_order_release);
    return k;
  }

  template <class Format>
  void fill(size_t k, const Format& format) {
    Slot& s = slot_[k % kWindow];
    s.text.clear();
    format(k, s.text);
    s.state.store(Ready, std::memory_order_release);
  }

  template <class Format>
  void helper(const Format& format) {
    while (!stop_.load(std::memory_order_acquire) && next_.load(std::memory_order_acquire) < n_) {
      const size_t k = claim();
      if (k < n_) fill(k, format);
      else std::this_thread::yield();
    }
  }

  template <class Format, class Put>
  bool writer(const Format& format, const Put& put, fmt::memory_buffer& own) {
    bool ok = true;
    for (size_t w = 0; w < n_ && ok;) {
      Slot& s = slot_[w % kWindow];
      // A slot the writer took over from the helper is free again once the helper is done with it.
      const size_t c = next_.load(std::memory_order_acquire);
      Slot& t = slot_[c % kWindow];
      if (c < n_ && t.state.load(std::memory_order_acquire) == Ready && t.piece < w) t.state.store(Free);
      if (s.state.load(std::memory_order_acquire) == Ready && s.piece == w) {
        ok = put(s.text);
        s.state.store(Free, std::memory_order_release);
        written_.store(++w, std::memory_order_release);
        continue;
      }
      if (const size_t k = claim(); k < n_) {  // the piece to write next, or one ahead of it
        fill(k, format);
        continue;
      }
      // The helper holds piece w: wait for it, or format it again here. (Piece w may also be unclaimed, its slot
      // still held by a piece taken over before: then it is formatted here at once.)
      const auto t0 = std::chrono::steady_clock::now();
      while (next_.load(std::memory_order_acquire) > w &&
             !(s.state.load(std::memory_order_acquire) == Ready && s.piece == w) &&
             std::chrono::steady_clock::now() - t0 < kTakeover)
        std::this_thread::yield();
      if (s.state.load(std::memory_order_acquire) == Ready && s.piece == w) continue;
      own.clear();
      format(w, own);
      ok = put(own);
      written_.store(++w, std::memory_order_release);
    }
    stop_.store(true, std::memory_order_release);
    return ok;
  }
};

}  // namespace anasim
