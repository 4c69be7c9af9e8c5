// A second thread for one piece of work, the way the large-input paths take it (the SPICE reader's batches, the
// elaboration's runs of devices, the circuit build, the sparse solvers' substitutions, populate_pages).
#pragma once
#include <cstddef>
#include <exception>
#include <thread>
#include <omp.h>

namespace anasim {

// Items (a batch's lines, a run's devices, a circuit's devices, an operating point's signals) from which the
// large-input paths take a second thread. Below it the second thread's heap (glibc's second arena) costs memory for
// no time: a 128x32 crossbar deck (12,500 devices) elaborates as fast on one thread, and a 5,000-device crossbar
// transient took 0.7 MB more on two.
constexpr size_t kTwoThreadItems = 20000;

// Whether a second thread may be taken: OpenMP would give two and no parallel region is running (Monte Carlo
// trials and the NN paths' threads have the cores already).
inline bool second_thread_allowed() { return omp_get_max_threads() >= 2 && !omp_in_parallel(); }

// Runs beside() on a second thread while this thread runs here(), and returns when both have ended. An exception
// of either is rethrown here once both have ended (here()'s before beside()'s). stop() is called on the thread of
// the one that threw, as soon as it has, so that the other can end early: it must be safe from either thread.
template <class Beside, class Here, class Stop>
void run_beside(Beside&& beside, Here&& here, Stop&& stop) {
  std::exception_ptr thrown;
  std::thread worker([&] {
    try {
      beside();
    } catch (...) {
      thrown = std::current_exception();
      stop();
    }
  });
  try {
    here();
  } catch (...) {
    stop();
    worker.join();
    throw;
  }
  worker.join();
  if (thrown) std::rethrow_exception(thrown);
}

// run_beside where neither side can end the other early.
template <class Beside, class Here>
void run_beside(Beside&& beside, Here&& here) {
  run_beside(beside, here, [] {});
}

}  // namespace anasim
