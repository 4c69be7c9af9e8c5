// Tests for engine/rawfile.cpp: ASCII and binary SPICE raw files written here, and (if ngspice is on
// PATH) a real binary raw file from `ngspice -b -r`.
#include <doctest/doctest.h>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <unistd.h>
#include "engine/rawfile.hpp"
#include "tests/test_support.hpp"

using namespace anasim;
namespace fs = std::filesystem;

namespace {

constexpr double kPi = 3.14159265358979323846;

fs::path scratch(const std::string& name) { return test_support::scratch_dir("rawfile", name); }

fs::path write_file(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

void append_doubles(std::string& s, std::initializer_list<double> xs) {
  for (double x : xs) s.append(reinterpret_cast<const char*>(&x), sizeof x);
}

// As written by `write` in a .control block with `set filetype=ascii` (ngspice 39).
const char* kControlAscii =
    "Title: rc test\n"
    "Date: Sat Nov 21 11:32:21  2026\n"
    "Plotname: Operating Point\n"
    "Flags: real\n"
    "No. Variables: 3\n"
    "No. Points: 1\n"
    "Variables:\n"
    "\t0\tv(in)\tvoltage\n"
    "\t1\tv(out)\tvoltage\n"
    "\t2\ti(v1)\tcurrent\n"
    "Values:\n"
    " 0\t1.000000000000000e+00\n"
    "\t5.000000000000000e-01\n"
    "\t-5.000000000000000e-04\n"
    "\n";

// As written by `ngspice -b -r` with SPICE_ASCIIRAWFILE=1: padded point count, "0\t\t" index lines,
// "grid=3" after the type, several plots in one file.
const char* kBatchAscii =
    "Title: rc test\n"
    "Date: Sat Nov 21 11:32:30  2026\n"
    "Plotname: AC Analysis\n"
    "Flags: complex\n"
    "No. Variables: 3\n"
    "No. Points: 2       \n"
    "Variables:\n"
    "\t0\tfrequency\tfrequency\tgrid=3\n"
    "\t1\tv(OUT)\tvoltage\n"
    "\t2\ti(v.x1.v1)\tcurrent\n"
    "Values:\n"
    "0\t\t1.000000000000000e+00,-3.385804824274621e-27\n"
    "\t6.0e-01,-2.0e-01\n"
    "\t1.0e-03,0.0e+00\n"
    "\n"
    "1\t\t1.000000000000000e+01,0.000000000000000e+00\n"
    "\t5.0e-01,-5.0e-01\n"
    "\t-1.0e-03,2.5e-04\n"
    "\n"
    "Title: rc test\n"
    "Date: Sat Nov 21 11:32:30  2026\n"
    "Plotname: DC transfer characteristic\n"
    "Flags: real\n"
    "No. Variables: 2\n"
    "No. Points: 3       \n"
    "Variables:\n"
    "\t0\tv(v-sweep)\tvoltage\n"
    "\t1\tv(x1.mid)\tvoltage\n"
    "Values:\n"
    "0\t\t0.0\n\t0.0\n\n"
    "1\t\t0.5\n\t0.25\n\n"
    "2\t\t1.0\n\t0.5\n\n";

}  // namespace

TEST_CASE("rawfile: ascii operating point from a control block") {
  const fs::path dir = scratch("ascii_op");
  std::vector<RawPlot> plots;
  Status s = read_spice_raw(write_file(dir / "op.raw", kControlAscii).string(), plots);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(plots.size() == 1);
  const RawPlot& p = plots[0];
  CHECK(p.title == "rc test");
  CHECK(p.plotname == "Operating Point");
  CHECK_FALSE(p.complex);
  CHECK(p.names == std::vector<std::string>{"v(in)", "v(out)", "i(v1)"});
  CHECK(p.types == std::vector<std::string>{"voltage", "voltage", "current"});
  CHECK(p.points() == 1);
  CHECK(p.im.empty());
  CHECK(p.re[1][0] == 0.5);
  CHECK(p.re[2][0] == -5e-4);
  // Both spellings of a quantity, in any case.
  CHECK(p.find("v(out)") == 1);
  CHECK(p.find("V(OUT)") == 1);
  CHECK(p.find("out") == 1);
  CHECK(p.find("i(v1)") == 2);
  CHECK(p.find("v1#branch") == 2);
  CHECK(p.find("v(nope)") == -1);
  CHECK(p.find("i(in)") == -1);
}

TEST_CASE("rawfile: ascii batch file with several plots, complex values") {
  const fs::path dir = scratch("ascii_batch");
  std::vector<RawPlot> plots;
  Status s = read_spice_raw(write_file(dir / "batch.raw", kBatchAscii).string(), plots);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(plots.size() == 2);

  const RawPlot& ac = plots[0];
  CHECK(ac.plotname == "AC Analysis");
  CHECK(ac.complex);
  CHECK(ac.names == std::vector<std::string>{"frequency", "v(out)", "i(v.x1.v1)"});
  CHECK(ac.types[0] == "frequency");
  REQUIRE(ac.points() == 2);
  REQUIRE(ac.im.size() == 3);
  CHECK(ac.re[0] == std::vector<double>{1.0, 10.0});
  CHECK(ac.re[1][1] == 0.5);
  CHECK(ac.im[1][1] == -0.5);
  CHECK(ac.im[2][1] == 2.5e-4);
  CHECK(ac.find("v.x1.v1#branch") == 2);

  const RawPlot& dc = plots[1];
  CHECK(dc.title == "rc test");
  CHECK(dc.plotname == "DC transfer characteristic");
  CHECK_FALSE(dc.complex);
  CHECK(dc.names == std::vector<std::string>{"v(v-sweep)", "v(x1.mid)"});
  CHECK(dc.re[0] == std::vector<double>{0.0, 0.5, 1.0});
  CHECK(dc.re[1] == std::vector<double>{0.0, 0.25, 0.5});
  CHECK(dc.find("x1.mid") == 1);
}

TEST_CASE("rawfile: binary plots, real and complex") {
  const fs::path dir = scratch("binary");
  std::string text =
      "Title: bin\nDate: today\nPlotname: Transient Analysis\nFlags: real\nNo. Variables: 2\n"
      "No. Points: 3       \nVariables:\n\t0\ttime\ttime\n\t1\tv(out)\tvoltage\nBinary:\n";
  append_doubles(text, {0.0, 1.0, 1e-6, 0.75, 2e-6, -0.5});
  text += "Title: bin\nDate: today\nPlotname: AC Analysis\nFlags: complex\nNo. Variables: 2\n"
          "No. Points: 2\nVariables:\n\t0\tfrequency\tfrequency grid=3\n\t1\tv(out)\tvoltage\nBinary:\n";
  append_doubles(text, {1.0, 0.0, 0.5, -0.5, 10.0, 0.0, 0.1, -0.3});
  std::vector<RawPlot> plots;
  Status s = read_spice_raw(write_file(dir / "b.raw", text).string(), plots);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(plots.size() == 2);
  CHECK(plots[0].plotname == "Transient Analysis");
  CHECK(plots[0].re[0] == std::vector<double>{0.0, 1e-6, 2e-6});
  CHECK(plots[0].re[1] == std::vector<double>{1.0, 0.75, -0.5});
  CHECK(plots[1].complex);
  CHECK(plots[1].types[0] == "frequency");
  CHECK(plots[1].re[0] == std::vector<double>{1.0, 10.0});
  CHECK(plots[1].im[0] == std::vector<double>{0.0, 0.0});
  CHECK(plots[1].re[1] == std::vector<double>{0.5, 0.1});
  CHECK(plots[1].im[1] == std::vector<double>{-0.5, -0.3});

  SUBCASE("truncated binary data") {
    std::vector<RawPlot> p2;
    Status t = read_spice_raw(write_file(dir / "t.raw", text.substr(0, text.size() - 4)).string(), p2);
    REQUIRE_FALSE(t.ok());
    CHECK(t.errors[0].kind == ErrorKind::Input);
    CHECK(t.to_string().find("truncated") != std::string::npos);
  }
}

TEST_CASE("rawfile: malformed and missing files") {
  const fs::path dir = scratch("bad");
  std::vector<RawPlot> plots;

  Status s = read_spice_raw((dir / "missing.raw").string(), plots);
  REQUIRE_FALSE(s.ok());
  CHECK(s.errors[0].kind == ErrorKind::Other);
  CHECK(s.to_string().find("missing.raw") != std::string::npos);

  const std::string good = kControlAscii;
  // Cut inside the values: the last value line is missing.
  const std::string cut = good.substr(0, good.find("\t-5.0"));
  s = read_spice_raw(write_file(dir / "cut.raw", cut).string(), plots);
  REQUIRE_FALSE(s.ok());
  CHECK(s.errors[0].kind == ErrorKind::Input);
  CHECK(s.errors[0].loc.file() == (dir / "cut.raw").string());

  // Cut inside the variable list.
  s = read_spice_raw(write_file(dir / "vars.raw", good.substr(0, good.find("\t2\ti(v1)"))).string(), plots);
  REQUIRE_FALSE(s.ok());
  CHECK(s.to_string().find("variable") != std::string::npos);

  // A value that is not a number, reported at its line.
  std::string bad = good;
  bad.replace(bad.find("5.000000000000000e-01"), 21, "abc");
  s = read_spice_raw(write_file(dir / "nan.raw", bad).string(), plots);
  REQUIRE_FALSE(s.ok());
  CHECK(s.to_string().find("\"abc\"") != std::string::npos);
  CHECK(s.errors[0].loc.line == 13);

  s = read_spice_raw(write_file(dir / "text.raw", "hello world\n").string(), plots);
  CHECK_FALSE(s.ok());
  s = read_spice_raw(write_file(dir / "empty.raw", "").string(), plots);
  CHECK_FALSE(s.ok());
  CHECK(plots.empty());
}

TEST_CASE("rawfile: binary raw file from ngspice -b -r") {
  if (std::system("command -v ngspice >/dev/null 2>&1") != 0) {
    MESSAGE("ngspice not on PATH: skipping the ngspice raw-file check");
    return;
  }
  const fs::path dir = scratch("ngspice");
  const fs::path deck = write_file(dir / "rc.cir",
                                   "rc raw test\n"
                                   ".subckt buf a b\n"
                                   "r1 a mid 1k\n"
                                   "r2 mid b 1k\n"
                                   ".ends\n"
                                   "V1 in 0 DC 1 AC 1\n"
                                   "R1 in out 1k\n"
                                   "R2 out 0 1k\n"
                                   "C1 out 0 1u\n"
                                   "X1 out b buf\n"
                                   "R3 b 0 1meg\n"
                                   ".op\n"
                                   ".ac dec 1 10 1k\n"
                                   ".end\n");
  const fs::path raw = dir / "rc.raw";
  const std::string cmd = "cd '" + dir.string() + "' && env -u SPICE_ASCIIRAWFILE ngspice -b -r '" + raw.string() +
                          "' '" + deck.string() + "' > ngspice.log 2>&1";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "ngspice failed, see " << (dir / "ngspice.log").string());

  std::vector<RawPlot> plots;
  Status s = read_spice_raw(raw.string(), plots);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(plots.size() == 2);  // ngspice writes AC before OP
  const RawPlot* op = nullptr;
  const RawPlot* ac = nullptr;
  for (const auto& p : plots) {
    if (p.plotname == "Operating Point") op = &p;
    if (p.plotname == "AC Analysis") ac = &p;
  }
  REQUIRE(op != nullptr);
  REQUIRE(ac != nullptr);

  // Operating point: R1 against R2 || (X1 + R3).
  const double rload = 1.0 / (1.0 / 1e3 + 1.0 / (2e3 + 1e6));
  const double vout = rload / (1e3 + rload);
  REQUIRE(op->find("v(out)") >= 0);
  REQUIRE(op->find("i(v1)") >= 0);
  REQUIRE(op->find("v(x1.mid)") >= 0);
  CHECK(op->re[op->find("v(out)")][0] == doctest::Approx(vout).epsilon(1e-9));
  CHECK(op->re[op->find("i(v1)")][0] == doctest::Approx(-(1.0 - vout) / 1e3).epsilon(1e-9));
  CHECK(op->types[op->find("i(v1)")] == "current");

  // AC: frequency scale, then v(out) = Z / (R1 + Z) with Z = rload || C1.
  CHECK(ac->complex);
  CHECK(ac->names[0] == "frequency");
  REQUIRE(ac->points() == 3);
  const int io = ac->find("v(out)");
  REQUIRE(io >= 0);
  for (int k = 0; k < ac->points(); ++k) {
    const double f = ac->re[0][k];
    CHECK(f == doctest::Approx(10.0 * std::pow(10.0, k)));
    const std::complex<double> z = 1.0 / (1.0 / rload + std::complex<double>(0.0, 2.0 * kPi * f * 1e-6));
    const std::complex<double> h = z / (1e3 + z);
    CHECK(ac->re[io][k] == doctest::Approx(h.real()).epsilon(1e-6));
    CHECK(ac->im[io][k] == doctest::Approx(h.imag()).epsilon(1e-6));
  }
}
