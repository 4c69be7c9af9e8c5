// .dc driver: sweeps one source or the circuit temperature (or two, nested), continuing each point from the
// previous solution, and approaching a point that fails from the previous one in halved steps.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>
#include <fmt/format.h>
#include "engine/analyses.hpp"
#include "engine/newton.hpp"

namespace anasim {

namespace {
std::vector<double> sweep_values(const DcSweep& s) {
  std::vector<double> v;
  const long n = static_cast<long>(std::floor((s.stop - s.start) / s.step + 1e-9)) + 1;
  for (long k = 0; k < n; ++k) v.push_back(s.start + k * s.step);
  return v;
}
// What a sweep sets: an independent source's DC value, or the circuit temperature [C] (.dc temp).
class SweepTarget {
 public:
  SweepTarget(Circuit& c, const FlatNetlist& fn, const DcSweep& s)
      : c_(c), base_(fn.options.temperature()), dev_(s.temperature ? nullptr : c.find_device(s.source)) {}
  void set(double v) {
    if (dev_) dev_->set_dc(v);
    else c_.set_temperature({v + Temperature::kCtoK, base_.tnom});
  }
  // Back to the netlist's value.
  void restore() {
    if (dev_) dev_->set_dc(v0_);
    else c_.set_temperature(base_);
  }

 private:
  Circuit& c_;
  Temperature base_;
  Device* dev_;
  double v0_ = dev_ ? dev_->dc_value() : 0.0;
};

// Sub-steps of a failed sweep step are halved at most this often: the smallest is the step / 1024.
constexpr int kMaxHalvings = 10;

// The operating point at inner value v, continuing from the current solution when `continuing`. If it fails and
// `from` (the previous value of the same inner sweep, whose solution is the current one) is given, walks from
// there to v in sub-steps, halved after every failure (at most kMaxHalvings times) and each continuing from the
// last converged solution; the sub-steps are not recorded. A point that converges directly is solved exactly as
// without this aid. On failure returns the error of the direct attempt.
Status solve_point(NewtonSolver& s, SweepTarget& inner, double v, const double* from, bool continuing) {
  const std::vector<double> x_from = s.x();
  inner.set(v);
  Status st = s.operating_point(continuing);
  if (st || !from || !s.circuit().nonlinear()) return st;
  double at = *from;                 // the last value solved
  std::vector<double> good = x_from;  // its solution
  double h = (v - at) / 2;
  const double h_min = std::abs(v - at) / (1 << kMaxHalvings);
  while (at != v) {
    const double next = std::abs(v - at) <= std::abs(h) * (1 + 1e-12) ? v : at + h;
    s.x() = good;
    inner.set(next);
    if (s.operating_point(true)) {
      at = next;
      good = s.x();
      continue;
    }
    h /= 2;
    if (std::abs(h) < h_min * (1 - 1e-12)) {
      s.x() = good;
      inner.set(v);
      return st;
    }
  }
  return {};
}
}  // namespace

Status run_dc(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res,
              std::vector<double>* carry) {
  auto t0 = std::chrono::steady_clock::now();
  NewtonSolver s(c, fn.options);
  const bool carried = carry && !carry->empty() && carry->size() == s.x().size();
  if (carried) s.x() = *carry;
  auto meter = power_meter(c, fn, a, s);
  res.kind = "dc";
  SweepTarget inner(c, fn, a.sweeps[0]);
  std::optional<SweepTarget> outer;
  if (a.sweeps.size() > 1) outer.emplace(c, fn, a.sweeps[1]);
  std::vector<double> iv = sweep_values(a.sweeps[0]);
  std::vector<double> ov = outer ? sweep_values(a.sweeps[1]) : std::vector<double>{0.0};
  res.sweep_name = a.sweeps[0].source;
  res.sweep_unit = a.sweeps[0].temperature ? "C" : "V";
  for (const auto& fd : fn.devices)
    if (fd.name == a.sweeps[0].source && fd.type->key == "i") res.sweep_unit = "A";
  if (outer) res.sweep2_name = a.sweeps[1].source;
  Recorder rec(c, out, res);
  if (meter) rec.add_power(meter.get(), false);
  Status st;
  for (double vo : ov) {
    if (outer) outer->set(vo);
    for (size_t k = 0; k < iv.size(); ++k) {
      const double vi = iv[k];
      st = solve_point(s, inner, vi, k > 0 ? &iv[k - 1] : nullptr, carried || !res.sweep.empty());
      if (!st) {
        st.errors[0].message = fmt::format("dc sweep at {} = {}: {}", a.sweeps[0].source, vi, st.errors[0].message);
        break;
      }
      res.sweep.push_back(vi);
      if (outer) res.sweep2.push_back(vo);
      if (meter) meter->evaluate(s.x().data(), s);
      rec.record(s.x().data(), 0.0);
    }
    if (!st) break;
  }
  inner.restore();
  if (outer) outer->restore();
  if (carry) *carry = s.x();
  rec.flush();
  res.stats = s.stats();
  res.stats.timepoints = static_cast<long>(res.sweep.size());
  res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

namespace {
// fn's netlist elaborated with the circuit temperature and `temper` at t [C]; no analyses.
Status elaborate_at(const TemperSource& src, const DeviceCatalog& catalog, double t, FlatNetlist& out) {
  ParsedNetlist pn = src.netlist;
  pn.analyses.clear();
  pn.options.erase(std::remove_if(pn.options.begin(), pn.options.end(),
                                  [](const ParamAssign& o) { return o.name == "temp"; }),
                   pn.options.end());
  ParamAssign temp;
  temp.name = "temp";
  temp.values.push_back({fmt::format("{:.17g}", t), {}});
  pn.options.push_back(std::move(temp));
  return elaborate(pn, catalog, out, src.variation ? &*src.variation : nullptr);
}
}  // namespace

Status run_dc_temper(const FlatNetlist& fn, const DeviceCatalog& catalog, const Analysis& a, AnalysisResult& res) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<double> iv = sweep_values(a.sweeps[0]);
  const std::vector<double> ov = a.sweeps.size() > 1 ? sweep_values(a.sweeps[1]) : std::vector<double>{0.0};
  const bool inner_temp = a.sweeps[0].temperature;
  std::unique_ptr<Circuit> c;
  FlatNetlist at;
  std::vector<int> idx;
  double built_at = std::nan("");  // the temperature c was built at
  SolverStats stats;
  std::vector<double> x;  // the last point's solution: the next point continues from it, as a sweep does
  for (double vo : ov) {
    for (double vi : iv) {
      const double t = inner_temp ? vi : vo;
      if (!(t == built_at)) {
        at = FlatNetlist();
        c = std::make_unique<Circuit>();
        Status st = elaborate_at(*fn.temper, catalog, t, at);
        if (st) st = c->build(at, catalog);
        if (st) st = select_outputs(*c, at.outputs, idx);
        if (!st) {
          st.errors[0].message = fmt::format("dc sweep at temp = {}: {}", t, st.errors[0].message);
          return st;
        }
        built_at = t;
      }
      Analysis point = a;  // this one point: every sweep from its value to itself
      point.sweeps[0].start = point.sweeps[0].stop = vi;
      if (point.sweeps.size() > 1) point.sweeps[1].start = point.sweeps[1].stop = vo;
      AnalysisResult r;
      if (Status st = run_dc(*c, at, point, idx, r, &x); !st) return st;
      if (res.signals.empty()) {
        res = std::move(r);
        stats = res.stats;
        continue;
      }
      for (size_t k = 0; k < res.signals.size(); ++k)
        res.signals[k].re.insert(res.signals[k].re.end(), r.signals[k].re.begin(), r.signals[k].re.end());
      res.sweep.insert(res.sweep.end(), r.sweep.begin(), r.sweep.end());
      res.sweep2.insert(res.sweep2.end(), r.sweep2.begin(), r.sweep2.end());
      stats.add(r.stats);
    }
  }
  res.stats = stats;
  res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {};
}

}  // namespace anasim
