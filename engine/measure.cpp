// .meas evaluation on analysis results (see measure.hpp). The functions follow ngspice 39's com_measure2.c
// step by step (including its quirks: a crossing between the first two points in range is counted but not
// measured; AVG, MIN and MAX use the points inside FROM..TO without interpolating the ends), so that the
// numbers equal ngspice's on the same points.
#include "engine/measure.hpp"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>

namespace anasim {
namespace {

constexpr int kDefault = -1;  // no RISE/FALL/CROSS given
constexpr int kLast = -2;     // RISE/FALL/CROSS=LAST
constexpr double kNotGiven = 1e99;

// A signal's values over the rows of an analysis: real data (tran, dc), or for ac the part its prefix names.
struct Series {
  std::vector<double> y;
  std::string unit;
};

// A MeasureClause evaluated: ngspice's MEASURE struct.
struct Clause {
  const Series* vec = nullptr;
  const Series* vec2 = nullptr;  // WHEN a=b
  double val = kNotGiven, td = 0, from = 0, to = 0, at = kNotGiven;
  int rise = kDefault, fall = kDefault, cross = kDefault;
};

enum class Kind { Tran, Ac, Dc };

// ngspice's AlmostEqualUlps: equal within maxUlps representable doubles.
bool almost_equal_ulps(double a, double b, int64_t max_ulps) {
  if (a == b) return true;
  int64_t ai, bi;
  std::memcpy(&ai, &a, sizeof a);
  std::memcpy(&bi, &b, sizeof b);
  if (ai < 0) ai = INT64_MIN - ai;
  if (bi < 0) bi = INT64_MIN - bi;
  const int64_t d = ai > bi ? ai - bi : bi - ai;
  return d >= 0 && d <= max_ulps;
}

// Node voltage or branch current `sig` ("v(a)", "v(a,b)", "vdb(a)", "i(v1)", "ip(v1)") over a's rows.
bool make_series(const AnalysisResult& a, const std::string& sig, Series& out, std::string& why) {
  if (!sig.empty() && sig[0] == '@') {  // @device[name]: a signal of its own (engine/device_query.hpp)
    const Signal* s = a.find(sig);
    if (!s) {
      why = fmt::format("analysis '{}' has no signal {}", a.group, sig);
      return false;
    }
    out.unit = s->unit;
    out.y = s->re;
    return true;
  }
  const size_t open = sig.find('(');
  if (open == std::string::npos || sig.back() != ')' || open == 0) {
    why = fmt::format("'{}' is not a signal (expected v(node), v(node1,node2) or i(source))", sig);
    return false;
  }
  const char q = sig[0];
  const std::string part = sig.substr(1, open - 1);  // "", "m", "db", "p", "r", "i"
  const std::string inner = sig.substr(open + 1, sig.size() - open - 2);
  if ((q != 'v' && q != 'i') || !(part.empty() || part == "m" || part == "db" || part == "p" || part == "r" ||
                                   part == "i")) {
    why = fmt::format("'{}' is not a signal (expected v(...), i(...), or for ac vm vdb vp vr vi / im idb ip ir ii)",
                      sig);
    return false;
  }
  const size_t n = static_cast<size_t>(a.rows());
  std::vector<double> re(n, 0.0), im(n, 0.0);
  auto add = [&](const std::string& name, double sign) -> bool {
    if (q == 'v' && is_ground_name(name)) return true;
    const Signal* s = a.find(std::string(1, q) + "(" + name + ")");
    if (!s) {
      why = fmt::format("analysis '{}' has no signal {}({})", a.group, q, name);
      return false;
    }
    out.unit = s->unit;
    for (size_t k = 0; k < n; ++k) {
      re[k] += sign * s->re[k];
      if (k < s->im.size()) im[k] += sign * s->im[k];
    }
    return true;
  };
  const size_t comma = inner.find(',');
  if (comma != std::string::npos && q == 'v') {
    if (!add(inner.substr(0, comma), 1.0) || !add(inner.substr(comma + 1), -1.0)) return false;
  } else if (!add(inner, 1.0)) {
    return false;
  }
  if (out.unit.empty()) out.unit = q == 'v' ? "V" : "A";
  out.y.resize(n);
  const bool ac = a.kind == "ac";
  for (size_t k = 0; k < n; ++k) {
    if (!ac || part.empty() || part == "r") out.y[k] = re[k];  // ngspice: plain v() in ac is the real part
    else if (part == "i") out.y[k] = im[k];
    else if (part == "m") out.y[k] = std::hypot(re[k], im[k]);
    else if (part == "p") out.y[k] = std::atan2(im[k], re[k]);  // radians, as ngspice (units=degrees not set)
    else out.y[k] = 20.0 * std::log10(std::hypot(re[k], im[k]));
  }
  if (ac && part == "db") out.unit = "dB";
  if (ac && part == "p") out.unit = "rad";
  return true;
}

struct Ctx {
  Kind kind;
  const std::vector<double>& x;  // the scale: time, frequency or swept value
};

// com_measure_when: the scale value where vec crosses val (or vec2), by RISE/FALL/CROSS; NaN if none.
double measure_when(const Ctx& c, Clause m) {
  const std::vector<double>& y = m.vec->y;
  const bool dc = c.kind == Kind::Dc, tran = c.kind == Kind::Tran, ac = c.kind == Kind::Ac;
  const bool has2 = m.vec2 != nullptr;
  enum { Above, Below } section = Above;
  int rise = 0, fall = 0, cross = 0, first = 0;
  bool pending = false, init = true;
  double measured = NAN, prev = 0, prev2 = 0, prevx = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double v = y[i], x = c.x[i], v2 = has2 ? m.vec2->y[i] : NAN;
    if (dc && i == 0) m.td = x;  // dc may start anywhere: ngspice keeps the start in td
    if (tran && x < m.td) continue;
    if (ac && x < 0) continue;
    if (dc) {
      if (x < m.from || x > m.to) continue;
    } else {
      if (x < m.from) continue;
      if (m.to != 0.0 && x > m.to) break;
    }
    if (first > 1 && dc && m.td == x) first = 1;  // a nested dc sweep starts again
    const double level = has2 ? v2 : m.val;
    if (first == 1) {  // ngspice 39: only a rise onto or across the level between the first two points counts
      cross = 0;
      section = v < level ? Below : Above;
      if (prev <= level && v >= level) {
        if (section == Below) fall = cross = 1;  // (never: v < level)
        else rise = cross = 1;
      }
    }
    if (first > 1) {
      if (section == Below && v >= level) {
        section = Above;
        ++cross;
        ++rise;
        if (m.fall != kLast) pending = true;
      } else if (section == Above && v <= level) {
        section = Below;
        ++cross;
        ++fall;
        if (m.rise != kLast) pending = true;
      }
      const double at = has2 ? prevx + (prev2 - prev) * (x - prevx) / (v - prev - v2 + prev2)
                             : prevx + (m.val - prev) * (x - prevx) / (v - prev);
      if (cross == m.cross || rise == m.rise || fall == m.fall) return at;
      if (pending) {
        if (m.cross == kDefault && m.rise == kDefault && m.fall == kDefault) return at;
        if (m.cross == kLast || m.rise == kLast || m.fall == kLast) {
          measured = at;
          init = false;
        }
        pending = false;
      }
    }
    ++first;
    prev = v;
    prev2 = v2;
    prevx = x;
  }
  return init ? NAN : measured;
}

// measure_at: vec interpolated linearly at scale value `at`; NaN outside the scale.
double measure_at(const Ctx& c, const Series& s, double at) {
  for (size_t i = 1; i < s.y.size(); ++i) {
    const double px = c.x[i - 1], x = c.x[i];
    if ((px <= at && x >= at) || (c.kind == Kind::Dc && px >= at && x <= at))
      return s.y[i - 1] + (at - px) * (s.y[i] - s.y[i - 1]) / (x - px);
  }
  return NAN;
}

// The slope of vec on the interval holding `at` [unit / scale unit]; NaN outside the scale.
double measure_deriv(const Ctx& c, const Series& s, double at) {
  for (size_t i = 1; i < s.y.size(); ++i) {
    const double px = c.x[i - 1], x = c.x[i];
    if ((px <= at && x >= at) || (c.kind == Kind::Dc && px >= at && x <= at))
      return (s.y[i] - s.y[i - 1]) / (x - px);
  }
  return NAN;
}

// True if scale value x is outside the window (ngspice: dc skips outside [from, to]; others stop past to).
// `stop` is set when the rest of the scale is past the window.
bool outside(const Ctx& c, const Clause& m, double x, bool& stop) {
  if (c.kind == Kind::Dc) return x < m.from || x > m.to;
  if (x < m.from) return true;
  if (m.to != 0.0 && x > m.to) stop = true;
  return stop;
}

enum class MinMax { Min, Max, Avg };

// measure_minMaxAvg: over the points inside the window; value and where (scale value) it was found.
double measure_min_max_avg(const Ctx& c, const Clause& m, MinMax f, double* where) {
  const std::vector<double>& y = m.vec->y;
  double value = 0, at = 0, sum = 0, tsum = 0, pv = 0, px = 0;
  bool first = true, stop = false;
  for (size_t i = 0; i < y.size(); ++i) {
    const double v = y[i], x = c.x[i];
    if (outside(c, m, x, stop)) {
      if (stop) break;
      continue;
    }
    if (first) {
      first = false;
      value = v;
      at = x;
      pv = v;
      px = x;
      continue;
    }
    if (f == MinMax::Min && v <= value) {
      value = v;
      at = x;
    } else if (f == MinMax::Max && v >= value) {
      value = v;
      at = x;
    } else if (f == MinMax::Avg) {
      sum += 0.5 * (v + pv) * (x - px);
      tsum += x - px;
      pv = v;
      px = x;
    }
  }
  if (first) return NAN;
  if (where) *where = at;
  return f == MinMax::Avg ? sum / tsum : value;
}

// measure_rms_integral: INTEG (rms = false) or RMS of vec over [from, to], the ends interpolated; Simpson's
// 3/8 and 1/3 rules where three or two steps are equal (within 100 ulps), else the trapezoidal rule.
double measure_rms_integral(const Ctx& c, const Clause& m, bool rms) {
  const std::vector<double>& y0 = m.vec->y;
  std::vector<double> x, y;
  double to_val = -1, from_at = NAN;
  bool first = true;
  auto interp = [&](size_t i, double at) {
    const double slope = (y0[i] - y0[i - 1]) / (c.x[i] - c.x[i - 1]);
    return y0[i - 1] - slope * c.x[i - 1] + slope * at;
  };
  for (size_t i = 0; i < y0.size(); ++i) {
    double v = y0[i], xv = c.x[i];
    if (xv < m.from) continue;
    if (m.to != 0.0 && xv > m.to) {
      if (!almost_equal_ulps(xv, m.to, 100) && i > 0) {
        v = interp(i, m.to);
        xv = m.to;
      }
      x.push_back(xv);
      y.push_back(rms ? v * v : v);
      to_val = xv;
      break;
    }
    if (first) {
      if (m.from != 0.0 && i > 0 && !almost_equal_ulps(xv, m.from, 100)) {
        v = interp(i, m.from);
        xv = m.from;
      }
      from_at = xv;
      first = false;
    }
    x.push_back(xv);
    y.push_back(rms ? v * v : v);
  }
  const size_t n = x.size();
  if (n == 0) return NAN;
  std::vector<double> w(n + 3, 0.0);
  for (size_t i = 0; i + 1 < n; ++i) w[i] = x[i + 1] - x[i];
  y.resize(n + 3, 0.0);
  double sum = 0;
  for (size_t i = 0; i + 1 < n;) {
    if (i + 3 < n && almost_equal_ulps(w[i], w[i + 1], 100) && almost_equal_ulps(w[i], w[i + 2], 100)) {
      sum += 3 * w[i] * (y[i] + 3 * (y[i + 1] + y[i + 2]) + y[i + 3]) / 8.0;
      i += 3;
    } else if (i + 2 < n && almost_equal_ulps(w[i], w[i + 1], 100)) {
      sum += w[i] * (y[i] + 4 * y[i + 1] + y[i + 2]) / 3.0;
      i += 2;
    } else {
      sum += w[i] * (y[i] + y[i + 1]) / 2;
      ++i;
    }
  }
  if (to_val < 0.0) to_val = c.x[y0.size() - 1];
  return rms ? std::sqrt(sum / (to_val - from_at)) : sum;
}

// Evaluates one ValueExpr (empty = keep `dst`).
Status number(const ValueExpr& v, const Scope& scope, double& dst) {
  if (v.text.empty()) return {};
  return evaluate_expr(v.text, v.loc, scope, dst);
}

// Evaluates a clause; series are looked up in (and added to) `cache`.
Status clause(const MeasureClause& mc, const Scope& scope, Kind kind, Clause& out, bool& have_signals,
              std::string& why, const AnalysisResult& a, std::vector<std::pair<std::string, Series>>& cache) {
  auto series = [&](const std::string& sig) -> const Series* {
    for (const auto& [n, s] : cache)
      if (n == sig) return &s;
    Series s;
    if (!make_series(a, sig, s, why)) return nullptr;
    cache.emplace_back(sig, std::move(s));
    return &cache.back().second;
  };
  if (kind == Kind::Dc) {  // 0 may be inside a dc sweep: the window is everything unless given
    out.from = -1e99;
    out.to = 1e99;
  }
  for (auto [v, dst] : {std::pair{&mc.val, &out.val}, {&mc.td, &out.td}, {&mc.from, &out.from}, {&mc.to, &out.to},
                        {&mc.at, &out.at}})
    if (Status st = number(*v, scope, *dst); !st) return st;
  for (auto [v, dst] : {std::pair{&mc.rise, &out.rise}, {&mc.fall, &out.fall}, {&mc.cross, &out.cross}}) {
    if (v->text.empty()) continue;
    if (v->text == "last") {
      *dst = kLast;
      continue;
    }
    double d = 0;
    if (Status st = number(*v, scope, d); !st) return st;
    if (!(d >= 1 && d < 1e9)) return Status::input(fmt::format("expected a count of 1 or more, got {}", d), v->loc);
    *dst = static_cast<int>(std::floor(d + 0.5));
  }
  if (kind == Kind::Dc && out.to < out.from) std::swap(out.from, out.to);
  if (!mc.signal.empty() && !(out.vec = series(mc.signal))) have_signals = false;
  if (!mc.signal2.empty() && !(out.vec2 = series(mc.signal2))) have_signals = false;
  return {};
}

}  // namespace

namespace {

// ngspice's second pass: the PARAM= / EXPR= requests of analysis a in order, each an expression of the deck's
// parameters and of the results that succeeded before it (every other request's, the earlier PARAM ones'); a
// failed operand or an error in the expression fails the result. Results from a.measures[first] on are a's.
Status measure_params(const std::vector<MeasureSpec>& specs, const Scope& scope, AnalysisResult& a, size_t first) {
  Scope results(&scope);
  for (size_t k = first; k < a.measures.size(); ++k)
    if (a.measures[k].error.empty() && !std::isnan(a.measures[k].value))
      results.set(a.measures[k].name, a.measures[k].value);
  size_t k = first;
  for (const MeasureSpec& spec : specs) {
    if (spec.analysis != a.kind) continue;
    MeasureResult& r = a.measures[k++];
    if (spec.func != MeasureSpec::Func::Param) continue;
    double v = NAN;
    const Status st = evaluate_expr(spec.main.val.text, spec.main.val.loc, results, v);
    if (st.ok()) {
      r.value = v;
      results.set(r.name, v);
    } else {
      r.value = NAN;
      r.error = st.errors[0].message;
    }
  }
  return {};
}

}  // namespace

Status run_measures(const std::vector<MeasureSpec>& specs, const Scope& scope, AnalysisResult& a) {
  using F = MeasureSpec::Func;
  Kind kind;
  if (a.kind == "tran") kind = Kind::Tran;
  else if (a.kind == "ac") kind = Kind::Ac;
  else if (a.kind == "dc") kind = Kind::Dc;
  else return {};
  const Ctx c{kind, a.sweep};
  const std::string scale_unit = kind == Kind::Tran ? "s" : kind == Kind::Ac ? "Hz" : a.sweep_unit;
  std::vector<std::pair<std::string, Series>> cache;
  cache.reserve(4 * specs.size());  // pointers into it stay valid
  const size_t first = a.measures.size();
  for (const MeasureSpec& spec : specs) {
    if (spec.analysis != a.kind) continue;
    MeasureResult r;
    r.name = spec.name;
    if (spec.func == F::Param) {  // evaluated below, once every other result is known
      a.measures.push_back(std::move(r));
      continue;
    }
    Clause m1, m2;
    bool ok = true;
    if (Status st = clause(spec.main, scope, kind, m1, ok, r.error, a, cache); !st) return st;
    if (Status st = clause(spec.second, scope, kind, m2, ok, r.error, a, cache); !st) return st;
    double v = NAN;
    const std::string& unit1 = m1.vec ? m1.vec->unit : std::string();
    if (ok) {
      switch (spec.func) {
        case F::TrigTarg: {
          if (m1.from != 0.0 && m2.from == 0.0) m2.from = m1.from;  // ngspice shares a FROM between the two
          else if (m2.from != 0.0 && m1.from == 0.0) m1.from = m2.from;
          const double trig = m1.at != kNotGiven ? m1.at : measure_when(c, m1);
          const double targ = m2.at != kNotGiven ? m2.at : measure_when(c, m2);
          v = targ - trig;
          r.unit = scale_unit;
          if (std::isnan(trig)) r.error = "TRIG out of interval";
          else if (std::isnan(targ)) r.error = "TARG out of interval";
          break;
        }
        case F::When:
          v = measure_when(c, m1);
          r.unit = scale_unit;
          break;
        case F::Find:
        case F::Deriv: {
          const double at = m1.at != kNotGiven ? m1.at : measure_when(c, m2);
          v = spec.func == F::Find ? measure_at(c, *m1.vec, at) : measure_deriv(c, *m1.vec, at);
          r.unit = spec.func == F::Find ? unit1 : unit1 + "/" + scale_unit;
          break;
        }
        case F::Avg: case F::Min: case F::Max:
          v = measure_min_max_avg(c, m1, spec.func == F::Avg ? MinMax::Avg : spec.func == F::Min ? MinMax::Min
                                                                                                 : MinMax::Max,
                                  nullptr);
          r.unit = unit1;
          break;
        case F::MinAt: case F::MaxAt: {
          double where = NAN;
          measure_min_max_avg(c, m1, spec.func == F::MinAt ? MinMax::Min : MinMax::Max, &where);
          v = where;
          r.unit = scale_unit;
          break;
        }
        case F::Pp:
          v = measure_min_max_avg(c, m1, MinMax::Max, nullptr) - measure_min_max_avg(c, m1, MinMax::Min, nullptr);
          r.unit = unit1;
          break;
        case F::Integ:
        case F::Rms:
          v = measure_rms_integral(c, m1, spec.func == F::Rms);
          r.unit = spec.func == F::Rms ? unit1 : unit1 + "*" + scale_unit;
          break;
        case F::Param:  // skipped above: evaluated once every other result is known
          break;
      }
      if (std::isnan(v) && r.error.empty()) r.error = "out of interval";
    }
    r.value = r.error.empty() ? v : NAN;
    a.measures.push_back(std::move(r));
  }
  return measure_params(specs, scope, a, first);
}

std::vector<std::string> measure_signals(const std::vector<MeasureSpec>& specs) {
  std::vector<std::string> out;
  auto add = [&](const std::string& s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (const MeasureSpec& m : specs)
    for (const std::string* sig : {&m.main.signal, &m.main.signal2, &m.second.signal, &m.second.signal2}) {
      if (!sig->empty() && (*sig)[0] == '@') add(*sig);
      const size_t open = sig->find('(');
      if (open == std::string::npos || sig->back() != ')') continue;
      const char q = (*sig)[0];
      const std::string inner = sig->substr(open + 1, sig->size() - open - 2);
      const size_t comma = inner.find(',');
      for (const std::string& n : {inner.substr(0, comma), comma == std::string::npos ? std::string()
                                                                                      : inner.substr(comma + 1)})
        if (!n.empty() && !(q == 'v' && is_ground_name(n))) add(std::string(1, q) + "(" + n + ")");
    }
  return out;
}

}  // namespace anasim
