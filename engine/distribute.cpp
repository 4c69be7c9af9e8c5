// Work distribution over MPI ranks (see distribute.hpp). The MPI calls are those of the module libanasim_mpi.so
// (engine/distribute_mpi.cpp), loaded only under an MPI launcher.
#include "engine/distribute.hpp"
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <sys/syscall.h>
#include <unistd.h>
#include <fmt/format.h>
#include "engine/module.hpp"

namespace anasim::dist {

namespace {

int g_rank = 0;
int g_size = 1;
bool g_mpi = false;          // MPI_Init_thread was called (through the module's functions below)

// The module's functions (engine/distribute_mpi.cpp), set by init() under a launcher.
struct MpiModule {
  void (*init)(int*, char***, int*, int*) = nullptr;
  void (*finalize)() = nullptr;
  void (*abort)(int) = nullptr;
  void (*allgather_int)(int, int*) = nullptr;
  void (*allgatherv_bytes)(const char*, int, char*, const int*, const int*) = nullptr;
  void (*bcast_bytes)(void*, std::int64_t) = nullptr;
};
MpiModule g_m;

// Loads the module's functions into g_m; false (error says why) if any is missing.
bool load_mpi_module(std::string& error) {
  auto get = [&](auto& f, const char* name) {
    f = module::function<std::remove_pointer_t<std::remove_reference_t<decltype(f)>>>("mpi", name, &error,
                                                                                      module::Scope::Global);
    return f != nullptr;
  };
  return get(g_m.init, "anasim_mpi_init") && get(g_m.finalize, "anasim_mpi_finalize") &&
         get(g_m.abort, "anasim_mpi_abort") && get(g_m.allgather_int, "anasim_mpi_allgather_int") &&
         get(g_m.allgatherv_bytes, "anasim_mpi_allgatherv_bytes") && get(g_m.bcast_bytes, "anasim_mpi_bcast_bytes");
}
double g_bytes = 0;          // see bytes_exchanged()
ProgressMode g_progress = ProgressMode::Auto;

// Byte buffer of one rank's round: its status and item results, read back in the same order.
struct Packer {
  std::string buf;
  template <class T>
  void put(const T& v) { buf.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void put_str(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    buf.append(s);
  }
};

struct Unpacker {
  const char* p;
  const char* end;
  template <class T>
  T get() {
    T v{};
    if (p + sizeof v <= end) std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  std::string get_str() {
    const auto n = get<std::uint64_t>();
    std::string s(p, std::min<std::uint64_t>(n, static_cast<std::uint64_t>(end - p)));
    p += n;
    return s;
  }
};

// A Status's first error with its location, so that another rank can print it as the failing rank would.
void pack_status(Packer& pk, const Status& st) {
  pk.put(static_cast<std::uint8_t>(st.ok() ? 0 : 1));
  if (st.ok()) return;
  const Diag& d = st.errors[0];
  pk.put(static_cast<std::int32_t>(d.kind));
  pk.put_str(d.message);
  pk.put_str(d.loc.src ? d.loc.file() : std::string());
  pk.put(static_cast<std::int32_t>(d.loc.line));
  pk.put(static_cast<std::int32_t>(d.loc.col));
  pk.put_str(std::string(d.loc.text()));
}

Status unpack_status(Unpacker& u) {
  if (u.get<std::uint8_t>() == 0) return {};
  const auto kind = static_cast<ErrorKind>(u.get<std::int32_t>());
  std::string msg = u.get_str(), file = u.get_str();
  const int line = u.get<std::int32_t>(), col = u.get<std::int32_t>();
  const std::string text = u.get_str();
  SourceLoc loc;
  if (!file.empty()) loc = line > 0 ? SourceLoc(SourceFile::add(file, text, line), line, col) : SourceLoc::whole(file);
  return Status::fail(kind, std::move(msg), loc);
}

// Every rank's buffer, in rank order (one rank: its own).
std::vector<std::string> all_gather(const std::string& mine) {
  if (g_size == 1) return {mine};
#ifdef ANASIM_HAVE_MPI
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(g_size), displs(g_size);
  g_m.allgather_int(n, counts.data());
  long total = 0;
  for (int r = 0; r < g_size; ++r) {
    displs[r] = static_cast<int>(total);
    total += counts[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  g_m.allgatherv_bytes(mine.data(), n, all.data(), counts.data(), displs.data());
  g_bytes += static_cast<double>(total) * (g_size - 1);
  std::vector<std::string> out(g_size);
  for (int r = 0; r < g_size; ++r) out[r] = all.substr(displs[r], counts[r]);
  return out;
#else
  return {mine};
#endif
}

// Rank 0's buffer on every rank.
void broadcast(std::string& s) {
  if (g_size == 1) return;
#ifdef ANASIM_HAVE_MPI
  std::uint64_t n = s.size();
  g_m.bcast_bytes(&n, sizeof n);
  s.resize(n);
  g_m.bcast_bytes(s.data(), static_cast<std::int64_t>(n));
  g_bytes += static_cast<double>(n) * (g_size - 1);
#endif
}

void pack_table(Packer& pk, const ItemTable& t) {
  pk.put(static_cast<std::int64_t>(t.size()));
  for (long i = 0; i < t.size(); ++i) {
    pk.put(t.done[i]);
    if (!t.done[i]) continue;
    pk.put(static_cast<std::uint64_t>(t.values[i].size()));
    for (double v : t.values[i]) pk.put(v);
  }
}

void unpack_table(Unpacker& u, ItemTable& t) {
  t = ItemTable(u.get<std::int64_t>());
  for (long i = 0; i < t.size(); ++i) {
    t.done[i] = u.get<unsigned char>();
    if (!t.done[i]) continue;
    t.values[i].resize(u.get<std::uint64_t>());
    for (double& v : t.values[i]) v = u.get<double>();
  }
}

}  // namespace

void init(int* argc, char*** argv) {
#ifdef ANASIM_HAVE_MPI
  // Only under a launcher: a singleton MPI_Init would start Open MPI's runtime for a one-process run.
  if (!std::getenv("OMPI_COMM_WORLD_SIZE") && !std::getenv("PMIX_RANK")) return;
  std::string error;
  if (!load_mpi_module(error)) {
    fmt::print(stderr, "warning: {}: each process runs every trial on its own\n", error);
    return;
  }
  g_m.init(argc, argv, &g_rank, &g_size);
  g_mpi = true;
#else
  (void)argc;
  (void)argv;
  const char* n = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (n && std::atoi(n) > 1)
    fmt::print(stderr, "warning: anasim was built without MPI (ANASIM_MPI off): each of the {} processes runs "
                       "every trial on its own\n", n);
#endif
}

void finalize() {
#ifdef ANASIM_HAVE_MPI
  if (g_mpi) g_m.finalize();
  g_mpi = false;
#endif
}

int fail(int code) {
#ifdef ANASIM_HAVE_MPI
  if (g_mpi && g_size > 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    g_m.abort(code);
  }
  finalize();
#endif
  return code;
}

int rank() { return g_rank; }
int size() { return g_size; }
bool is_root() { return g_rank == 0; }
bool built_with_mpi() {
#ifdef ANASIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}
double bytes_exchanged() { return g_bytes; }
void set_progress(ProgressMode m) { g_progress = m; }

ProgressLine::ProgressLine(long total, long already, std::string what, double min_interval)
    : total_(total), already_(already), what_(std::move(what)), min_interval_(min_interval),
      t0_(std::chrono::steady_clock::now()), last_(t0_), checked_(t0_) {
  tty_ = isatty(fileno(stderr)) != 0;
  on_ = g_rank == 0 && total > 0 && static_cast<pid_t>(::syscall(SYS_gettid)) == ::getpid() &&
        (g_progress == ProgressMode::Always || (g_progress == ProgressMode::Auto && tty_));
}

bool ProgressLine::interval_passed(std::chrono::steady_clock::time_point now, long done) const {
  return min_interval_ <= 0 || std::chrono::duration<double>(now - last_).count() >= min_interval_ ||
         (done >= total_ && printed_);
}

bool ProgressLine::due(long done) {
  if (!on_) return false;
  if (min_interval_ <= 0) return true;
  if (done < total_ && ++calls_ < stride_) return false;
  calls_ = 0;
  const auto now = std::chrono::steady_clock::now();
  const double gap = std::chrono::duration<double>(now - checked_).count();
  checked_ = now;
  if (gap < 1e-3 && stride_ < (1L << 16)) stride_ *= 2;
  if (gap > 0.1 && stride_ > 1) stride_ /= 2;
  return interval_passed(now, done);
}

void ProgressLine::update(long done, const std::string& note) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!interval_passed(now, done)) return;
  last_ = now;
  printed_ = true;
  const double secs = std::chrono::duration<double>(now - t0_).count();
  const long fresh = done - already_;  // items computed by this run (the rate excludes resumed ones)
  const std::string eta = fresh > 0 ? fmt::format("{:.1f} s", secs / fresh * (total_ - done)) : "?";
  const int width = 30, fill = static_cast<int>(width * done / total_);
  fmt::print(stderr, "{}[{}{}] {}/{} {}{}{}, {:.1f} s, ETA {}{}", tty_ ? "\r" : "", std::string(fill, '#'),
             std::string(width - fill, '.'), done, total_, what_, note.empty() ? "" : ", ", note, secs, eta,
             tty_ ? (done == total_ ? "\n" : "") : "\n");
  std::fflush(stderr);
}

long ItemTable::count_done() const { return static_cast<long>(std::count(done.begin(), done.end(), 1)); }

int chunk_size(long items, int min_chunk, int rounds) {
  const long per = (items + static_cast<long>(g_size) * rounds - 1) / (static_cast<long>(g_size) * rounds);
  return static_cast<int>(std::max<long>({per, min_chunk, 1}));
}

Status run_items(ItemTable& table, int chunk, const ChunkFn& compute, const RoundFn& after_round,
                 const std::string& what) {
  if (g_size > 1) {  // rank 0 may have resumed from a checkpoint: every rank starts from its table
    Packer pk;
    if (g_rank == 0) pack_table(pk, table);
    broadcast(pk.buf);
    Unpacker u{pk.buf.data(), pk.buf.data() + pk.buf.size()};
    unpack_table(u, table);
  }
  std::vector<long> pending;
  for (long i = 0; i < table.size(); ++i)
    if (!table.done[i]) pending.push_back(i);
  chunk = std::max(chunk, 1);
  const long chunks = (static_cast<long>(pending.size()) + chunk - 1) / chunk;
  ProgressLine progress(table.size(), table.size() - static_cast<long>(pending.size()), what);
  for (long round = 0; round * g_size < chunks; ++round) {
    // This rank's chunk of the round (possibly none in the last round).
    const long c = round * g_size + g_rank;
    std::vector<long> items;
    for (long k = c * chunk; c < chunks && k < std::min<long>((c + 1) * chunk, pending.size()); ++k)
      items.push_back(pending[k]);
    std::vector<std::vector<double>> out(items.size());
    Status st = items.empty() ? Status{} : compute(items, out);
    Packer pk;
    pack_status(pk, st);
    if (st) {
      pk.put(static_cast<std::uint64_t>(items.size()));
      for (size_t k = 0; k < items.size(); ++k) {
        pk.put(static_cast<std::int64_t>(items[k]));
        pk.put(static_cast<std::uint64_t>(out[k].size()));
        for (double v : out[k]) pk.put(v);
      }
    }
    const std::vector<std::string> all = all_gather(pk.buf);
    for (int r = 0; r < g_size; ++r) {  // rank order = chunk order: the first failure is the lowest item's
      Unpacker u{all[r].data(), all[r].data() + all[r].size()};
      Status rs = unpack_status(u);
      if (!rs) return r == g_rank ? st : rs;  // the failing rank keeps its own Status (warnings, full location)
      const auto n = u.get<std::uint64_t>();
      for (std::uint64_t k = 0; k < n; ++k) {
        const auto item = u.get<std::int64_t>();
        std::vector<double> v(u.get<std::uint64_t>());
        for (double& x : v) x = u.get<double>();
        if (item >= 0 && item < table.size()) {
          table.values[item] = std::move(v);
          table.done[item] = 1;
        }
      }
    }
    if (after_round)
      if (Status s = after_round(table); !s) return s;
    progress.update(table.count_done());
  }
  return {};
}

}  // namespace anasim::dist
