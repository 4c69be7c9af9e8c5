// .dc driver: sweeps one source (or two, nested), continuing each point from the previous solution.
#include <chrono>
#include <cmath>
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
}  // namespace

Status run_dc(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res) {
  auto t0 = std::chrono::steady_clock::now();
  NewtonSolver s(c, fn.options);
  auto meter = power_meter(c, fn, a, s);
  res.kind = "dc";
  Device* inner = c.find_device(a.sweeps[0].source);
  Device* outer = a.sweeps.size() > 1 ? c.find_device(a.sweeps[1].source) : nullptr;
  const double inner0 = inner->dc_value(), outer0 = outer ? outer->dc_value() : 0.0;
  std::vector<double> iv = sweep_values(a.sweeps[0]);
  std::vector<double> ov = outer ? sweep_values(a.sweeps[1]) : std::vector<double>{0.0};
  res.sweep_name = a.sweeps[0].source;
  res.sweep_unit = "V";
  for (const auto& fd : fn.devices)
    if (fd.name == a.sweeps[0].source && fd.type->key == "i") res.sweep_unit = "A";
  if (outer) res.sweep2_name = a.sweeps[1].source;
  Recorder rec(c, out, res);
  if (meter) rec.add_power(meter.get(), false);
  Status st;
  for (double vo : ov) {
    if (outer) outer->set_dc(vo);
    for (double vi : iv) {
      inner->set_dc(vi);
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
  inner->set_dc(inner0);
  if (outer) outer->set_dc(outer0);
  res.stats = s.stats();
  res.stats.timepoints = static_cast<long>(res.sweep.size());
  res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace anasim
