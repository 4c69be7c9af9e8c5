// .tran driver: initial operating point (or uic), then adaptive time stepping with LTE control,
// breakpoints at source corners, BE start after each breakpoint and trapezoidal / Gear-2 otherwise.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include "engine/analyses.hpp"
#include "engine/integrator.hpp"
#include "engine/newton.hpp"

namespace anasim {

Status run_tran(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res) {
  auto t0 = std::chrono::steady_clock::now();
  const Options& opt = fn.options;
  NewtonSolver s(c, opt);
  Integrator integ(c.n_states());
  LoadContext& ctx = s.ctx();
  res.kind = "tran";
  res.sweep_name = "time";
  res.sweep_unit = "s";
  for (int u : out) res.signals.push_back({c.unknowns()[u].name, c.unknowns()[u].is_node ? "V" : "A", {}, {}});

  const double tstop = a.tstop;
  const double tmax = a.tmax > 0 ? std::min(a.tmax, tstop / 50) : std::min(a.tstep, (tstop - a.tstart) / 50);
  const double hmin = 1e-11 * tmax;
  ctx.q = integ.q0().data();
  ctx.time = 0.0;
  ctx.tran_step = a.tstep;
  ctx.tran_stop = tstop;

  // Initial state at t = 0.
  if (!a.uic) {
    s.set_forced(forced_ics(c, fn));
    Status st = s.operating_point();
    if (!st) {
      st.errors[0].message = "transient initial operating point: " + st.errors[0].message;
      return st;
    }
    s.set_forced({});
  } else {
    std::fill(s.x().begin(), s.x().end(), 0.0);
    for (const auto& [u, v] : forced_ics(c, fn))
      if (!u.is_ground()) s.x()[u.v] = v;
    ctx.x = s.x().data();
    ctx.uic_init = true;
    for (const auto& d : c.devices()) d->init_uic(ctx);
    ctx.uic_init = false;
  }
  integ.start_from_dc(ctx);

  auto record = [&](double t) {
    if (t < a.tstart * (1 - 1e-12)) return;
    res.sweep.push_back(t);
    for (size_t k = 0; k < out.size(); ++k) res.signals[k].re.push_back(s.x()[out[k]]);
  };
  record(0.0);

  auto next_break = [&](double t) {
    double bp = tstop;
    for (const auto& d : c.devices()) bp = std::min(bp, d->next_breakpoint(t * (1 + 1e-12) + 1e-300));
    return bp;
  };

  double t = 0.0;
  double delta = std::min(tstop / 100, a.tstep) / 10;
  int order = 1;
  const int maxorder = opt.method == Integration::BackwardEuler ? 1 : opt.maxord;
  std::vector<double> x_acc = s.x();
  double bp = next_break(0.0);
  long accepted = 0, rejected = 0;
  while (t < tstop * (1 - 1e-12)) {
    bool at_break = false;
    if (t + delta >= bp * (1 - 1e-12)) {
      delta = bp - t;
      at_break = true;
    } else if (t + 1.5 * delta > bp) {
      delta = 0.5 * (bp - t);  // avoid leaving a sliver before the breakpoint
    }
    ctx.mode = LoadContext::Mode::Tran;
    ctx.time = t + delta;
    integ.prepare(ctx, opt.method, order, delta);
    Status st = s.newton(opt.itl4, false);
    if (!st) {
      if (st.errors[0].message.rfind("singular", 0) == 0) return st;
      s.x() = x_acc;
      s.ctx().x = s.x().data();
      delta /= 8;
      order = 1;
      ++rejected;
      if (delta < hmin) {
        st.errors[0].message = fmt::format("timestep too small at time {:.6g} s: {}", t, st.errors[0].message);
        return st;
      }
      continue;
    }
    integ.finish(ctx);
    double newdelta = integ.lte_step(opt, opt.method, order);
    if (newdelta < 0.9 * delta && delta > hmin) {
      s.x() = x_acc;
      s.ctx().x = s.x().data();
      delta = std::max(newdelta, hmin);
      ++rejected;
      continue;
    }
    t += delta;
    ++accepted;
    integ.accept();
    x_acc = s.x();
    record(t);
    if (at_break) {
      bp = next_break(t);
      order = 1;
      delta = std::min({newdelta, 2 * delta, tmax, 0.1 * (bp - t)});
      if (delta <= 0) delta = tmax;
    } else {
      order = maxorder;
      delta = std::min({newdelta, 2 * delta, tmax});
    }
    delta = std::max(delta, hmin);
  }
  res.stats = s.stats();
  res.stats.timepoints = accepted;
  res.stats.rejected = rejected;
  res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {};
}

}  // namespace anasim
