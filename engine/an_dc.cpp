// .dc driver: sweeps one source or the circuit temperature (or two, nested), continuing each point from the
// previous solution.
#include <chrono>
#include <cmath>
#include <optional>
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
}  // namespace

Status run_dc(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res) {
  auto t0 = std::chrono::steady_clock::now();
  NewtonSolver s(c, fn.options);
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
    for (double vi : iv) {
      inner.set(vi);
      st = s.operating_point(!res.sweep.empty());
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
  res.stats = s.stats();
  res.stats.timepoints = static_cast<long>(res.sweep.size());
  res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace anasim
