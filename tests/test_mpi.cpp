// Monte Carlo over MPI ranks and checkpoints (engine/distribute.cpp, engine/checkpoint.cpp): `nn mc`, `nn energy`
// and `run --mc` on 2 ranks x 1 thread (mpirun --oversubscribe) give the results of 1 rank x 2 threads; a run killed
// with SIGKILL after its first checkpoint and started again (with another thread count) gives byte-identical
// results; a checkpoint of another run is refused. The MPI cases are skipped with a message when mpirun is absent
// or the build has no MPI.
#include <doctest/doctest.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <H5Cpp.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/distribute.hpp"
#include "nn/model_io.hpp"
#include "nn_test_support.hpp"
#include "test_support.hpp"

using namespace anasim;
using namespace anasim::nn_test;
using test_support::contains;

namespace {

fs::path scratch(const std::string& name) { return test_support::scratch_dir("mpi", name); }

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The command prefix that starts anasim on 2 ranks, or "" (with a message) when this build or machine cannot.
std::string mpirun_2() {
  if (!dist::built_with_mpi()) {
    MESSAGE("built without MPI (ANASIM_MPI off): skipping the 2-rank runs");
    return "";
  }
  int rc = 0;
  shell("command -v mpirun", rc);
  if (rc != 0) {
    MESSAGE("mpirun not found (install openmpi-bin): skipping the 2-rank runs");
    return "";
  }
  // As root Open MPI wants both variables; 2 ranks on a machine with fewer free slots need --oversubscribe.
  return fmt::format("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 "
                     "mpirun --oversubscribe -np 2 {}", ANASIM_BINARY);
}

// anasim with `args` on one process of `threads` OpenMP threads; stdout and stderr together, rc its exit code.
std::string run_threads(int threads, const std::string& args, int& rc) {
  return shell(fmt::format("OMP_NUM_THREADS={} {} {}", threads, ANASIM_BINARY, args), rc);
}

// Every dataset under /mc of an `anasim run -o` file: path -> values.
std::map<std::string, std::vector<double>> read_mc(const fs::path& file) {
  std::map<std::string, std::vector<double>> out;
  H5::H5File f(file.string(), H5F_ACC_RDONLY);
  auto visit = [](hid_t obj, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    if (info->type != H5O_TYPE_DATASET) return 0;
    auto* m = static_cast<std::map<std::string, std::vector<double>>*>(data);
    H5::DataSet d(H5Dopen2(obj, name, H5P_DEFAULT));
    std::vector<double> v(d.getSpace().getSimpleExtentNpoints());
    d.read(v.data(), H5::PredType::NATIVE_DOUBLE);
    (*m)[name] = std::move(v);
    return 0;
  };
  H5::Group g = f.openGroup("/mc");
  H5Ovisit2(g.getId(), H5_INDEX_NAME, H5_ITER_INC, visit, &out, H5O_INFO_BASIC);
  return out;
}

// The bits of every image's results in an nn energy checkpoint (/checkpoint/value: nn/energy.cpp's pack_image per
// image, in item order) without the images' wall times (field 5), the one value that differs between equal runs.
std::vector<std::uint64_t> energy_bits(const fs::path& ck) {
  H5::H5File f(ck.string(), H5F_ACC_RDONLY);
  H5::DataSet dl = f.openDataSet("/checkpoint/length"), dv = f.openDataSet("/checkpoint/value");
  std::vector<std::int64_t> length(dl.getSpace().getSimpleExtentNpoints());
  std::vector<double> value(dv.getSpace().getSimpleExtentNpoints());
  dl.read(length.data(), H5::PredType::NATIVE_INT64);
  dv.read(value.data(), H5::PredType::NATIVE_DOUBLE);
  std::vector<std::uint64_t> bits(value.size());
  std::memcpy(bits.data(), value.data(), value.size() * sizeof(double));
  size_t at = 0;
  for (std::int64_t n : length) {
    REQUIRE(n > 5);
    bits[at + 5] = 0;
    at += static_cast<size_t>(n);
  }
  CHECK(at == bits.size());
  return bits;
}

// The tiny data set, model and hardware file of the nn mc cases; returns the common arguments. side 8: the 64-16-10
// model on 8x8 images; side 28: a 784-16-10 model on 28x28 images, whose calibration products are deep enough
// (784 terms) for Eigen's threaded product to round them by the thread count (it did, before map_network kept
// them on one thread: every result then changed at ~1e-9 relative between 1 and 2 threads).
std::string nn_setup(const fs::path& dir, double sigma = 0.05, int side = 8) {
  Mlp net = net_64_16_10();
  if (side != 8) REQUIRE(nn::make_mlp({side * side, 16, 10}, 3, net).ok());
  write_tiny_mnist(dir, net, side);
  nn::ModelInfo info;
  REQUIRE(nn::save_model((dir / "m.h5").string(), net, info).ok());
  std::ofstream f(dir / "hw.yaml");
  f << "hardware:\n  tile_rows: 48\n  tile_cols: 8\n  calib_samples: 100\n  sigma_g: " << sigma << "\n";
  return fmt::format("nn mc --model '{}' --config '{}' --data '{}'", (dir / "m.h5").string(),
                     (dir / "hw.yaml").string(), dir.string());
}

const char* kDivider = R"(title: divider
devices:
  - {name: v1, type: v, nodes: [in, 0], dc: 1}
  - {name: r1, type: r, nodes: [in, out], r: 10k, tol: 1%}
  - {name: r2, type: r, nodes: [out, 0], r: {value: 10k, tol: 1%, dist: uniform}}
  - {name: c1, type: c, nodes: [out, 0], c: {value: 1n, tol: 5%}}
analyses:
  - {type: op}
  - {type: tran, tstep: 1u, tstop: 20u}
)";

}  // namespace

TEST_CASE("mpi: nn mc on 2 ranks x 1 thread gives the accuracies of 1 rank x 2 threads, byte for byte") {
  const fs::path dir = scratch("nn_mc");
  const std::string args = nn_setup(dir, 0.05, 28) + " --trials 5 --seed 7 --sweep sigma_g=0.05,0.2";
  int rc = 0;
  std::string one = run_threads(2, args + " -o '" + (dir / "one.h5").string() + "'", rc);
  INFO(one);
  REQUIRE(rc == 0);
  const std::string mpirun = mpirun_2();
  if (mpirun.empty()) return;
  std::string two = shell(mpirun + " " + args + " -o '" + (dir / "two.h5").string() + "'", rc);
  INFO(two);
  REQUIRE(rc == 0);
  CHECK(contains(two, "2 MPI ranks"));
  CHECK(contains(two, "bytes per trial"));
  CHECK(read_bytes(dir / "one.h5") == read_bytes(dir / "two.h5"));
  // The table (rank 0 prints it once) is the same.
  const auto table = [](const std::string& s) {
    const size_t a = s.find("sigma_g "), b = s.find("wrote");
    return a == std::string::npos || b == std::string::npos ? std::string("(no table)") : s.substr(a, b - a);
  };
  CHECK(table(one) == table(two));
}

TEST_CASE("mpi: run --mc on 2 ranks x 1 thread gives the trials of 1 rank x 2 threads") {
  const fs::path dir = scratch("run_mc");
  std::ofstream(dir / "div.yaml") << kDivider;
  const std::string args = fmt::format("run '{}' --mc 40 --seed 3", (dir / "div.yaml").string());
  int rc = 0;
  std::string one = run_threads(2, args + " -o '" + (dir / "one.h5").string() + "'", rc);
  INFO(one);
  REQUIRE(rc == 0);
  const auto a = read_mc(dir / "one.h5");
  CHECK(a.size() >= 4u);
  CHECK(a.at("op/v(out)").size() == 40u);
  const std::string mpirun = mpirun_2();
  if (mpirun.empty()) return;
  std::string two = shell(mpirun + " " + args + " -o '" + (dir / "two.h5").string() + "'", rc);
  INFO(two);
  REQUIRE(rc == 0);
  CHECK(contains(two, "2 MPI ranks"));
  CHECK(read_mc(dir / "two.h5") == a);
}

TEST_CASE("mpi: a failing trial stops every rank with its message") {
  const fs::path dir = scratch("fail");
  std::ofstream(dir / "huge.yaml") << "devices:\n  - {name: v1, type: v, nodes: [a, 0], dc: 1}\n"
                                      "  - {name: r1, type: r, nodes: [a, 0], r: {value: 1k, tol: 300%}}\n"
                                      "analyses:\n  - {type: op}\n";
  const std::string args = fmt::format("run '{}' --mc 50", (dir / "huge.yaml").string());
  int rc = 0;
  const std::string one = run(args, rc);
  CHECK(rc == 2);
  CHECK(contains(one, "outside its range"));
  const std::string mpirun = mpirun_2();
  if (mpirun.empty()) return;
  const std::string two = shell(mpirun + " " + args, rc);
  INFO(two);
  CHECK(rc != 0);
  CHECK(contains(two, "outside its range"));
}

TEST_CASE("checkpoint: nn mc killed after its first checkpoint resumes to byte-identical results") {
  const fs::path dir = scratch("kill");
  const fs::path ck = dir / "ck.h5";
  const std::string args = nn_setup(dir) + " --trials 25 --seed 11 --sweep sigma_g=0.02,0.1";
  int rc = 0;
  std::string out = run_threads(2, args + " -o '" + (dir / "full.h5").string() + "'", rc);
  INFO(out);
  REQUIRE(rc == 0);

  // Start the same run with a checkpoint on 1 thread and kill it (SIGKILL) as soon as the checkpoint appears.
  const std::string cmd = fmt::format("exec env OMP_NUM_THREADS=1 {} {} --checkpoint '{}' -o '{}' > /dev/null 2>&1",
                                      ANASIM_BINARY, args, ck.string(), (dir / "resumed.h5").string());
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto t0 = std::chrono::steady_clock::now();
  while (!fs::exists(ck) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(fs::exists(ck));
  const bool killed = WIFSIGNALED(status);
  CHECK(killed);
  CHECK_FALSE(fs::exists(dir / "resumed.h5"));  // killed before the end: no output yet
  fs::copy_file(ck, dir / "partial.h5");

  out = run_threads(2, args + " --checkpoint '" + ck.string() + "' -o '" + (dir / "resumed.h5").string() + "'", rc);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(contains(out, "resumed"));
  CHECK(contains(out, "of 50 trials from the checkpoint"));
  CHECK(read_bytes(dir / "full.h5") == read_bytes(dir / "resumed.h5"));

  // The finished checkpoint holds every trial: a rerun reproduces the results without computing any.
  out = run(args + " --checkpoint '" + ck.string() + "' -o '" + (dir / "again.h5").string() + "'", rc);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(contains(out, "resumed 50 of 50 trials"));
  CHECK(read_bytes(dir / "full.h5") == read_bytes(dir / "again.h5"));

  // The partial checkpoint resumed on 2 ranks: the same results.
  const std::string mpirun = mpirun_2();
  if (mpirun.empty()) return;
  out = shell(mpirun + " " + args + " --checkpoint '" + (dir / "partial.h5").string() + "' -o '" +
                  (dir / "two.h5").string() + "'",
              rc);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(contains(out, "of 50 trials from the checkpoint"));
  CHECK(read_bytes(dir / "full.h5") == read_bytes(dir / "two.h5"));
}

TEST_CASE("checkpoint: run --mc resumes; a checkpoint of another run is refused naming what differs") {
  const fs::path dir = scratch("mismatch");
  std::ofstream(dir / "div.yaml") << kDivider;
  const fs::path ck = dir / "ck.h5";
  const std::string run_args = fmt::format("run '{}' --mc 30 --seed 3", (dir / "div.yaml").string());
  int rc = 0;
  std::string out = run(run_args + " --checkpoint '" + ck.string() + "' -o '" + (dir / "a.h5").string() + "'", rc);
  INFO(out);
  REQUIRE(rc == 0);
  REQUIRE(fs::exists(ck));
  out = run(run_args + " --checkpoint '" + ck.string() + "' -o '" + (dir / "b.h5").string() + "'", rc);
  REQUIRE(rc == 0);
  CHECK(read_mc(dir / "a.h5") == read_mc(dir / "b.h5"));

  out = run(fmt::format("run '{}' --mc 30 --seed 4 --checkpoint '{}'", (dir / "div.yaml").string(), ck.string()), rc);
  CHECK(rc == 2);
  CHECK(contains(out, "belongs to another run"));
  CHECK(contains(out, "arguments differ"));
  CHECK(contains(out, "seed=3"));
  CHECK(contains(out, "seed=4"));
  std::ofstream(dir / "div.yaml", std::ios::app) << "  - {type: op}\n";  // the netlist edited
  out = run(run_args + " --checkpoint '" + ck.string() + "'", rc);
  CHECK(rc == 2);
  CHECK(contains(out, "netlist differ"));

  // nn mc: another hardware file, another seed, and a run --mc checkpoint.
  const std::string nn_args = nn_setup(dir) + " --trials 3 --seed 5";
  out = run(nn_args + " --checkpoint '" + (dir / "nn.h5").string() + "'", rc);
  REQUIRE(rc == 0);
  std::ofstream(dir / "hw.yaml") << "hardware:\n  tile_rows: 48\n  tile_cols: 8\n  calib_samples: 100\n  sigma_g: 0.06\n";
  out = run(nn_args + " --checkpoint '" + (dir / "nn.h5").string() + "'", rc);
  CHECK(rc == 2);
  CHECK(contains(out, "hardware differ"));
  CHECK_FALSE(contains(out, "arguments differ"));
  out = run(nn_args + " --checkpoint '" + ck.string() + "'", rc);
  CHECK(rc == 2);
  CHECK(contains(out, "command differ"));
}

TEST_CASE("mpi: nn energy gives the same per-image results bit for bit on 1 rank x 1 or 2 threads, 2 ranks x 1") {
  const fs::path dir = scratch("nn_energy");
  std::string args = nn_setup(dir, 0.05, 28);
  args.replace(0, std::string("nn mc").size(), "nn energy");
  args += " --samples 6";
  // Each run's per-sample file and its checkpoint (every image's results at full precision).
  auto with_files = [&](const std::string& name) {
    return fmt::format("{} --per-sample '{}' --checkpoint '{}'", args, (dir / (name + ".csv")).string(),
                       (dir / (name + ".h5")).string());
  };
  int rc = 0;
  for (int threads : {1, 2}) {
    const std::string out = run_threads(threads, with_files(fmt::format("t{}", threads)), rc);
    INFO(out);
    REQUIRE(rc == 0);
  }
  CHECK(read_bytes(dir / "t1.csv").size() > 40);
  CHECK(read_bytes(dir / "t1.csv") == read_bytes(dir / "t2.csv"));
  const std::vector<std::uint64_t> bits = energy_bits(dir / "t2.h5");
  CHECK(bits.size() > 6 * 10);
  CHECK(energy_bits(dir / "t1.h5") == bits);
  const std::string mpirun = mpirun_2();
  if (mpirun.empty()) return;
  std::string two = shell(mpirun + " " + with_files("two"), rc);
  INFO(two);
  REQUIRE(rc == 0);
  CHECK(read_bytes(dir / "two.csv") == read_bytes(dir / "t2.csv"));
  CHECK(energy_bits(dir / "two.h5") == bits);
}

namespace {

// Starts `cmd` (a shell command line) and kills it with SIGKILL as soon as `ck` exists. True if it was killed
// (false: it finished first, or no checkpoint appeared within 60 s).
bool kill_after_checkpoint(const std::string& cmd, const fs::path& ck) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec " + cmd + " > /dev/null 2>&1").c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto t0 = std::chrono::steady_clock::now();
  while (!fs::exists(ck) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return fs::exists(ck) && WIFSIGNALED(status);
}

// An nn energy --json summary without its wall time (the one field that differs between equal runs).
std::string without_seconds(const std::string& json) { return json.substr(0, json.find("\"seconds\"")); }

}  // namespace

TEST_CASE("checkpoint: the nn_mc analysis of a netlist killed after its first checkpoint resumes to the same table") {
  const fs::path dir = scratch("nn_mc_analysis");
  nn_setup(dir);
  auto netlist = [&](const std::string& file, unsigned seed, const std::string& extra) {
    std::ofstream(dir / file) << "title: nn mc with a checkpoint\nanalyses:\n"
                              << "  - {type: nn_mc, model: m.h5, config: hw.yaml, trials: 25, seed: " << seed
                              << ", sweep: \"sigma_g=0.02,0.1\"" << extra << "}\n";
  };
  netlist("plain.yaml", 11, "");
  netlist("ck.yaml", 11, ", checkpoint: ck.h5");  // relative to the netlist
  const fs::path ck = dir / "ck.h5";
  auto run_args = [&](const std::string& file, const std::string& csv) {
    return fmt::format("run '{}' --data '{}' --csv '{}'", (dir / file).string(), dir.string(), (dir / csv).string());
  };
  int rc = 0;
  std::string out = run_threads(2, run_args("plain.yaml", "full"), rc);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_FALSE(fs::exists(ck));

  // Killed on 1 thread, resumed on 2.
  CHECK(kill_after_checkpoint(fmt::format("env OMP_NUM_THREADS=1 {} {}", ANASIM_BINARY, run_args("ck.yaml", "resumed")),
                              ck));
  out = run_threads(2, run_args("ck.yaml", "resumed"), rc);
  INFO(out);
  REQUIRE(rc == 0);
  const std::string full = read_bytes(dir / "full" / "nn_mc.csv");
  CHECK(std::count(full.begin(), full.end(), '\n') == 26);
  CHECK(read_bytes(dir / "resumed" / "nn_mc.csv") == full);

  // Another seed with the same checkpoint: refused, saying which arguments differ.
  netlist("ck.yaml", 12, ", checkpoint: ck.h5");
  out = run(run_args("ck.yaml", "other"), rc);
  CHECK(rc == 2);
  CHECK(contains(out, "belongs to another run"));
  CHECK(contains(out, "arguments differ"));
  CHECK(contains(out, "seed=11"));
  CHECK(contains(out, "seed=12"));
  CHECK_FALSE(fs::exists(dir / "other" / "nn_mc.csv"));
}

TEST_CASE("checkpoint: nn energy killed after its first checkpoint resumes to byte-identical results") {
  const fs::path dir = scratch("nn_energy_ck");
  std::string base = nn_setup(dir);
  const std::string mc = base;
  base.replace(0, std::string("nn mc").size(), "nn energy");
  const std::string args = base + " --samples 60 --json";
  const fs::path ck = dir / "ck.h5";
  int rc = 0;
  const std::string full = run_threads(2, args + " --per-sample '" + (dir / "full.csv").string() + "'", rc);
  INFO(full);
  REQUIRE(rc == 0);

  // Killed on 1 thread, resumed on 2.
  const std::string resumed_args =
      args + " --checkpoint '" + ck.string() + "' --per-sample '" + (dir / "resumed.csv").string() + "'";
  CHECK(kill_after_checkpoint(fmt::format("env OMP_NUM_THREADS=1 {} {}", ANASIM_BINARY, resumed_args), ck));
  CHECK_FALSE(fs::exists(dir / "resumed.csv"));  // killed before the end: no output yet
  std::string out = run_threads(2, resumed_args, rc);  // stdout and stderr: "resumed N of 60 images ...", the JSON summary
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(contains(out, "of 60 images from the checkpoint"));
  CHECK(read_bytes(dir / "full.csv").size() > 60 * 10);
  CHECK(read_bytes(dir / "resumed.csv") == read_bytes(dir / "full.csv"));
  CHECK(without_seconds(out.substr(out.find('{'))) == without_seconds(full.substr(full.find('{'))));

  // The finished checkpoint: a rerun reproduces every image without computing one.
  out = run(resumed_args, rc);
  REQUIRE(rc == 0);
  CHECK(contains(out, "resumed 60 of 60 images"));

  // Another image count, the same checkpoint with nn mc, and another hardware file: refused, naming the field.
  out = run(fmt::format("{} --samples 30 --checkpoint '{}'", base, ck.string()), rc);
  CHECK(rc == 2);
  CHECK(contains(out, "arguments differ"));
  CHECK(contains(out, "samples=60"));
  CHECK(contains(out, "samples=30"));
  out = run(fmt::format("{} --trials 2 --checkpoint '{}'", mc, ck.string()), rc);
  CHECK(rc == 2);
  CHECK(contains(out, "command differ"));
  std::ofstream(dir / "hw.yaml") << "hardware:\n  tile_rows: 48\n  tile_cols: 8\n  calib_samples: 100\n  sigma_g: 0.06\n";
  out = run(fmt::format("{} --checkpoint '{}'", args, ck.string()), rc);
  CHECK(rc == 2);
  CHECK(contains(out, "hardware differ"));
}

// Progress lines (engine/distribute.hpp): an interval keeps a fast loop to one line a second and a short run silent;
// a long transient reports its simulated time (anasim run --progress).
TEST_CASE("progress: lines at most once an interval, none for a short run; a long transient's simulated time") {
  const fs::path dir = scratch("progress");
  const fs::path err = dir / "stderr.txt";
  std::string lines;
  {
    std::fflush(stderr);
    const int saved = ::dup(STDERR_FILENO);
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
    dist::set_progress(dist::ProgressMode::Always);
    dist::ProgressLine a(10, 0, "items", 0.05);
    a.update(1);  // within the interval: nothing
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    a.update(2, "note x");
    a.update(10);  // the last update of a run that printed: printed
    dist::ProgressLine b(10, 0, "quick", 1.0);
    b.update(5);
    b.update(10);  // a run shorter than its interval: silent
    dist::ProgressLine c(4, 0, "rounds");  // no interval: every update
    c.update(1);
    c.update(4);
    std::fflush(stderr);
    dist::set_progress(dist::ProgressMode::Auto);
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    lines = read_bytes(err);
  }
  INFO(lines);
  CHECK(lines.find("1/10 items") == std::string::npos);
  CHECK(lines.find("2/10 items, note x, ") != std::string::npos);
  CHECK(lines.find("10/10 items") != std::string::npos);
  CHECK(lines.find("quick") == std::string::npos);
  CHECK(lines.find("1/4 rounds") != std::string::npos);
  CHECK(lines.find("4/4 rounds") != std::string::npos);

  // 8,000,000 time points (4 s here, about 1.7 s on the fastest machine measured): at least the last line, with
  // t; a 3,000-point run: none.
  auto deck = [&](const std::string& name, const std::string& tstop) {
    const fs::path p = dir / name;
    std::ofstream(p) << "* progress\nV1 in 0 SIN(0 1 1k)\nR1 in out 1k\nC1 out 0 1u\n.tran 1u " << tstop
                     << " 0 1u\n.save v(out)\n.end\n";
    return p.string();
  };
  int rc = 0;
  std::string out = shell(fmt::format("{} run '{}' --progress", ANASIM_BINARY, deck("long.cir", "8")), rc);
  CHECK(rc == 0);
  CHECK(out.find("1000/1000 thousandths of tstop (8 s), t = 8 s, ") != std::string::npos);
  out = shell(fmt::format("{} run '{}' --progress", ANASIM_BINARY, deck("short.cir", "3m")), rc);
  CHECK(rc == 0);
  CHECK(out.find("thousandths of tstop") == std::string::npos);
}
