// Helpers for tests that compare anasim with ngspice 39 on an exported deck (test_crossbar.cpp,
// test_dac_adc.cpp): run `ngspice -b -r`, read the raw file, and compare every node voltage / branch current
// anasim writes. anasim's device-internal nodes "<inst>#<suffix>" are exported as "<inst>_<suffix>".
#pragma once
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <unistd.h>
#include "devices/registry.hpp"
#include "engine/export_spice.hpp"
#include "engine/parse.hpp"
#include "engine/rawfile.hpp"
#include "engine/simulate.hpp"
#include "test_support.hpp"

namespace anasim::test {

inline bool ngspice_available() {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream ss(path);
  for (std::string dir; std::getline(ss, dir, ':');)
    if (::access((std::filesystem::path(dir.empty() ? "." : dir) / "ngspice").c_str(), X_OK) == 0) return true;
  return false;
}

// A fresh scratch directory for one test, removed when the test program exits (test_support.hpp).
inline std::filesystem::path scratch_dir(const std::string& tag) { return test_support::scratch_dir("ngspice", tag); }

// Runs ngspice in batch mode on `deck`, writing the raw file next to it; REQUIREs success.
inline std::vector<RawPlot> run_ngspice(const std::filesystem::path& deck) {
  const auto dir = deck.parent_path();
  const auto raw = dir / (deck.stem().string() + ".raw"), log = dir / (deck.stem().string() + ".log");
  const std::string cmd =
      fmt::format("cd '{0}' && env -u SPICE_ASCIIRAWFILE HOME='{0}' ngspice -b -r '{1}' '{2}' > '{3}' 2>&1",
                  dir.string(), raw.string(), deck.string(), log.string());
  INFO("ngspice log: " << log.string());
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::vector<RawPlot> plots;
  const Status st = read_spice_raw(raw.string(), plots);
  INFO(st.to_string());
  REQUIRE(st.ok());
  return plots;
}

// ngspice's name for an anasim signal: internal nodes "v(xb#r1_2)" -> "v(xb_r1_2)"; currents of flattened
// devices get ngspice's prefix ("i(x1.v1)" -> "i(v.x1.v1)"); @device[name] references keep their name.
inline std::string ngspice_signal_name(std::string sig) {
  if (!sig.empty() && sig[0] == '@') return sig;
  if (sig.rfind("v(", 0) == 0) {
    std::replace(sig.begin(), sig.end(), '#', '_');
    return sig;
  }
  const std::string dev = sig.substr(2, sig.size() - 3);
  const size_t dot = dev.rfind('.');
  const std::string leaf = dot == std::string::npos ? dev : dev.substr(dot + 1);
  return "i(" + spice_instance_name(std::string(1, leaf[0]), dev) + ")";
}

struct Comparison {
  int compared = 0;       // signals compared
  double worst = 0;       // largest |a - n| / (|n| + floor)
  std::string worst_name;
  std::vector<std::string> missing;  // anasim node voltages ngspice does not have
};

// Compares the .op (or .dc) analysis `a` with ngspice plot `n` pointwise: every anasim voltage and current
// signal (device probes such as ADC codes are anasim-only) against ngspice, error relative to |ngspice|
// plus an absolute floor [V or A].
inline Comparison compare_points(const AnalysisResult& a, const RawPlot& n, double floor_v = 1e-12,
                                 double floor_i = 1e-15) {
  Comparison c;
  const int first = a.kind == "op" ? 0 : 1;
  for (const Signal& s : a.signals) {
    if (s.unit != "V" && s.unit != "A") continue;
    const int k = n.find(ngspice_signal_name(s.name));
    if (k < first) {
      c.missing.push_back(s.name);
      continue;
    }
    REQUIRE(static_cast<int>(n.re[k].size()) == a.rows());
    const double fl = s.unit == "V" ? floor_v : floor_i;
    for (int p = 0; p < a.rows(); ++p) {
      const double e = std::fabs(s.re[p] - n.re[k][p]) / (std::fabs(n.re[k][p]) + fl);
      if (e > c.worst) {
        c.worst = e;
        c.worst_name = s.name;
      }
    }
    ++c.compared;
  }
  return c;
}

// Worst |a - n| over ngspice's transient grid (anasim interpolated linearly), relative to the range of the
// ngspice waveform, over every shared voltage signal.
inline Comparison compare_tran(const AnalysisResult& a, const RawPlot& n) {
  Comparison c;
  for (const Signal& s : a.signals) {
    if (s.unit != "V") continue;
    const int k = n.find(ngspice_signal_name(s.name));
    if (k < 1) {
      c.missing.push_back(s.name);
      continue;
    }
    const auto mm = std::minmax_element(n.re[k].begin(), n.re[k].end());
    const double range = *mm.second - *mm.first + 1e-9;
    for (int p = 0; p < n.points(); ++p) {
      const double t = n.re[0][p];
      auto it = std::upper_bound(a.sweep.begin(), a.sweep.end(), t);
      double va;
      if (it == a.sweep.begin()) va = s.re.front();
      else if (it == a.sweep.end()) va = s.re.back();
      else {
        const size_t q = static_cast<size_t>(it - a.sweep.begin());
        const double t0 = a.sweep[q - 1], t1 = a.sweep[q];
        va = s.re[q - 1] + (s.re[q] - s.re[q - 1]) * (t - t0) / (t1 - t0);
      }
      const double e = std::fabs(va - n.re[k][p]) / range;
      if (e > c.worst) {
        c.worst = e;
        c.worst_name = s.name;
      }
    }
    ++c.compared;
  }
  return c;
}

// Worst |a - n| of the real and imaginary parts over ngspice's AC grid (anasim interpolated linearly in
// frequency), relative to the range of the ngspice magnitude |n|, over every shared voltage signal.
inline Comparison compare_ac(const AnalysisResult& a, const RawPlot& n) {
  Comparison c;
  auto at = [&](const std::vector<double>& ys, double f) {
    auto it = std::upper_bound(a.sweep.begin(), a.sweep.end(), f);
    if (it == a.sweep.begin()) return ys.front();
    if (it == a.sweep.end()) return ys.back();
    const size_t q = static_cast<size_t>(it - a.sweep.begin());
    const double f0 = a.sweep[q - 1], f1 = a.sweep[q];
    return ys[q - 1] + (ys[q] - ys[q - 1]) * (f - f0) / (f1 - f0);
  };
  for (const Signal& s : a.signals) {
    if (s.unit != "V") continue;
    const int k = n.find(ngspice_signal_name(s.name));
    if (k < 1 || n.im.empty()) {
      c.missing.push_back(s.name);
      continue;
    }
    double lo = INFINITY, hi = 0;
    for (int p = 0; p < n.points(); ++p) {
      const double m = std::hypot(n.re[k][p], n.im[k][p]);
      lo = std::min(lo, m);
      hi = std::max(hi, m);
    }
    const double range = hi - lo + 1e-9;
    for (int p = 0; p < n.points(); ++p) {
      const double f = n.re[0][p];
      const double e = std::max(std::fabs(at(s.re, f) - n.re[k][p]), std::fabs(at(s.im, f) - n.im[k][p])) / range;
      if (e > c.worst) {
        c.worst = e;
        c.worst_name = s.name;
      }
    }
    ++c.compared;
  }
  return c;
}

// Parses and elaborates a netlist file or YAML text; REQUIREs success.
inline FlatNetlist elaborate_file(const std::string& path) {
  ParsedNetlist pn;
  FlatNetlist fn;
  Status st = parse_netlist(path, builtin_catalog(), pn);
  if (st) st = elaborate(pn, builtin_catalog(), fn);
  INFO(st.to_string());
  REQUIRE(st.ok());
  return fn;
}

inline FlatNetlist elaborate_yaml(const std::string& text, const std::string& pseudo = "test.yaml") {
  ParsedNetlist pn;
  FlatNetlist fn;
  Status st = parse_yaml_string(text, pseudo, builtin_catalog(), pn);
  if (st) st = elaborate(pn, builtin_catalog(), fn);
  INFO(text << "\n" << st.to_string());
  REQUIRE(st.ok());
  return fn;
}

inline RunResults simulate_flat(const FlatNetlist& fn) {
  RunResults r;
  const Status st = simulate(fn, builtin_catalog(), r);
  INFO(st.to_string());
  REQUIRE(st.ok());
  return r;
}

// Simulates fn, exports it to <dir>/<stem>.cir, runs ngspice and returns the per-analysis comparisons
// (op/dc pointwise, tran on ngspice's grid), paired in order (ngspice writes one plot per kind here).
inline std::vector<Comparison> crosscheck_flat(const FlatNetlist& fn, const std::filesystem::path& dir,
                                               const std::string& stem, RunResults* keep = nullptr) {
  const RunResults r = simulate_flat(fn);
  const auto deck = dir / (stem + ".cir");
  REQUIRE(export_spice(fn, deck.string()).ok());
  const std::vector<RawPlot> plots = run_ngspice(deck);
  std::vector<Comparison> out;
  for (const AnalysisResult& a : r.analyses) {
    const RawPlot* match = nullptr;
    for (const RawPlot& p : plots) {
      const bool same = (a.kind == "op" && p.plotname.rfind("Operating Point", 0) == 0) ||
                        (a.kind == "dc" && p.plotname.rfind("DC transfer", 0) == 0) ||
                        (a.kind == "tran" && p.plotname.rfind("Transient", 0) == 0);
      if (same) match = &p;
    }
    INFO("analysis " << a.group);
    REQUIRE(match != nullptr);
    out.push_back(a.kind == "tran" ? compare_tran(a, *match) : compare_points(a, *match));
  }
  if (keep) *keep = r;
  return out;
}

}  // namespace anasim::test
