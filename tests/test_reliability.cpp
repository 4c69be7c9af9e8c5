// Tests for hostile inputs and failing disks (issue 14): output files (engine/output_file.cpp) on a full disk,
// device nodes and concurrent writers; resource guards; bad input refused (IDX, numbers, seeds, nn options).
#include <doctest/doctest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <csignal>
#include <unistd.h>
#include <zlib.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <H5Cpp.h>
#include <fmt/format.h>
#include "circuit_helpers.hpp"
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/export_spice.hpp"
#include "engine/output.hpp"
#include "engine/output_file.hpp"
#include "engine/parse.hpp"
#include "nn/idx.hpp"
#include "hdf5_tables.hpp"
#include "test_support.hpp"

using namespace anasim;
namespace fs = std::filesystem;
using test_support::contains;

namespace {

fs::path scratch(const std::string& name) { return test_support::scratch_dir("reliability", name); }

std::string read_all(const fs::path& p) { return test_support::read_file(p); }

// Names in `dir` other than the ones listed (temporaries left behind).
std::vector<std::string> others(const fs::path& dir, const std::vector<std::string>& expected) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (std::find(expected.begin(), expected.end(), n) == expected.end()) out.push_back(n);
  }
  return out;
}

// A 64 KiB tmpfs mounted for the life of the object (root only); ok() false where the machine cannot mount one.
class SmallDisk {
 public:
  SmallDisk() : dir_(scratch("tmpfs")) {
    if (::geteuid() == 0 && ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=64k") == 0) mounted_ = true;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool ok() const { return mounted_; }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

// A result set of about `points` x 3 doubles (a transient) plus an operating point.
RunResults big_results(int points) {
  RunResults r;
  r.title = "big";
  AnalysisResult op;
  op.kind = op.group = "op";
  op.signals.push_back({"v(a)", "V", {1.0}, {}});
  r.analyses.push_back(op);
  AnalysisResult tr;
  tr.kind = tr.group = "tran";
  tr.sweep_name = "time";
  tr.sweep_unit = "s";
  Signal a{"v(a)", "V", {}, {}}, b{"v(b)", "V", {}, {}};
  for (int k = 0; k < points; ++k) {
    tr.sweep.push_back(k * 1e-9);
    a.re.push_back(0.1 * k);
    b.re.push_back(1.0 / (k + 1));
  }
  tr.signals = {a, b};
  r.analyses.push_back(tr);
  return r;
}

int run_cli(const std::string& args) {
  const int rc = std::system(fmt::format("{} {}", ANASIM_BINARY, args).c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

FlatNetlist flat(const std::string& deck) {
  ParsedNetlist pn;
  Status st = parse_spice_string(deck, "deck.cir", builtin_catalog(), pn);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  FlatNetlist fn;
  st = elaborate(pn, builtin_catalog(), fn);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  return fn;
}

}  // namespace

TEST_CASE("reliability: a full disk never replaces a good output") {
  SmallDisk disk;
  if (!disk.ok()) {
    MESSAGE("skipped: cannot mount a 64 KiB tmpfs (needs root and mount permission)");
    return;
  }
  const fs::path d = disk.dir();
  const std::string big(200000, 'x');

  SUBCASE("one file") {
    REQUIRE(write_output_file((d / "f.txt").string(), "good\n").ok());
    Status st = write_output_file((d / "f.txt").string(), big);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "No space left on device"));
    CHECK(read_all(d / "f.txt") == "good\n");
    CHECK(others(d, {"f.txt"}).empty());
  }
  SUBCASE("HDF5: the error, the old file kept, no temporary") {
    REQUIRE(write_hdf5(big_results(10), (d / "r.h5").string()).ok());
    const std::string before = read_all(d / "r.h5");
    Status st = write_hdf5(big_results(20000), (d / "r.h5").string());
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "No space left on device"));
    CHECK(read_all(d / "r.h5") == before);
    CHECK(others(d, {"r.h5"}).empty());
    H5::H5File h((d / "r.h5").string(), H5F_ACC_RDONLY);  // still a readable file
    CHECK(h.nameExists("tran"));
  }
  SUBCASE("CSV set: all or none") {
    REQUIRE(write_csv(big_results(10), (d / "csv").string()).ok());
    const std::string op_before = read_all(d / "csv" / "op.csv"), tran_before = read_all(d / "csv" / "tran.csv");
    RunResults r = big_results(20000);
    r.analyses[0].signals[0].re[0] = 2.0;  // op.csv would change too
    REQUIRE_FALSE(write_csv(r, (d / "csv").string()).ok());
    CHECK(read_all(d / "csv" / "op.csv") == op_before);
    CHECK(read_all(d / "csv" / "tran.csv") == tran_before);
    CHECK(others(d / "csv", {"op.csv", "tran.csv"}).empty());
  }
  SUBCASE("CSV stream: the transient stops at the full disk, nothing left behind") {
    FlatNetlist fn = flat("t\nv1 a 0 sin(0 1 1meg)\nr1 a b 1k\nc1 b 0 1n\n.tran 1n 100u\n.end\n");
    RunResults r;
    Status st;
    {
      CsvOutput out;
      REQUIRE(out.open((d / "s").string()).ok());
      StreamFactory f = [&](const std::string& group, RowSink*& sink) { return out.stream(group, sink); };
      st = simulate(fn, builtin_catalog(), r, nullptr, &f);
    }
    REQUIRE_FALSE(st.ok());
    CHECK_MESSAGE(contains(st.to_string(), "No space left on device"), st.to_string());
    CHECK_MESSAGE(contains(st.to_string(), "tran.csv"), st.to_string());
    CHECK_FALSE(fs::exists(d / "s"));  // created by the run, removed with its temporaries
    CHECK(others(d, {}).empty());
  }
  SUBCASE("SPICE export") {
    FlatNetlist fn = flat("t\nv1 a 0 1\nr1 a 0 1k\n.op\n.end\n");
    REQUIRE(export_spice(fn, (d / "deck.cir").string()).ok());
    const std::string before = read_all(d / "deck.cir");
    REQUIRE(write_output_file((d / "filler").string(), std::string(60000, 'f')).ok());
    fn.title = std::string(20000, 't');
    CHECK_FALSE(export_spice(fn, (d / "deck.cir").string()).ok());
    CHECK(read_all(d / "deck.cir") == before);
    CHECK(others(d, {"deck.cir", "filler"}).empty());
  }
  SUBCASE("CLI: run -o and export on a full disk exit non-zero without a crash") {
    const fs::path deck = scratch("cli_deck") / "rc.cir";
    std::ofstream(deck) << "rc\nv1 in 0 pulse(0 1 0 1n 1n 1u 2u)\nr1 in out 1k\nc1 out 0 1n\n.tran 1n 20u\n.end\n";
    CHECK(run_cli(fmt::format("run {} -o {}/o.h5 > /dev/null 2>&1", deck.string(), d.string())) == 1);
    CHECK(run_cli(fmt::format("run {} --csv {}/csv2 > /dev/null 2>&1", deck.string(), d.string())) == 1);
    CHECK_FALSE(fs::exists(d / "o.h5"));
  }
}

TEST_CASE("reliability: output targets") {
  const fs::path d = scratch("targets");
  SUBCASE("two writers of one target never share a temporary") {
    OutputFile a, b;
    REQUIRE(a.open((d / "x").string()).ok());
    REQUIRE(b.open((d / "x").string()).ok());
    CHECK(others(d, {}).size() == 2);
    a.write("first\n", 6);
    b.write("second\n", 7);
    REQUIRE(a.commit().ok());
    REQUIRE(b.commit().ok());
    CHECK(read_all(d / "x") == "second\n");
    CHECK(others(d, {"x"}).empty());
  }
  SUBCASE("an uncommitted file leaves nothing") {
    {
      OutputFile a;
      REQUIRE(a.open((d / "y").string()).ok());
      a.write("partial", 7);
    }
    CHECK(others(d, {}).empty());
  }
  SUBCASE("device nodes and directories are refused") {
    Status st = write_output_file("/dev/null", "x");
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "character device"));
    struct stat s {};
    REQUIRE(::stat("/dev/null", &s) == 0);
    CHECK(S_ISCHR(s.st_mode));
    fs::create_directories(d / "dir");
    CHECK(contains(write_output_file((d / "dir").string(), "x").to_string(), "directory"));
    CHECK(contains(write_hdf5(big_results(2), "/dev/null").to_string(), "character device"));
  }
  SUBCASE("new files get the usual permissions") {
    REQUIRE(write_output_file((d / "p").string(), "x").ok());
    const mode_t mask = ::umask(022);
    ::umask(mask);
    CHECK((fs::status(d / "p").permissions() & fs::perms::all) == (static_cast<fs::perms>(0666 & ~mask)));
  }
  SUBCASE("stdout names") {
    CHECK(is_stdout_name("-"));
    CHECK(is_stdout_name("/dev/stdout"));
    CHECK_FALSE(is_stdout_name("./-x"));
  }
}

TEST_CASE("reliability: write errors on standard output fail the command") {
  const fs::path deck = scratch("stdout") / "r.cir";
  std::ofstream(deck) << "r\nv1 a 0 1\nr1 a 0 1k\n.op\n.end\n";
  CHECK(run_cli(fmt::format("run {} > /dev/full 2>/dev/null", deck.string())) == 1);
  CHECK(run_cli(fmt::format("export {} --spice - > /dev/full 2>/dev/null", deck.string())) == 1);
  CHECK(run_cli(fmt::format("export {} --spice - > /dev/null 2>&1", deck.string())) == 0);
  CHECK(run_cli(fmt::format("export {} --spice /dev/null > /dev/null 2>&1", deck.string())) == 1);
}

TEST_CASE("reliability: HDF5 names that map to one link stay apart") {
  RunResults r = big_results(3);
  r.analyses[1].signals[0].name = "v(a/b)";
  r.analyses[1].signals[1].name = "v(a|b)";
  r.analyses[1].measures = {{"m/x", "V", 1.0, ""}, {"m|x", "V", 2.0, ""}};  // .meas names are links
  const fs::path f = scratch("names") / "n.h5";
  REQUIRE(write_hdf5(r, f.string()).ok());
  H5::H5File h(f.string(), H5F_ACC_RDONLY);
  H5::Group g = h.openGroup("tran");
  // Signal names are data in the table: both kept as given, each with its own values.
  CHECK(test_support::table_names(g.openGroup("voltages")) == std::vector<std::string>{"v(a/b)", "v(a|b)"});
  CHECK(test_support::read_signal(g, "v(a/b)") == r.analyses[1].signals[0].re);
  CHECK(test_support::read_signal(g, "v(a|b)") == r.analyses[1].signals[1].re);
  H5::Group m = g.openGroup("measurements");
  CHECK(m.nameExists("m|x"));
  CHECK(m.nameExists("m|x~2"));
  H5::DataSet d = m.openDataSet("m|x");
  REQUIRE(d.attrExists("name"));
  H5::Attribute a = d.openAttribute("name");
  std::string name;
  a.read(a.getStrType(), name);
  CHECK(name == "m/x");
  double v = 0;
  m.openDataSet("m|x~2").read(&v, H5::PredType::NATIVE_DOUBLE);
  CHECK(v == 2.0);
  H5::Attribute a2 = m.openDataSet("m|x~2").openAttribute("name");
  a2.read(a2.getStrType(), name);
  CHECK(name == "m|x");
}

TEST_CASE("reliability: SPICE export refuses node names ngspice cannot read") {
  for (const char* node : {"a;b", "a'b", "a\"b", "a=b"}) {
    FlatNetlist fn = flat("t\nv1 a 0 1\nr1 a 0 1k\n.op\n.end\n");
    fn.node_names[1] = node;
    Status st = check_spice_names(fn);
    CHECK_FALSE(st.ok());
    CHECK(contains(st.to_string(), node));
  }
  FlatNetlist fn = flat("t\nv1 a 0 1\nr1 a 0 1k\n.op\n.end\n");
  CHECK(check_spice_names(fn).ok());
}

TEST_CASE("reliability: a transient that fails while its CSV streams leaves nothing behind") {
  // b1 leaves sqrt's domain at t = 5 us, after 5,000 rows went to the stream.
  FlatNetlist fn = flat("t\nv1 a 0 dc 1 pulse(1 -1 5u 1u 1u 1 2)\nr1 a 0 1k\nb1 out 0 v = sqrt(v(a))\n"
                        "r2 out 0 1k\n.tran 1n 10u\n.end\n");
  const fs::path d = scratch("stream_fail");
  std::ofstream(d / "tran.csv") << "old\n";
  RunResults r;
  Status st;
  {
    CsvOutput out;
    REQUIRE(out.open((d / "new").string()).ok());
    CsvOutput in_place;
    REQUIRE(in_place.open(d.string()).ok());
    StreamFactory f = [&](const std::string& group, RowSink*& sink) { return in_place.stream(group, sink); };
    st = simulate(fn, builtin_catalog(), r, nullptr, &f);
  }
  REQUIRE_FALSE(st.ok());
  CHECK_MESSAGE(contains(st.to_string(), "sqrt of a negative argument"), st.to_string());
  CHECK(read_all(d / "tran.csv") == "old\n");  // the previous output stays
  CHECK_FALSE(fs::exists(d / "new"));           // an output directory the run created is removed
  CHECK(others(d, {"tran.csv"}).empty());
}

TEST_CASE("reliability: a run stopped by SIGTERM or SIGINT while its CSV streams leaves no temporary") {
  const fs::path d = scratch("stream_signal");
  const fs::path deck = d / "long.cir";
  std::ofstream(deck) << "long\nv1 a 0 sin(0 1 1k)\nr1 a b 1k\nc1 b 0 1u\n.tran 0.2u 1 0 0.2u\n.end\n";
  for (int sig : {SIGTERM, SIGINT}) {
    CAPTURE(sig);
    const fs::path out = d / "out";
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, STDOUT_FILENO);
      ::dup2(devnull, STDERR_FILENO);
      ::execl(ANASIM_BINARY, ANASIM_BINARY, "run", deck.c_str(), "--csv", out.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Wait for the stream's temporary (the run has 5 million points: seconds), then stop the run.
    bool streaming = false;
    for (int k = 0; k < 4000 && !streaming; ++k) {
      std::error_code ec;
      if (fs::exists(out, ec))
        for (const auto& e : fs::directory_iterator(out, ec))
          streaming = streaming || e.path().filename().string().rfind(".tran.csv.", 0) == 0;
      if (!streaming) ::usleep(5000);
    }
    CHECK(streaming);
    ::kill(pid, sig);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == sig);
    CHECK_FALSE(fs::exists(out));  // the temporary and the directory the run created are gone
  }
}

TEST_CASE("reliability: transient point-count guard") {
  for (const char* tran : {".tran 1n 1e300", ".tran 1e-300 1m", ".tran 1n 1m 0 1e-300"}) {
    RunResults r;
    Status st = test::run_deck_status(fmt::format("t\nv1 in 0 sin(0 1 1k)\nr1 in 0 1k\n{}\n.end\n", tran), r);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "time points"));
  }
}

TEST_CASE("reliability: negative PWL times are refused, located at the source") {
  RunResults r;
  Status st = test::run_deck_status("t\nv1 in 0 pwl(-1u 0 1u 1)\nr1 in 0 1k\n.tran 10n 2u\n.end\n", r);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "PWL times must not be negative"));
  CHECK(st.errors[0].loc.line == 2);
  CHECK(test::run_deck_status("t\nv1 in 0 pwl(0 0 1u 1)\nr1 in 0 1k\n.tran 10n 2u\n.end\n", r).ok());
}

TEST_CASE("reliability: a B source out of its function's domain names the function, device and line") {
  struct Case {
    const char* expr;   // b1's voltage; v(a) = -1 V (op) or 1 V falling to -1 V from t = 5 us (tran)
    const char* analysis;
    const char* says;   // the message names the function and the argument
  };
  const Case cases[] = {
      {"sqrt(v(a))", ".op", "b1 (deck.cir:4): sqrt of a negative argument"},
      {"log(v(a))", ".tran 1u 10u", "b1 (deck.cir:4): log of a negative argument"},
      {"1 / (v(a) + 1)", ".op", "b1 (deck.cir:4): division by zero"},
      {"acos(v(a) * 2)", ".op", "b1 (deck.cir:4): acos of an argument outside [-1, 1]"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.expr);
    const bool tran = std::string(c.analysis).rfind(".tran", 0) == 0;
    const std::string deck = fmt::format("t\nv1 a 0 dc {}\nr1 a 0 1k\nb1 out 0 v = {}\nr2 out 0 1k\n{}\n.end\n",
                                         tran ? "1 pulse(1 -1 5u 1u 1u 1 2)" : "-1", c.expr, c.analysis);
    RunResults r;
    const Status st = test::run_deck_status(deck, r);
    REQUIRE_FALSE(st.ok());
    CHECK_MESSAGE(contains(st.to_string(), c.says), st.to_string());
    CHECK_MESSAGE(contains(st.to_string(), tran ? " at t = 5." : " at DC"), st.to_string());
  }
}

TEST_CASE("reliability: a subcircuit fan-out stops at the device limit") {
  // 2^30 resistors from 30 levels of two instances each: refused at the limit (here 5,000 through the option;
  // the default is 10 million), in bounded time and memory; 2^12 fit under it.
  auto fan = [](int levels) {
    std::string deck = "fan-out\n.options maxdevices=5000\n.subckt s0 a\nr1 a 0 1k\n.ends\n";
    for (int k = 1; k <= levels; ++k)
      deck += fmt::format(".subckt s{} a\nxa a s{}\nxb a s{}\n.ends\n", k, k - 1, k - 1);
    deck += fmt::format("v1 in 0 1\nx1 in s{}\n.op\n.end\n", levels);
    ParsedNetlist pn;
    REQUIRE(parse_spice_string(deck, "fan.cir", builtin_catalog(), pn).ok());
    FlatNetlist fn;
    return elaborate(pn, builtin_catalog(), fn);
  };
  Status st = fan(30);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "expands to more than 5000 devices"));
  CHECK(fan(12).ok());
  CHECK(FlatNetlist{}.options.maxdevices == 10000000);
}

TEST_CASE("reliability: device files are not netlists") {
  ParsedNetlist pn;
  Status st = parse_netlist("/dev/zero", builtin_catalog(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "device"));
  st = parse_spice_string("t\n.include /dev/zero\nr1 a 0 1\n.op\n.end\n", "deck.cir", builtin_catalog(), pn);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.to_string(), "device"));
}

TEST_CASE("reliability: numbers beyond a double's range") {
  ParsedNetlist pn;
  FlatNetlist fn;
  for (const char* v : {"1e-400", "1e400"}) {
    Status st = parse_spice_string(fmt::format("t\nr1 a 0 {}\n.op\n.end\n", v), "deck.cir", builtin_catalog(), pn);
    if (st) st = elaborate(pn, builtin_catalog(), fn);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), fmt::format("number '{}' is out of range", v)));
  }
}

TEST_CASE("reliability: IDX header counts, CRC and empty sets") {
  const fs::path d = scratch("idx");
  auto be32 = [](std::vector<unsigned char>& b, std::uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
  };
  SUBCASE("a header promising more than the file holds is refused before allocating") {
    std::vector<unsigned char> b;
    be32(b, 0x801);
    be32(b, 2000000000u);
    b.resize(108, 1);
    std::ofstream(d / "l", std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
    std::vector<std::uint8_t> labels;
    Status st = nn::read_idx_labels((d / "l").string(), labels);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "more than the file can hold"));
    std::vector<unsigned char> im;
    be32(im, 0x803);
    be32(im, 80000000u);
    be32(im, 28);
    be32(im, 28);
    im.resize(1000, 0);
    std::ofstream(d / "i", std::ios::binary).write(reinterpret_cast<const char*>(im.data()), im.size());
    nn::IdxImages images;
    st = nn::read_idx_images((d / "i").string(), images);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.to_string(), "more than the file can hold"));
  }
  SUBCASE("a corrupt gzip byte is caught by the CRC") {
    std::vector<unsigned char> b;
    be32(b, 0x801);
    be32(b, 200000);
    for (int k = 0; k < 200000; ++k) b.push_back(static_cast<unsigned char>((k * 7) % 10));
    const std::string p = (d / "l.gz").string();
    gzFile f = gzopen(p.c_str(), "wb0");  // stored blocks: a flipped byte still decompresses
    REQUIRE(f);
    gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
    gzclose(f);
    std::vector<std::uint8_t> labels;
    REQUIRE(nn::read_idx_labels(p, labels).ok());
    std::string bytes = read_all(p);
    bytes[bytes.size() / 2] ^= 0x01;
    std::ofstream(p, std::ios::binary) << bytes;
    Status st = nn::read_idx_labels(p, labels);
    REQUIRE_FALSE(st.ok());
    // zlib reports "incorrect data check" (CRC-32) when it reaches the trailer, with the header or the payload.
    CHECK_MESSAGE(contains(st.to_string(), "incorrect data check"), st.to_string());
  }
}

TEST_CASE("reliability: command-line values that would be clamped or ignored") {
  const fs::path deck = scratch("cli_values") / "r.cir";
  std::ofstream(deck) << "r\nv1 a 0 1\nr1 a 0 1k\n.op\n.end\n";
  CHECK(run_cli(fmt::format("run {} --mc 2 --seed 99999999999999999999 > /dev/null 2>&1", deck.string())) == 2);
  CHECK(run_cli(fmt::format("run {} --mc 2 --seed -1 > /dev/null 2>&1", deck.string())) == 2);
  CHECK(run_cli(fmt::format("run {} --mc 2 --seed 18446744073709551615 > /dev/null 2>&1", deck.string())) == 0);
  // nn eval without --config: the hardware options would be ignored.
  CHECK(run_cli("nn eval no_such_model.h5 --samples 5 > /dev/null 2>&1") == 2);
  CHECK(run_cli("nn eval no_such_model.h5 --json > /dev/null 2>&1") == 2);
}

TEST_CASE("reliability: a diode bridge with rs = 1 fOhm runs as with rs = 0 (no stall on an undetermined node)") {
  auto deck = [](const char* rs) {
    return fmt::format(R"(* full-wave bridge, RC load
.model drect d(is=2.5e-9 n=1.75 rs={} cjo=40p vj=0.6 m=0.45 tt=4u)
vs ac1 ac2 dc 0 sin(0 10 50)
rsrc ac2 0 1meg
d1 ac1 pos drect
d2 ac2 pos drect
d3 neg ac1 drect
d4 neg ac2 drect
rgnd neg 0 1m
rl pos 0 500
cl pos 0 100u
.tran 5e-05 0.1 0 5e-06
.end
)", rs);
  };
  RunResults tiny, zero;
  Status st = test::run_deck_status(deck("1e-15"), tiny);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  REQUIRE(test::run_deck_status(deck("0"), zero).ok());
  const AnalysisResult& a = tiny.analyses.at(0);
  const AnalysisResult& b = zero.analyses.at(0);
  REQUIRE(a.sweep.size() == b.sweep.size());
  CHECK(a.find("v(pos)")->re == b.find("v(pos)")->re);
}
