// Tests for engine/output_csv.cpp and engine/output_hdf5.cpp: write a small RunResults, read it back.
#include <doctest/doctest.h>
#include <H5Cpp.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <unistd.h>
#include <chrono>
#include <omp.h>
#include <thread>
#include <fmt/format.h>
#include "circuit_helpers.hpp"
#include "engine/output.hpp"
#include "engine/piece_writer.hpp"
#include "engine/rawfile.hpp"
#include "tests/hdf5_tables.hpp"
#include "tests/test_support.hpp"

using namespace anasim;
namespace fs = std::filesystem;

namespace {

constexpr double kPi = 3.14159265358979323846;

fs::path scratch(const std::string& name) { return test_support::scratch_dir("output", name); }

RunResults sample() {
  RunResults r;
  r.title = "rc divider";
  r.netlist = "tests/rc.cir";
  r.unknowns = 3;

  AnalysisResult op;
  op.kind = op.group = "op";
  op.signals = {{"v(in)", "V", {1.0}, {}}, {"v(out)", "V", {0.5}, {}}, {"i(v1)", "A", {-5e-4}, {}}};
  op.stats.newton_iterations = 3;
  op.stats.factorizations = 1;
  op.stats.refactorizations = 2;
  op.stats.solves = 3;
  op.stats.timepoints = 1;
  op.stats.seconds = 1.5e-4;
  r.analyses.push_back(op);

  AnalysisResult dc;
  dc.kind = dc.group = "dc";
  dc.sweep_name = "v1";
  dc.sweep_unit = "V";
  dc.sweep = {0.0, 0.5, 1.0, 0.0, 0.5, 1.0};
  dc.sweep2_name = "i1";
  dc.sweep2 = {0.0, 0.0, 0.0, 1e-3, 1e-3, 1e-3};
  std::vector<double> out;
  for (size_t k = 0; k < dc.sweep.size(); ++k) out.push_back(0.5 * dc.sweep[k] + 500.0 * dc.sweep2[k]);
  dc.signals = {{"v(out)", "V", out, {}}};
  dc.stats.timepoints = 6;
  r.analyses.push_back(dc);

  AnalysisResult tran;
  tran.kind = tran.group = "tran";
  tran.sweep_name = "time";
  tran.sweep_unit = "s";
  tran.sweep = {0.0, 1e-6, 2e-6, 3e-6};
  std::vector<double> vt;
  for (double t : tran.sweep) vt.push_back(1.0 - std::exp(-t / 1e-6));
  tran.signals = {{"v(out)", "V", vt, {}}, {"i(x1.v#branch/odd)", "A", {0.1, 0.2, 0.3, 0.4}, {}}};
  tran.stats.rejected = 2;
  tran.stats.timepoints = 4;
  r.analyses.push_back(tran);

  AnalysisResult tran2 = tran;
  tran2.group = "tran2";
  tran2.sweep = {0.0, 1.0};
  tran2.signals = {{"v(out)", "V", {7.0, 8.0}, {}}};
  r.analyses.push_back(tran2);

  AnalysisResult ac;
  ac.kind = ac.group = "ac";
  ac.sweep_name = "frequency";
  ac.sweep_unit = "Hz";
  ac.sweep = {1.0, 10.0, 100.0};
  ac.signals = {{"v(out)", "V", {1.0, 0.0, -1.0}, {0.0, -2.0, 1.0}},
                {"i(v1)", "A", {3.0, -1e-3, 0.0}, {4.0, 0.0, 0.0}}};
  r.analyses.push_back(ac);
  return r;
}

std::vector<std::vector<std::string>> read_csv(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}

double num(const std::string& s) { return std::stod(s); }

std::vector<double> read_dataset(const H5::Group& g, const std::string& name) {
  H5::DataSet d = g.openDataSet(name);
  hsize_t n = 0;
  d.getSpace().getSimpleExtentDims(&n);
  std::vector<double> x(n);
  if (n) d.read(x.data(), H5::PredType::NATIVE_DOUBLE);
  return x;
}

template <class Obj>
std::string read_str_attr(const Obj& o, const std::string& name) {
  H5::Attribute a = o.openAttribute(name);
  std::string s;
  a.read(a.getStrType(), s);
  return s;
}

template <class Obj>
std::int64_t read_int_attr(const Obj& o, const std::string& name) {
  std::int64_t v = 0;
  o.openAttribute(name).read(H5::PredType::NATIVE_INT64, &v);
  return v;
}

// A temporary of the output writers left behind: "<name>.tmp" (older writers) or ".<name>.XXXXXX" (OutputFile).
bool has_tmp(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (e.path().extension() == ".tmp" || (n.size() > 8 && n[0] == '.' && n[n.size() - 7] == '.')) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("output: format_shortest writes what fmt's \"{}\" writes") {
  std::vector<double> vs = {0.0, -0.0, 1.0, -1.0, 0.1, 0.0001, 0.00001, 1e-5, 1.5e-5, 123456.789, 1e15, 1e16, 1.5e16,
                            9999999999999998.0, 999999999999999.9, 0.3, 2.0 / 3.0, 1e-300, 5e-324, 1.7976931348623157e308,
                            2.2250738585072014e-308, std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
  for (int e = -30; e <= 30; ++e) {
    vs.push_back(std::pow(10.0, e));
    vs.push_back(-3.25 * std::pow(10.0, e));
  }
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int k = 0; k < 200000; ++k) {  // random bit patterns (every exponent, subnormals, NaNs) and circuit-like values
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    double d;
    std::memcpy(&d, &x, sizeof d);
    vs.push_back(d);
    vs.push_back(static_cast<double>(x >> 11) * 0x1p-53 * std::pow(10.0, static_cast<int>(x % 40) - 20));
    vs.push_back(std::round(static_cast<double>(x >> 11) * 0x1p-53 * 1e6) / 1e6);
  }
  int bad = 0;
  for (double v : vs) {
    char buf[kShortestChars];
    const std::string got(buf, format_shortest(v, buf)), want = fmt::format("{}", v);
    if (got != want && ++bad <= 5) CHECK_MESSAGE(got == want, "value " << want);
  }
  CHECK(bad == 0);
}

TEST_CASE("output: csv files per analysis") {
  const fs::path dir = scratch("csv") / "nested" / "out";  // does not exist yet
  const RunResults r = sample();
  Status s = write_csv(r, dir.string());
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  for (const char* f : {"op.csv", "dc.csv", "tran.csv", "tran2.csv", "ac.csv"}) CHECK(fs::exists(dir / f));
  CHECK_FALSE(has_tmp(dir));

  SUBCASE("op: header row and one data row, no sweep column") {
    auto t = read_csv(dir / "op.csv");
    REQUIRE(t.size() == 2);
    CHECK(t[0] == std::vector<std::string>{"v(in)", "v(out)", "i(v1)"});
    REQUIRE(t[1].size() == 3);
    CHECK(num(t[1][0]) == 1.0);
    CHECK(num(t[1][1]) == 0.5);
    CHECK(t[1][2] == "-0.0005");
  }
  SUBCASE("nested dc: inner and outer sweep columns") {
    auto t = read_csv(dir / "dc.csv");
    REQUIRE(t.size() == 7);
    CHECK(t[0] == std::vector<std::string>{"v1", "i1", "v(out)"});
    for (size_t k = 1; k < t.size(); ++k) {
      REQUIRE(t[k].size() == 3);
      CHECK(num(t[k][0]) == r.analyses[1].sweep[k - 1]);
      CHECK(num(t[k][1]) == r.analyses[1].sweep2[k - 1]);
      CHECK(num(t[k][2]) == doctest::Approx(r.analyses[1].signals[0].re[k - 1]).epsilon(1e-12));
    }
  }
  SUBCASE("tran: time column, numbers round-trip exactly") {
    auto t = read_csv(dir / "tran.csv");
    REQUIRE(t.size() == 5);
    CHECK(t[0] == std::vector<std::string>{"time", "v(out)", "i(x1.v#branch/odd)"});
    CHECK(t[2][0] == "1e-06");
    CHECK(t[2][1] == "0.6321205588285577");       // 1 - exp(-1), shortest form that reads back exactly
    CHECK(num(t[2][1]) == 1.0 - std::exp(-1.0));
    CHECK(num(t[4][2]) == 0.4);
    auto t2 = read_csv(dir / "tran2.csv");
    REQUIRE(t2.size() == 3);
    CHECK(t2[2] == std::vector<std::string>{"1", "8"});
  }
  SUBCASE("ac: magnitude and phase in degrees") {
    auto t = read_csv(dir / "ac.csv");
    REQUIRE(t.size() == 4);
    CHECK(t[0] == std::vector<std::string>{"frequency", "vm(out)", "vp(out)", "im(v1)", "ip(v1)"});
    CHECK(num(t[1][1]) == 1.0);
    CHECK(num(t[1][2]) == 0.0);
    CHECK(num(t[2][1]) == 2.0);
    CHECK(num(t[2][2]) == doctest::Approx(-90.0));
    CHECK(num(t[3][1]) == doctest::Approx(std::sqrt(2.0)));
    CHECK(num(t[3][2]) == doctest::Approx(135.0));
    CHECK(num(t[1][3]) == doctest::Approx(5.0));
    CHECK(num(t[1][4]) == doctest::Approx(std::atan2(4.0, 3.0) * 180.0 / kPi));
    CHECK(num(t[2][4]) == doctest::Approx(180.0));
  }
}

TEST_CASE("piece_writer: pieces come out in order, whichever thread formats them, also when the helper stalls") {
  // The helper thread sleeps 5 ms in every third piece it takes: past PieceWriter's takeover time, so the writer
  // formats those pieces itself (and the helper's late copies are dropped).
  auto run = [](size_t n, bool two, int stall_every, size_t fail_at, std::string& out, long& formatted) {
    out.clear();
    std::atomic<long> count{0};
    size_t puts = 0;
    auto format = [&](size_t k, fmt::memory_buffer& b) {
      ++count;
      if (stall_every > 0 && omp_get_thread_num() == 1 && k % stall_every == 1)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      fmt::format_to(std::back_inserter(b), "{}\n", k);
    };
    auto put = [&](const fmt::memory_buffer& b) {
      if (puts++ == fail_at) return false;
      out.append(b.data(), b.size());
      return true;
    };
    const bool ok = PieceWriter::run(n, two, format, put);
    formatted = count;
    return ok;
  };
  std::string expect;
  for (size_t k = 0; k < 200; ++k) expect += std::to_string(k) + "\n";
  std::string out;
  long formatted = 0;
  for (bool two : {false, true})
    for (int stall : {0, 3}) {
      CAPTURE(two);
      CAPTURE(stall);
      CHECK(run(200, two, stall, size_t(-1), out, formatted));
      CHECK(out == expect);
      CHECK(formatted >= 200);
    }
  // put() fails at the 51st piece: false, and nothing after it is written
  CHECK(!run(200, true, 3, 50, out, formatted));
  CHECK(out == expect.substr(0, expect.find("50\n")));
  CHECK(run(0, true, 0, size_t(-1), out, formatted));
  CHECK(out.empty());
}

TEST_CASE("output: large csv tables (a 40,001-column op, long transient and AC tables) read back exactly") {
  // Split by columns (an operating point of 40,001 signals: one row), by rows (a transient of 70,001 rows in
  // blocks of ~21,800, so blocks of odd length and a last short one), and an AC table of 30,001 rows.
  RunResults r;
  AnalysisResult op;
  op.kind = op.group = "op";
  for (int k = 0; k < 40001; ++k) op.signals.push_back({"v(n" + std::to_string(k) + ")", "V", {k * 0.001 - 3.7}, {}});
  op.signals[17].name = "v(a\"b)";  // a header field that needs quotes, in the first half
  r.analyses.push_back(op);
  AnalysisResult tr;
  tr.kind = tr.group = "tran";
  tr.sweep_name = "time";
  tr.signals = {{"v(x)", "V", {}, {}}, {"v(y)", "V", {}, {}}};
  for (int k = 0; k < 70001; ++k) {
    tr.sweep.push_back(k * 1e-9);
    tr.signals[0].re.push_back(std::sin(k * 0.01));
    tr.signals[1].re.push_back(1.0 / (k + 1));
  }
  r.analyses.push_back(tr);
  AnalysisResult ac;
  ac.kind = ac.group = "ac";
  ac.sweep_name = "frequency";
  ac.signals = {{"v(o)", "V", {}, {}}};
  for (int k = 0; k < 30001; ++k) {
    ac.sweep.push_back(1.0 + k);
    ac.signals[0].re.push_back(std::cos(k * 0.001));
    ac.signals[0].im.push_back(std::sin(k * 0.001));
  }
  r.analyses.push_back(ac);
  const fs::path dir = scratch("csv_large");
  REQUIRE(write_csv(r, dir.string()).ok());

  auto t = read_csv(dir / "op.csv");
  REQUIRE(t.size() == 2);
  REQUIRE(t[0].size() == 40001);
  REQUIRE(t[1].size() == 40001);
  CHECK(t[0][17] == "\"v(a\"\"b)\"");
  bool same = true;
  for (int k = 0; k < 40001; ++k)
    same = same && (k == 17 || t[0][k] == op.signals[k].name) && num(t[1][k]) == op.signals[k].re[0];
  CHECK(same);

  t = read_csv(dir / "tran.csv");
  REQUIRE(t.size() == 70002);
  same = true;
  for (int k = 0; k < 70001; ++k)
    same = same && t[k + 1].size() == 3 && num(t[k + 1][0]) == tr.sweep[k] && num(t[k + 1][1]) == tr.signals[0].re[k] &&
           num(t[k + 1][2]) == tr.signals[1].re[k];
  CHECK(same);

  t = read_csv(dir / "ac.csv");
  REQUIRE(t.size() == 30002);
  CHECK(t[0] == std::vector<std::string>{"frequency", "vm(o)", "vp(o)"});
  same = true;
  for (int k = 0; k < 30001; k += 7)
    same = same && num(t[k + 1][0]) == ac.sweep[k] && std::abs(num(t[k + 1][1]) - 1.0) < 1e-15 &&
           std::abs(num(t[k + 1][2]) - std::atan2(ac.signals[0].im[k], ac.signals[0].re[k]) * 180.0 / kPi) < 1e-9;
  CHECK(same);
}

TEST_CASE("output: transients streamed to their CSV files while they run give write_csv's files byte for byte") {
  // Two transients (the second from tstart, so it drops its first rows) of several sink blocks each, with the
  // power probes and energies; an operating point between them is kept in memory as before.
  const std::string deck =
      "stream\nv1 in 0 pulse(0 1 0 10n 10n 300n 600n)\nr1 in a 1k\nd1 a out dm\nc1 out 0 100p\nr2 out 0 10k\n"
      ".model dm d(is=1e-14)\n.options power\n.tran 0.1n 2u\n.op\n.tran 0.2n 2u 1u\n.end\n";
  const fs::path kept = scratch("stream_kept"), streamed = scratch("stream_streamed");
  fs::remove_all(streamed);
  REQUIRE(write_csv(test::run_deck(deck), kept.string()).ok());

  ParsedNetlist pn;
  REQUIRE(parse_spice_string(deck, "deck.cir", builtin_catalog(), pn).ok());
  FlatNetlist fn;
  REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
  std::vector<std::string> asked;
  {
    CsvOutput out;
    REQUIRE(out.open(streamed.string()).ok());
    StreamFactory f = [&](const std::string& group, RowSink*& sink) {
      asked.push_back(group);
      return out.stream(group, sink);
    };
    RunResults r;
    Status st = simulate(fn, builtin_catalog(), r, nullptr, &f);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    REQUIRE(r.analyses.size() == 3);
    CHECK(r.analyses[0].streamed);
    CHECK_FALSE(r.analyses[1].streamed);
    CHECK(r.analyses[2].streamed);
    CHECK(r.analyses[0].sweep.empty());
    CHECK(r.analyses[0].signals.at(0).re.empty());
    CHECK(r.analyses[0].stats.timepoints > 2 * 4096);  // several blocks through the stream
    REQUIRE(out.write(r).ok());
  }
  CHECK(asked == std::vector<std::string>{"tran", "tran2"});
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(kept)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"op.csv", "tran.csv", "tran2.csv"});
  for (const std::string& f : files) {
    CAPTURE(f);
    CHECK(test_support::read_file((kept / f).string()) == test_support::read_file((streamed / f).string()));
  }
  CHECK_FALSE(has_tmp(streamed));

  SUBCASE("with a .meas the rows are kept for it") {
    pn = ParsedNetlist();
    REQUIRE(parse_spice_string(deck.substr(0, deck.size() - 5) + ".meas tran vmax max v(out)\n.end\n", "deck.cir",
                               builtin_catalog(), pn).ok());
    fn = FlatNetlist();
    REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
    CsvOutput out;
    REQUIRE(out.open(streamed.string()).ok());
    bool called = false;
    StreamFactory f = [&](const std::string& group, RowSink*& sink) {
      called = true;
      return out.stream(group, sink);
    };
    RunResults r;
    REQUIRE(simulate(fn, builtin_catalog(), r, nullptr, &f).ok());
    CHECK_FALSE(called);
    CHECK_FALSE(r.analyses[0].streamed);
    CHECK(r.analyses[0].rows() > 0);
  }
}

TEST_CASE("output: transients spooled while they run give write_hdf5's tables") {
  // The deck of the CSV stream test: two transients (one from tstart) with power and energy tables beside the
  // voltages and currents, an operating point kept in memory.
  const std::string deck =
      "spool\nv1 in 0 pulse(0 1 0 10n 10n 300n 600n)\nr1 in a 1k\nd1 a out dm\nc1 out 0 100p\nr2 out 0 10k\n"
      ".model dm d(is=1e-14)\n.options power\n.tran 0.1n 2u\n.op\n.tran 0.2n 2u 1u\n.end\n";
  const fs::path dir = scratch("spool");
  const RunResults kept = test::run_deck(deck);
  REQUIRE(write_hdf5(kept, (dir / "kept.h5").string()).ok());
  ParsedNetlist pn;
  REQUIRE(parse_spice_string(deck, "deck.cir", builtin_catalog(), pn).ok());
  FlatNetlist fn;
  REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
  {
    Hdf5Output out;
    REQUIRE(out.open((dir / "spooled.h5").string()).ok());
    StreamFactory f = [&](const std::string& group, RowSink*& sink) { return out.stream(group, sink); };
    RunResults r;
    Status st = simulate(fn, builtin_catalog(), r, nullptr, &f);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    CHECK(r.analyses[0].streamed);
    CHECK_FALSE(r.analyses[1].streamed);
    CHECK(r.analyses[2].streamed);
    CHECK(r.analyses[0].sweep.empty());
    st = out.write(std::move(r));
    REQUIRE_MESSAGE(st.ok(), st.to_string());
  }
  CHECK_FALSE(has_tmp(dir));
  H5::H5File a((dir / "kept.h5").string(), H5F_ACC_RDONLY), b((dir / "spooled.h5").string(), H5F_ACC_RDONLY);
  for (const AnalysisResult& an : kept.analyses) {
    CAPTURE(an.group);
    const H5::Group ga = a.openGroup(an.group), gb = b.openGroup(an.group);
    const auto sa = test_support::read_signals(ga), sb = test_support::read_signals(gb);
    CHECK(sa.size() == an.signals.size());
    CHECK(sa == sb);
    CHECK(ga.getNumObjs() == gb.getNumObjs());
    CHECK(read_int_attr(ga, "timepoints") == read_int_attr(gb, "timepoints"));
    if (an.kind == "tran") {
      CHECK(read_dataset(gb, "time") == an.sweep);
      CHECK(test_support::read_signals(gb, "values").count("e(total)") == 1);
    }
  }
}

namespace {
// Every plot of raw file `path` against the analyses of `r` (kept), plot k holding analysis order[k]: plot names,
// variables (the sweep first), and every value bit for bit (the file holds the doubles themselves).
void check_raw(const fs::path& path, const RunResults& r, const std::vector<int>& order) {
  std::vector<RawPlot> plots;
  const Status st = read_spice_raw(path.string(), plots);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  REQUIRE(plots.size() == r.analyses.size());
  REQUIRE(order.size() == plots.size());
  for (size_t k = 0; k < plots.size(); ++k) {
    const AnalysisResult& a = r.analyses[order[k]];
    const RawPlot& p = plots[k];
    CHECK(p.title == r.title);
    CAPTURE(a.group);
    CHECK(p.complex == a.complex());
    const bool scale = !a.sweep_name.empty();
    REQUIRE(p.names.size() == a.signals.size() + (scale ? 1 : 0));
    if (scale) CHECK(p.re[0] == a.sweep);
    for (size_t i = 0; i < a.signals.size(); ++i) {
      const size_t v = i + (scale ? 1 : 0);
      CHECK(p.names[v] == a.signals[i].name);
      CHECK(p.re[v] == a.signals[i].re);
      if (a.complex()) CHECK(p.im[v] == a.signals[i].im);
    }
  }
  CHECK(plots[0].plotname == "Transient Analysis");
}
}  // namespace

TEST_CASE("output: SPICE raw files hold every analysis's values exactly, streamed or kept") {
  // (the stream's plots are written into the file as they run: with a failure before write(), nothing is left)
  const std::string deck =
      "raw\nv1 in 0 dc 1 ac 1 pulse(0 1 0 10n 10n 300n 600n)\nr1 in a 1k\nd1 a out dm\nc1 out 0 100p\n"
      "r2 out 0 10k\n.model dm d(is=1e-14)\n.options power\n.tran 0.1n 2u\n.op\n.dc v1 0 1 0.1\n"
      ".ac dec 5 1k 1g\n.tran 0.2n 2u 1u\n.end\n";
  const fs::path dir = scratch("raw");
  const RunResults kept = test::run_deck(deck);
  REQUIRE(kept.analyses.size() == 5);
  REQUIRE(write_raw(kept, (dir / "kept.raw").string()).ok());
  check_raw(dir / "kept.raw", kept, {0, 1, 2, 3, 4});
  ParsedNetlist pn;
  REQUIRE(parse_spice_string(deck, "deck.cir", builtin_catalog(), pn).ok());
  FlatNetlist fn;
  REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
  {
    RawOutput out;
    REQUIRE(out.open((dir / "streamed.raw").string(), fn.title).ok());
    StreamFactory f = [&](const std::string& group, RowSink*& sink) { return out.stream(group, sink); };
    RunResults r;
    Status st = simulate(fn, builtin_catalog(), r, nullptr, &f);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    CHECK(r.analyses[0].streamed);
    CHECK(r.analyses[4].streamed);
    st = out.write(r);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
  }
  CHECK_FALSE(has_tmp(dir));
  check_raw(dir / "streamed.raw", kept, {0, 4, 1, 2, 3});  // the transients written as they ran, then the rest
  {  // streamed into the file, then destroyed without write() (as when the run fails): no file, no temporary
    RawOutput out;
    REQUIRE(out.open((dir / "failed.raw").string(), fn.title).ok());
    StreamFactory f = [&](const std::string& group, RowSink*& sink) { return out.stream(group, sink); };
    RunResults r;
    REQUIRE(simulate(fn, builtin_catalog(), r, nullptr, &f).ok());
  }
  CHECK_FALSE(fs::exists(dir / "failed.raw"));
  CHECK_FALSE(has_tmp(dir));
}

TEST_CASE("output: csv overwrites existing files") {
  const fs::path dir = scratch("csv_overwrite");
  RunResults r = sample();
  REQUIRE(write_csv(r, dir.string()).ok());
  r.analyses[0].signals[1].re[0] = 0.25;
  REQUIRE(write_csv(r, dir.string()).ok());
  auto t = read_csv(dir / "op.csv");
  REQUIRE(t.size() == 2);
  CHECK(num(t[1][1]) == 0.25);
  CHECK_FALSE(has_tmp(dir));
}

TEST_CASE("output: csv failures are reported and leave no temporary file") {
  const fs::path base = scratch("csv_fail");
  const RunResults r = sample();

  SUBCASE("directory cannot be created") {
    std::ofstream(base / "plainfile") << "x";
    Status s = write_csv(r, (base / "plainfile" / "out").string());
    REQUIRE_FALSE(s.ok());
    CHECK(s.errors[0].kind == ErrorKind::Other);
    CHECK(s.to_string().find("plainfile") != std::string::npos);
    CHECK_FALSE(fs::exists(base / "plainfile" / "out"));
  }
  SUBCASE("rename onto a directory fails") {
    fs::create_directories(base / "dc.csv" / "sub");
    Status s = write_csv(r, base.string());
    REQUIRE_FALSE(s.ok());
    CHECK(s.errors[0].kind == ErrorKind::Other);
    CHECK(s.to_string().find("dc.csv") != std::string::npos);
    CHECK_FALSE(has_tmp(base));
    CHECK_FALSE(fs::exists(base / "tran.csv"));  // stops at the first failure
  }
  SUBCASE("inconsistent column lengths") {
    RunResults bad = r;
    bad.analyses[2].signals[0].re.pop_back();
    Status s = write_csv(bad, base.string());
    REQUIRE_FALSE(s.ok());
    CHECK(s.to_string().find("tran.csv") != std::string::npos);
    CHECK_FALSE(fs::exists(base / "tran.csv"));
    CHECK_FALSE(has_tmp(base));
  }
}

TEST_CASE("output: hdf5 from a result given away holds what the kept result's file holds, the waveforms freed") {
  const fs::path dir = scratch("hdf5_release");
  RunResults r = sample();
  // A large transient beside the sample's analyses: 3,000 signals of 5,000 points (120 MB), several trims.
  AnalysisResult big;
  big.kind = "tran";
  big.group = "tran9";
  big.sweep_name = "time";
  big.sweep_unit = "s";
  for (int k = 0; k < 5000; ++k) big.sweep.push_back(k * 1e-9);
  for (int j = 0; j < 3000; ++j) {
    Signal sg{fmt::format("v(n{})", j), "V", {}, {}};
    for (int k = 0; k < 5000; ++k) sg.re.push_back(std::sin(0.001 * k * (j + 1)));
    big.signals.push_back(std::move(sg));
  }
  r.analyses.push_back(std::move(big));
  const Status kept = write_hdf5(r, (dir / "kept.h5").string());
  REQUIRE_MESSAGE(kept.ok(), kept.to_string());
  RunResults given = r;
  REQUIRE(write_hdf5(std::move(given), (dir / "given.h5").string()).ok());
  for (const AnalysisResult& a : given.analyses) {
    CAPTURE(a.group);
    for (const Signal& sg : a.signals)
      if (!a.complex()) CHECK(sg.re.empty());
  }
  CHECK(given.analyses[0].stats.newton_iterations == r.analyses[0].stats.newton_iterations);
  H5::H5File a((dir / "kept.h5").string(), H5F_ACC_RDONLY), b((dir / "given.h5").string(), H5F_ACC_RDONLY);
  for (const AnalysisResult& an : r.analyses) {
    if (an.complex()) continue;
    CAPTURE(an.group);
    const auto sa = test_support::read_signals(a.openGroup(an.group)), sb = test_support::read_signals(b.openGroup(an.group));
    CHECK(sa.size() == an.signals.size());
    CHECK(sa == sb);
  }
  CHECK(test_support::read_signals(b.openGroup("tran9")).at("v(n2999)") == r.analyses.back().signals.back().re);
}

TEST_CASE("output: hdf5 groups, datasets and attributes") {
  const fs::path dir = scratch("hdf5");
  const fs::path file = dir / "run.h5";
  const RunResults r = sample();
  Status s = write_hdf5(r, file.string());
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  CHECK(fs::exists(file));
  CHECK_FALSE(has_tmp(dir));

  H5::H5File h(file.string(), H5F_ACC_RDONLY);
  CHECK(read_str_attr(h, "title") == "rc divider");
  CHECK(read_str_attr(h, "netlist") == "tests/rc.cir");
  CHECK(read_int_attr(h, "unknowns") == 3);
  CHECK(h.getNumObjs() == 5);

  SUBCASE("op") {
    H5::Group g = h.openGroup("op");
    CHECK(read_str_attr(g, "kind") == "op");
    CHECK(read_int_attr(g, "newton_iterations") == 3);
    CHECK(read_int_attr(g, "factorizations") == 1);
    CHECK(read_int_attr(g, "refactorizations") == 2);
    CHECK(read_int_attr(g, "solves") == 3);
    CHECK(read_int_attr(g, "timepoints") == 1);
    CHECK(read_int_attr(g, "rejected") == 0);
    double sec = 0;
    g.openAttribute("seconds").read(H5::PredType::NATIVE_DOUBLE, &sec);
    CHECK(sec == 1.5e-4);
    // One table per unit, rows in the order of the signals.
    CHECK(g.getNumObjs() == 2);
    H5::Group v = g.openGroup("voltages"), i = g.openGroup("currents");
    CHECK(test_support::table_names(v) == std::vector<std::string>{"v(in)", "v(out)"});
    CHECK(test_support::table_names(i) == std::vector<std::string>{"i(v1)"});
    CHECK(test_support::unit_of(v) == "V");
    CHECK(test_support::unit_of(v.openDataSet("values")) == "V");
    CHECK(test_support::unit_of(i.openDataSet("values")) == "A");
    hsize_t dims[2] = {0, 0};
    CHECK(v.openDataSet("values").getSpace().getSimpleExtentNdims() == 2);
    v.openDataSet("values").getSpace().getSimpleExtentDims(dims);
    CHECK((dims[0] == 2 && dims[1] == 1));
    CHECK(test_support::read_signal(g, "v(out)") == std::vector<double>{0.5});
    CHECK(test_support::read_signal(g, "i(v1)") == std::vector<double>{-5e-4});
  }
  SUBCASE("nested dc") {
    H5::Group g = h.openGroup("dc");
    CHECK(read_str_attr(g, "kind") == "dc");
    CHECK(read_str_attr(g, "sweep") == "v1");
    CHECK(read_str_attr(g, "sweep2") == "i1");
    CHECK(read_dataset(g, "v1") == r.analyses[1].sweep);
    CHECK(read_dataset(g, "i1") == r.analyses[1].sweep2);
    CHECK(read_str_attr(g.openDataSet("v1"), "unit") == "V");
    CHECK(read_str_attr(g.openDataSet("i1"), "unit") == "A");
    CHECK(test_support::read_signal(g, "v(out)") == r.analyses[1].signals[0].re);
    CHECK(read_int_attr(g, "timepoints") == 6);
  }
  SUBCASE("tran: names kept as given, '/' included") {
    H5::Group g = h.openGroup("tran");
    CHECK(read_dataset(g, "time") == r.analyses[2].sweep);
    CHECK(read_str_attr(g.openDataSet("time"), "unit") == "s");
    CHECK(test_support::read_signal(g, "v(out)") == r.analyses[2].signals[0].re);
    CHECK(test_support::read_signal(g, "i(x1.v#branch/odd)") == r.analyses[2].signals[1].re);
    CHECK(read_int_attr(g, "rejected") == 2);
    CHECK(test_support::read_signal(h.openGroup("tran2"), "v(out)") == std::vector<double>{7.0, 8.0});
  }
  SUBCASE("ac: magnitude and phase tables") {
    H5::Group g = h.openGroup("ac");
    CHECK(read_str_attr(g, "kind") == "ac");
    CHECK(read_dataset(g, "frequency") == r.analyses[4].sweep);
    CHECK(read_str_attr(g.openDataSet("frequency"), "unit") == "Hz");
    auto vm = test_support::read_signal(g, "v(out)", "magnitude");
    auto vp = test_support::read_signal(g, "v(out)", "phase");
    REQUIRE(vm.size() == 3);
    REQUIRE(vp.size() == 3);
    CHECK(vm[1] == doctest::Approx(2.0));
    CHECK(vp[1] == doctest::Approx(-90.0));
    CHECK(vm[2] == doctest::Approx(std::sqrt(2.0)));
    CHECK(vp[2] == doctest::Approx(135.0));
    CHECK(test_support::read_signal(g, "i(v1)", "magnitude")[0] == doctest::Approx(5.0));
    CHECK(test_support::read_signal(g, "i(v1)", "phase")[1] == doctest::Approx(180.0));
    H5::Group v = g.openGroup("voltages");
    CHECK(test_support::unit_of(v.openDataSet("magnitude")) == "V");
    CHECK(test_support::unit_of(v.openDataSet("phase")) == "deg");
    CHECK(test_support::unit_of(g.openGroup("currents").openDataSet("magnitude")) == "A");
    CHECK_FALSE(v.nameExists("values"));
  }
}

TEST_CASE("output: hdf5 of a 300,000-node operating point is a few tables, not a dataset per signal") {
  // The 2-million-resistor deck took 117 s with one dataset per signal; tables keep the object count fixed.
  RunResults r;
  AnalysisResult op;
  op.kind = op.group = "op";
  const int n = 300000;
  op.signals.reserve(n + 1);
  for (int k = 0; k < n; ++k) op.signals.push_back({fmt::format("v(x{})", k), "V", {1e-6 * k}, {}});
  op.signals.push_back({"i(v1)", "A", {-2.5}, {}});
  r.analyses.push_back(std::move(op));
  const fs::path file = scratch("hdf5_big") / "big.h5";
  REQUIRE(write_hdf5(r, file.string()).ok());
  H5::H5File h(file.string(), H5F_ACC_RDONLY);
  H5::Group g = h.openGroup("op");
  CHECK(g.getNumObjs() == 2);
  const auto all = test_support::read_signals(g);
  REQUIRE(all.size() == static_cast<std::size_t>(n + 1));
  bool same = true;
  for (int k = 0; k < n; k += 997) same = same && all.at(fmt::format("v(x{})", k)) == std::vector<double>{1e-6 * k};
  CHECK(same);
  CHECK(all.at("v(x299999)") == std::vector<double>{1e-6 * 299999});
  CHECK(all.at("i(v1)") == std::vector<double>{-2.5});
}

TEST_CASE("output: hdf5 failures are reported and leave nothing behind") {
  const fs::path base = scratch("hdf5_fail");
  const RunResults r = sample();

  SUBCASE("unwritable path") {
    std::ofstream(base / "plainfile") << "x";
    const fs::path file = base / "plainfile" / "run.h5";
    Status s = write_hdf5(r, file.string());
    REQUIRE_FALSE(s.ok());
    CHECK(s.errors[0].kind == ErrorKind::Other);
    CHECK(s.to_string().find("run.h5") != std::string::npos);
    CHECK_FALSE(has_tmp(base));
  }
  SUBCASE("duplicate group name") {
    RunResults bad = r;
    bad.analyses[3].group = "tran";
    const fs::path file = base / "dup.h5";
    Status s = write_hdf5(bad, file.string());
    REQUIRE_FALSE(s.ok());
    CHECK(s.to_string().find("dup.h5") != std::string::npos);
    CHECK_FALSE(fs::exists(file));
    CHECK_FALSE(has_tmp(base));
  }
  SUBCASE("existing file is kept when the new write fails") {
    const fs::path file = base / "keep.h5";
    REQUIRE(write_hdf5(r, file.string()).ok());
    const auto size = fs::file_size(file);
    RunResults bad = r;
    bad.analyses[3].group = "tran";
    CHECK_FALSE(write_hdf5(bad, file.string()).ok());
    CHECK(fs::file_size(file) == size);
    H5::H5File h(file.string(), H5F_ACC_RDONLY);
    CHECK(h.nameExists("tran2"));
    CHECK_FALSE(has_tmp(base));
  }
}
