// .tran driver: initial operating point (or uic), then adaptive time stepping with LTE control,
// breakpoints at source corners, BE start after each breakpoint and trapezoidal / Gear-2 otherwise.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include "engine/analyses.hpp"
#include "engine/distribute.hpp"
#include "engine/integrator.hpp"
#include "engine/newton.hpp"

namespace anasim {

Status run_tran(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res,
                RowSink* sink) {
  auto t0 = std::chrono::steady_clock::now();
  const Options& opt = fn.options;
  NewtonSolver s(c, opt);
  auto meter = power_meter(c, fn, a, s);
  Integrator integ(c.n_states());
  LoadContext& ctx = s.ctx();
  res.kind = "tran";
  res.sweep_name = "time";
  res.sweep_unit = "s";
  Recorder rec(c, out, res);
  if (meter) rec.add_power(meter.get(), true);
  rec.stream_to(sink);

  const double tstop = a.tstop;
  // Largest step [s]: tmax as given, else ngspice's default min(tstep, (tstop - tstart) / 50).
  const double tmax = a.tmax > 0 ? a.tmax : std::min(a.tstep, (tstop - a.tstart) / 50);
  const double hmin = 1e-11 * tmax;
  // Resource guard: at most 10 million accepted time points and 2^30 recorded values (8 GiB), checked before the
  // run from tstop / tmax and again at every step (source corners and step cuts can need many more).
  const long max_points = std::min<long>(10'000'000, (1L << 30) / static_cast<long>(out.size() + 1));
  if (!(tstop / tmax <= static_cast<double>(max_points)))
    return Status::input(fmt::format(".tran needs at least {:.3g} time points (tstop {:.6g} s / largest step {:.6g} s), "
                                     "more than the limit of {} for {} recorded signals; use a larger tstep or tmax",
                                     tstop / tmax, tstop, tmax, max_points, out.size()));
  // Every step is at most tmax: at least tstop / tmax points, and more at source corners and after them (the 256x256
  // crossbar transient row: 1,000 and 1,196). Reserved (virtual until written): the 256x256 row 36.7 / 35.8 s and
  // 1.30 M page faults without, 35.1 / 34.7 s and 1.15 M with (alternated).
  rec.reserve(static_cast<size_t>(1.25 * std::ceil(tstop / tmax)) + 64);
  ctx.q = integ.q0().data();
  ctx.time = 0.0;
  ctx.tran_step = a.tstep;
  ctx.tran_stop = tstop;

  // Initial state at t = 0.
  if (!a.uic) {
    s.set_forced(forced_ics(c, fn));
    // With a guess: Newton from it first (operating_point's continuation), the cold-start strategy if that fails.
    Status st = s.operating_point(apply_guess(c, fn, s.x()));
    if (!st) {
      st.errors[0].message = "transient initial operating point: " + st.errors[0].message;
      return st;
    }
    if (meter) meter->evaluate(s.x().data(), s);  // t = 0, on the system as solved (with any .ic forcing)
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
  if (meter) meter->start_energies(!a.uic);  // energies from 0 at t = 0; with uic t = 0 is not solved (no powers)

  // False once the output stream has failed (a full disk): the run stops with the stream's error.
  auto stream_failed = [&]() {
    Status st = rec.finish();
    return st ? Status::fail(ErrorKind::Other, "transient output stream failed") : st;
  };
  auto record = [&](double t) {
    if (t < a.tstart * (1 - 1e-12)) return true;
    if (!sink) res.sweep.push_back(t);
    return rec.record(s.x().data(), t);
  };
  // With uic the t = 0 unknowns are not solved (only the states are set), so like ngspice no row is written.
  if (!a.uic && !record(0.0)) return stream_failed();

  // Step control follows ngspice 39's DCtran: breakpoints closer than min_break after t are dropped; at a
  // breakpoint the order drops to 1 and the step to 0.1 x min(step before the cut, distance to the next
  // breakpoint); the very first step is cut by another 10 and skips the LTE check; the order rises to 2
  // only when the order-2 LTE estimate allows a step > 1.05 x the current one.
  const double min_break = 10 * hmin;
  auto next_break = [&](double t) {
    double bp = tstop;
    if (a.uic && a.tstep > t + min_break) bp = std::min(bp, a.tstep);  // ngspice: limits current ringing
    for (const auto& d : c.devices()) bp = std::min(bp, d->next_breakpoint(t + min_break));
    return bp;
  };

  double t = 0.0;
  StepControl sc;
  sc.delta = std::min(tstop / 100, a.tstep) / 10;
  sc.save_delta = tstop / 50;
  sc.maxorder = opt.method == Integration::BackwardEuler ? 1 : opt.maxord;
  // Accepted solutions; the predictor's guess starts each step's Newton (nonlinear circuits: a linear
  // circuit is one solve whatever the start).
  Predictor pred(s.x().size());
  pred.accept(s.x(), 0.0);
  double bp = next_break(0.0);
  long accepted = 0, rejected = 0;
  double step = 0.0;  // [s] size of the step just accepted
  // A transient that runs for more than a second reports its simulated time on stderr (in thousandths of tstop),
  // per the progress mode (--progress, or a terminal), at most once a second.
  dist::ProgressLine progress(1000, 0, fmt::format("thousandths of tstop ({:.4g} s)", tstop), 1.0);
  while (tstop - t >= min_break) {
    bool hits_break = sc.propose(t, bp, tmax);
    for (;;) {
      ctx.mode = LoadContext::Mode::Tran;
      ctx.time = hits_break ? bp : t + sc.delta;  // land on the breakpoint bit-exactly
      integ.prepare(ctx, opt.method, sc.order, sc.delta);
      if (c.nonlinear() && !sc.first) {
        pred.predict(sc.delta, s.x());
        ctx.x = s.x().data();
      }
      Status st = s.newton(opt.itl4, false);
      double newdelta = sc.delta;
      bool ok = st.ok();
      if (!ok) {
        if (st.errors[0].message.rfind("singular", 0) == 0) return st;
        newdelta = sc.delta / 8;
        sc.order = 1;
      } else {
        integ.finish(ctx);
        if (!sc.first) ok = sc.judge(integ, opt, opt.method, newdelta);
      }
      if (ok) {
        t = hits_break ? bp : t + sc.delta;
        step = sc.delta;
        sc.delta = newdelta;
        break;
      }
      // Rejected (no convergence, or truncation error too large): retry from t with a smaller step.
      s.x() = pred.last();
      s.ctx().x = s.x().data();
      ++rejected;
      hits_break = false;
      if (!sc.retry(newdelta, hmin))
        return Status::numerical(fmt::format("timestep too small at time {:.6g} s{}", t,
                                             st.ok() ? "" : ": " + st.errors[0].message));
    }
    if (++accepted > max_points)
      return Status::numerical(fmt::format("transient analysis stopped at time {:.6g} s of {:.6g} s: more than {} time "
                                           "points (limit for {} recorded signals; last step {:.3g} s). A source with a "
                                           "very short period or a very high frequency?",
                                           t, tstop, max_points, out.size(), step));
    integ.accept();
    // With uic the t = 0 unknowns were not solved for, so the first step is not extrapolated over.
    pred.accept(s.x(), sc.first && a.uic ? 0.0 : step);
    sc.first = false;
    if (meter) {  // every accepted step, also before tstart: the energies integrate from t = 0
      meter->evaluate(s.x().data(), s);
      meter->integrate(integ);
    }
    if (!record(t)) return stream_failed();
    sc.at_break = t >= bp;
    if (sc.at_break) bp = next_break(t);
    const long permille = !(tstop - t >= min_break) ? 1000 : std::min(999L, static_cast<long>(1000 * (t / tstop)));
    if (progress.due(permille))  // (a counter per point when progress is shown, nothing otherwise)
      progress.update(permille, fmt::format("t = {:.4g} s, {} points", t, accepted));
  }
  if (Status st = rec.finish(); !st) return st;
  res.stats = s.stats();
  res.stats.timepoints = accepted;
  res.stats.rejected = rejected;
  res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {};
}

}  // namespace anasim
