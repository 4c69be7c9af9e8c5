// Source waveforms (see waveform.hpp). Defaults follow ngspice 39: PULSE tr/tf = tstep, pw/per = tstop, np = 0
// (no limit); SIN freq = 1/tstop; EXP td1 = tau1 = tstep, td2 = td1 + tstep, tau2 = tstep; AM mf = 1/tstop;
// SFFM fc = fs = 1/tstop (a zero counts as not given).
#include "devices/waveform.hpp"
#include <cmath>
#include <limits>

namespace anasim {

namespace {
double arg(const std::vector<double>& p, size_t i, double def) { return i < p.size() ? p[i] : def; }
double nz(double v, double def) { return v != 0.0 ? v : def; }
constexpr double kInfT = std::numeric_limits<double>::infinity();
}  // namespace

const char* Waveform::check() const {
  switch (kind) {
    case Kind::Pulse: return p.size() < 2 || p.size() > 8 ? "PULSE needs 2 to 8 values: v1 v2 [td tr tf pw per np]" : nullptr;
    case Kind::Am: return p.size() < 2 || p.size() > 7 ? "AM needs 2 to 7 values: va vo [mf fc td phasec phases]" : nullptr;
    case Kind::Sffm:
      return p.size() < 2 || p.size() > 7 ? "SFFM needs 2 to 7 values: vo va [fc mdi fs phasec phases]" : nullptr;
    case Kind::Sin: return p.size() < 2 || p.size() > 6 ? "SIN needs 2 to 6 values: vo va [freq td theta phase]" : nullptr;
    case Kind::Exp: return p.size() < 2 || p.size() > 6 ? "EXP needs 2 to 6 values: v1 v2 [td1 tau1 td2 tau2]" : nullptr;
    case Kind::Pwl:
      if (p.size() < 2 || p.size() % 2) return "PWL needs pairs of values: t1 v1 [t2 v2 ...]";
      if (p[0] < 0) return "PWL times must not be negative (the transient starts at t = 0)";
      for (size_t k = 2; k < p.size(); k += 2)
        if (p[k] < p[k - 2]) return "PWL times must not decrease";
      return nullptr;
    case Kind::None: return nullptr;
  }
  return nullptr;
}

double Waveform::value(double t, double tstep, double tstop) const {
  switch (kind) {
    case Kind::None: return 0.0;
    case Kind::Pulse: {  // ngspice 39 vsrcload.c, in its order: a time equal to per is still in the first period
      const double v1 = p[0], v2 = p[1], td = arg(p, 2, 0.0);
      const double tr = nz(arg(p, 3, 0.0), tstep), tf = nz(arg(p, 4, 0.0), tstep);
      const double pw = nz(arg(p, 5, 0.0), tstop), per = nz(arg(p, 6, 0.0), tstop), np = arg(p, 7, 0.0);
      double tt = t - td;
      if (np > 0 && tt > np * per) return v1;  // after np pulses
      if (per > 0 && tt > per) tt -= per * std::floor(tt / per);
      if (tt <= 0 || tt >= tr + pw + tf) return v1;
      if (tt >= tr && tt <= tr + pw) return v2;
      if (tt < tr) return v1 + (v2 - v1) * tt / tr;
      return v2 + (v1 - v2) * (tt - (tr + pw)) / tf;
    }
    case Kind::Am: {  // as ngspice 39, whose carrier also takes the signal phase phases
      const double va = p[0], vo = p[1], mf = nz(arg(p, 2, 0.0), tstop > 0 ? 1.0 / tstop : 0.0);
      const double fc = arg(p, 3, 0.0), td = arg(p, 4, 0.0), phases = arg(p, 6, 0.0) * M_PI / 180.0;
      const double tt = t - td;
      if (tt <= 0) return 0.0;
      return va * (vo + std::sin(2.0 * M_PI * mf * tt + phases)) * std::sin(2.0 * M_PI * fc * tt + phases);
    }
    case Kind::Sffm: {
      const double vo = p[0], va = p[1], f0 = tstop > 0 ? 1.0 / tstop : 0.0;
      const double fc = nz(arg(p, 2, 0.0), f0), mdi = arg(p, 3, 0.0), fs = nz(arg(p, 4, 0.0), f0);
      const double phasec = arg(p, 5, 0.0) * M_PI / 180.0, phases = arg(p, 6, 0.0) * M_PI / 180.0;
      return vo + va * std::sin((2.0 * M_PI * fc * t + phasec) + mdi * std::sin(2.0 * M_PI * fs * t + phases));
    }
    case Kind::Sin: {
      const double vo = p[0], va = p[1], freq = nz(arg(p, 2, 0.0), tstop > 0 ? 1.0 / tstop : 0.0);
      const double td = arg(p, 3, 0.0), theta = arg(p, 4, 0.0), phase = arg(p, 5, 0.0) * M_PI / 180.0;
      if (t <= td) return vo + va * std::sin(phase);
      const double tt = t - td;
      return vo + va * std::exp(-tt * theta) * std::sin(2 * M_PI * freq * tt + phase);
    }
    case Kind::Exp: {
      const double v1 = p[0], v2 = p[1], td1 = nz(arg(p, 2, 0.0), tstep), tau1 = nz(arg(p, 3, 0.0), tstep);
      const double td2 = nz(arg(p, 4, 0.0), td1 + tstep), tau2 = nz(arg(p, 5, 0.0), tstep);
      double v = v1;
      if (t > td1) v += (v2 - v1) * (1 - std::exp(-(t - td1) / tau1));
      if (t > td2) v += (v1 - v2) * (1 - std::exp(-(t - td2) / tau2));
      return v;
    }
    case Kind::Pwl: {
      const size_t n = p.size() / 2;
      if (t <= p[0]) return p[1];
      for (size_t k = 1; k < n; ++k) {
        const double t0 = p[2 * k - 2], t1 = p[2 * k];
        if (t <= t1) {
          if (t1 == t0) return p[2 * k + 1];
          return p[2 * k - 1] + (p[2 * k + 1] - p[2 * k - 1]) * (t - t0) / (t1 - t0);
        }
      }
      return p[2 * n - 1];
    }
  }
  return 0.0;
}

double Waveform::next_breakpoint(double t, double tstep, double tstop) const {
  switch (kind) {
    case Kind::Sffm: return kInfT;
    case Kind::Am: {
      const double td = arg(p, 4, 0.0);
      return td > t ? td : kInfT;
    }
    case Kind::None:
    case Kind::Sin: {
      if (kind == Kind::Sin) {
        const double td = arg(p, 3, 0.0);
        if (td > t) return td;
      }
      return kInfT;
    }
    case Kind::Exp: {
      const double td1 = nz(arg(p, 2, 0.0), tstep), td2 = nz(arg(p, 4, 0.0), td1 + tstep);
      if (td1 > t) return td1;
      if (td2 > t) return td2;
      return kInfT;
    }
    case Kind::Pwl:
      for (size_t k = 0; k < p.size(); k += 2)
        if (p[k] > t) return p[k];
      return kInfT;
    case Kind::Pulse: {
      const double td = arg(p, 2, 0.0);
      const double tr = nz(arg(p, 3, 0.0), tstep), tf = nz(arg(p, 4, 0.0), tstep);
      const double pw = nz(arg(p, 5, 0.0), tstop), per = nz(arg(p, 6, 0.0), tstop), np = arg(p, 7, 0.0);
      if (t < td) return td;
      const double corners[4] = {0.0, tr, tr + pw, tr + pw + tf};
      double base = td;
      if (per > 0) base = td + std::floor((t - td) / per) * per;
      for (int cycle = 0; cycle < 2; ++cycle) {
        if (np > 0 && base - td >= np * per) break;  // no pulse after the np-th
        for (double c : corners) {
          const double bp = base + c;
          if (bp > t) return bp;
        }
        if (!(per > 0)) break;
        base += per;
      }
      return kInfT;
    }
  }
  return kInfT;
}

}  // namespace anasim
