// Work distribution of the Monte Carlo drivers over MPI ranks (the one file that sees MPI): rank and size, a loop
// over work items handed out in chunks whose results every rank receives, failures shared by every rank, and
// progress with an ETA. Without MPI (build option ANASIM_MPI off, or a run not started by mpirun) there is one
// rank and the loop runs locally: same results, same code path.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>
#include "engine/types.hpp"

namespace anasim::dist {

// Starts MPI when the process was started by an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE or PMIX_RANK);
// otherwise (and without MPI support) does nothing: rank 0 of 1. Call once at the top of main().
void init(int* argc, char*** argv);
// Ends MPI (no-op without it). Every rank calls it on success.
void finalize();
// A failed command under more than one rank: MPI_Abort(code) so no rank waits for a peer that has stopped;
// returns `code` otherwise (one rank: exit normally). Call after the error has been printed.
int fail(int code);

int rank();            // this process's rank, 0 without MPI
int size();            // number of ranks, 1 without MPI
bool is_root();        // rank() == 0: the rank that prints results and writes files
bool built_with_mpi(); // ANASIM_MPI was on at build time

// Bytes of item results moved between ranks so far (the sum over every rank of what it received) [bytes].
double bytes_exchanged();

// Progress on stderr (rank 0): Auto = only when stderr is a terminal, Always = also into files and pipes (one
// line per update), Never. Process-wide; the CLI sets it from --progress.
enum class ProgressMode { Auto, Always, Never };
void set_progress(ProgressMode m);

// "[######........] 12/40 trials, 3.1 s, ETA 7.2 s" on stderr, per the progress mode, on rank 0 and from the
// process's main thread only (work on other threads, e.g. Monte Carlo trials, prints nothing). `min_interval` [s]:
// an update within that time of the last line printed is skipped, and with min_interval > 0 nothing is printed
// before the first min_interval has passed (a short run stays silent, its last update included).
class ProgressLine {
 public:
  ProgressLine(long total, long already, std::string what, double min_interval = 0);
  // Whether update(done) would print now; a caller with a costly note asks first. With min_interval > 0 the clock
  // is read on every stride-th call only, the stride adapting so that reads are about 1-100 ms apart (a loop of
  // microsecond steps pays a counter per step, one of second-long steps a clock read per step).
  bool due(long done);
  void update(long done, const std::string& note = {});  // note: appended to the line

 private:
  // The interval rule at `now`: no interval, or min_interval since the last line, or the last update of a run
  // that printed.
  bool interval_passed(std::chrono::steady_clock::time_point now, long done) const;
  long total_, already_;
  std::string what_;
  double min_interval_;
  std::chrono::steady_clock::time_point t0_, last_, checked_;
  long calls_ = 0, stride_ = 1;
  bool tty_ = false, on_ = false, printed_ = false;
};

// Results of a loop over work items [0, n): one vector of doubles per item.
struct ItemTable {
  std::vector<std::vector<double>> values;  // size n; values[i] = item i's result when done[i]
  std::vector<unsigned char> done;          // size n; 1 = item i has its result
  explicit ItemTable(long n = 0) : values(n), done(n, 0) {}
  long size() const { return static_cast<long>(done.size()); }
  long count_done() const;
};

// Computes items `items` (increasing item numbers) into out[k] for items[k]; a failure returns the Status of the
// lowest failing item (its message saying which item failed).
using ChunkFn = std::function<Status(const std::vector<long>& items, std::vector<std::vector<double>>& out)>;
// Called on every rank after each round with the table so far (rank 0 writes the checkpoint there).
using RoundFn = std::function<Status(const ItemTable& table)>;

// Runs every item of `table` not yet done: rank 0's table (resumed from a checkpoint) is sent to every rank, the
// pending items are cut into chunks of `chunk` items, and in every round rank r computes chunk round*size + r; the
// round's results are exchanged so that every rank holds every result (the table ends identical on all ranks).
// A failed chunk stops the loop on every rank at the end of its round with the failure of the lowest failing
// chunk, which is the lowest failing item: the same Status as a single-process run. `what` names the items in
// the progress line ("trials").
Status run_items(ItemTable& table, int chunk, const ChunkFn& compute, const RoundFn& after_round,
                 const std::string& what);

// Chunk size for `items` items of about equal cost: at least `min_chunk`, and small enough for about `rounds`
// rounds over every rank (so that progress, checkpoints and the balance between ranks have a useful grain).
int chunk_size(long items, int min_chunk, int rounds = 32);

}  // namespace anasim::dist
