// Elaboration's cards (see elaborate.hpp): the options (through option_table()) and the analyses.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <fmt/format.h>
#include "engine/elaborator.hpp"

namespace anasim {

namespace elab {

Status Elaborator::options() {
  const ParamTable& table = option_table();
  ParamValues pv = default_params(table);
  for (const auto& a : pn_.options) {
    const int i = pv.index_of(a.name);
    if (i < 0) {
      std::string names;
      for (const ParamSpec& s : table)
        if (!s.no_effect) names += fmt::format("{}{}", names.empty() ? "" : ", ", s.name);
      return Status::input(fmt::format("unknown option '{}'; expected {}", a.name, names), a.loc);
    }
    const ParamSpec& spec = table[i];
    if (spec.no_effect) {
      warn(fmt::format("{}:{}: option {} has no effect in anasim ({})", a.loc.file(), a.loc.line, a.name,
                       spec.no_effect));
      continue;
    }
    std::string text = a.values.empty() ? "1" : a.values[0].text;
    const std::string m = to_lower(text);
    pv.given[i] = 1;
    pv.set_loc(i, a.loc);
    if (spec.kind == ParamKind::Text) {  // method (with its other spellings) and solver
      if (m == "trapezoidal") text = "trap";
      else if (m == "gear2" || m == "bdf2") text = "gear";
      else if (m == "be") text = "euler";
      if (choice_index(spec, text) < 0 && std::string(spec.name) == "method")
        return Status::input(fmt::format("unknown integration method '{}'; expected trap, gear or euler", text),
                             a.loc);
      if (choice_index(spec, text) < 0)
        return Status::input(fmt::format("unknown {} '{}'; expected one of {}", spec.name, text, spec.choices),
                             a.loc);
      pv.text()[i] = text;
      continue;
    }
    if (spec.kind == ParamKind::Flag) {  // `.options power`, YAML `options: {power: true}`
      if (m == "true" || m == "yes" || m == "on") text = "1";
      else if (m == "false" || m == "no" || m == "off") text = "0";
    }
    double v = 1;
    if (!a.values.empty()) {
      if (Status st = evaluate_expr(text, a.values[0].loc, top_, v); !st) return st;
    }
    if (spec.min_exclusive ? !(v > spec.min) : !(v >= spec.min && v <= spec.max)) {
      auto num = [](double x) {  // 1e9 rather than 1e+09
        const double e = std::round(std::log10(x));
        return x >= 1e6 && x == std::pow(10.0, e) ? fmt::format("1e{}", e) : fmt::format("{}", x);
      };
      std::string want = spec.min_exclusive         ? fmt::format("> {}", num(spec.min))
                         : spec.max - spec.min == 1 ? fmt::format("{} or {}", num(spec.min), num(spec.max))
                         : !std::isfinite(spec.max) ? fmt::format(">= {}", num(spec.min))
                                                    : fmt::format("from {} to {}", num(spec.min), num(spec.max));
      return Status::input(fmt::format("option {} must be {}, got {}", a.name, want, v), a.loc);
    }
    pv.value[i] = v;
  }
  return apply_params(pv, out_.options, "options");
}

Status Elaborator::analyses() {
  for (const auto& a : pn_.analyses) {
    Analysis an;
    an.kind = a.kind;
    an.loc = a.loc;
    an.power = a.power;
    const double nan = std::nan("");
    auto at = [&](const ValueExpr& e) { return e.loc.valid() ? e.loc : a.loc; };  // the offending value
    switch (a.kind) {
      case AnalysisSpec::Kind::Op: break;
      case AnalysisSpec::Kind::Dc:
        if (a.sweeps.empty() || a.sweeps.size() > 2)
          return Status::input(".dc needs one or two sweeps: source start stop step", a.loc);
        for (const auto& s : a.sweeps) {
          DcSweep sw;
          sw.source = s.source;
          sw.loc = s.loc;
          const size_t k = names_.find(s.source, names_of(out_.devices));
          sw.temperature = s.source == "temp" && k == NameIndex::npos;
          if (sw.temperature) {
            // Expressions reading `temper` follow the sweep (as ngspice's): run_dc_temper elaborates again.
            if (!out_.temper && find_temper())
              out_.temper = std::make_shared<const TemperSource>(
                  TemperSource{pn_, var_ ? std::optional<Variation>(*var_) : std::nullopt});
          } else if (k == NameIndex::npos || !out_.devices[k].type->source_syntax)
            return Status::input(fmt::format(".dc sweeps '{}', which is not an independent source in this circuit",
                                             s.source), s.loc);
          if (Status st = eval(s.start, nan, sw.start, s.loc, "sweep start"); !st) return st;
          if (Status st = eval(s.stop, nan, sw.stop, s.loc, "sweep stop"); !st) return st;
          if (Status st = eval(s.step, nan, sw.step, s.loc, "sweep step"); !st) return st;
          if (sw.step == 0 || (sw.stop - sw.start) / sw.step < 0)
            return Status::input(fmt::format("sweep step {} does not lead from {} to {}", sw.step, sw.start, sw.stop),
                                 s.step.loc.valid() ? s.step.loc : s.loc);
          if ((sw.stop - sw.start) / sw.step > 1e7)
            return Status::input("sweep has more than 10 million points", s.loc);
          an.sweeps.push_back(sw);
        }
        break;
      case AnalysisSpec::Kind::Tran:
        if (Status st = eval(a.tstep, nan, an.tstep, a.loc, "tstep (.tran tstep tstop)"); !st) return st;
        if (Status st = eval(a.tstop, nan, an.tstop, a.loc, "tstop (.tran tstep tstop)"); !st) return st;
        if (Status st = eval(a.tstart, 0.0, an.tstart, a.loc, "tstart"); !st) return st;
        if (Status st = eval(a.tmax, 0.0, an.tmax, a.loc, "tmax"); !st) return st;
        an.uic = a.uic;
        if (!(an.tstep > 0) || !(an.tstop > 0))
          return Status::input(fmt::format(".tran needs tstep > 0 and tstop > 0, got {} and {}", an.tstep, an.tstop),
                               at(!(an.tstep > 0) ? a.tstep : a.tstop));
        if (an.tstart < 0 || an.tstart >= an.tstop)
          return Status::input(fmt::format(".tran tstart {} must lie in [0, tstop)", an.tstart), at(a.tstart));
        if (an.tmax < 0) return Status::input(".tran tmax must be >= 0", at(a.tmax));
        break;
      case AnalysisSpec::Kind::Ac: {
        an.variation = a.variation;
        double pts;
        if (Status st = eval(a.points, nan, pts, a.loc, "number of points (.ac dec n fstart fstop)"); !st) return st;
        if (Status st = eval(a.fstart, nan, an.fstart, a.loc, "fstart"); !st) return st;
        if (Status st = eval(a.fstop, nan, an.fstop, a.loc, "fstop"); !st) return st;
        if (an.variation != "dec" && an.variation != "oct" && an.variation != "lin")
          return Status::input(fmt::format(".ac variation '{}' must be dec, oct or lin", an.variation), a.loc);
        if (!(pts >= 1) || pts > 1e7)
          return Status::input(fmt::format(".ac needs 1 to 10 million points, got {}", pts), at(a.points));
        an.points = static_cast<int>(pts);
        if (!(an.fstart > 0) && an.variation != "lin")
          return Status::input(fmt::format(".ac fstart must be > 0 for {} sweeps, got {}", an.variation, an.fstart),
                               at(a.fstart));
        if (an.fstart < 0 || an.fstop < an.fstart)
          return Status::input(fmt::format(".ac needs 0 <= fstart <= fstop, got {} and {}", an.fstart, an.fstop),
                               at(an.fstart < 0 ? a.fstart : a.fstop));
        break;
      }
      case AnalysisSpec::Kind::Extension: {
        an.type = a.type;
        an.args = default_params(a.type->params);
        if (Status st = assign_params(an.args, a.args, top_, fmt::format("{} analysis", a.type->name)); !st)
          return st;
        AnalysisRequest req;
        req.netlist = &out_;
        req.args = &an.args;
        req.loc = a.loc;
        if (Status st = a.type->check(req); !st) return st;
        break;
      }
    }
    out_.analyses.push_back(an);
  }
  return {};
}

}  // namespace elab

const ParamTable& option_table() {
  using P = ParamDecl;
  using O = Options;
  // Options of other simulators that cannot change a result anasim computes: output format and listing
  // controls, accounting, and convergence aids whose solution (when there is one) is the same.
  static const char* const kListing = "listing or output format only";
  static const char* const kConvergence = "a convergence aid; it does not change a converged answer";
  static const char* const kNoMos = "MOS defaults; anasim has no MOS devices";
  static const ParamTable table = {
      P("reltol").def(1e-3).above(0).doc("relative tolerance").bind<&O::reltol>(),
      P("abstol").unit("A").def(1e-12).above(0).doc("current tolerance").bind<&O::abstol>(),
      P("vntol").unit("V").def(1e-6).above(0).doc("voltage tolerance").bind<&O::vntol>(),
      P("chgtol").unit("C").def(1e-14).above(0).doc("charge tolerance (truncation error)").bind<&O::chgtol>(),
      P("trtol").def(7).above(0).doc("truncation-error overestimation factor").bind<&O::trtol>(),
      P("gmin").unit("S").def(1e-12).above(0).doc("minimum conductance across junctions").bind<&O::gmin>(),
      P("itl1").def(100).range(1, 1e9).doc("DC Newton iteration limit").bind<&O::itl1>(),
      P("itl4").def(10).range(1, 1e9).doc("transient Newton iteration limit per step").bind<&O::itl4>(),
      P("method").choices("euler|trap|gear").def(1).doc("integration method (trapezoidal, gear2, bdf2, be also read)")
          .bind<&O::method>(),
      P("maxord").def(2).range(1, 2).doc("highest integration order").bind<&O::maxord>(),
      P("klu").kind(ParamKind::Flag).def(1).range(0, 1).doc("KLU sparse solver (ngspice)")
          .no_effect("anasim chooses its sparse LU by option solver"),
      P("solver").choices("auto|klu|umfpack|pcg").def(0)
          .doc("linear solver: auto (conjugate gradients on large nodal systems where they apply, else KLU, or "
               "UMFPACK with METIS ordering for large matrices that fill in), klu, umfpack, pcg")
          .bind<&O::solver>(),
      P("lureuse").def(50000).range(0, 1e12)
          .doc("unknowns from which Newton iterations of a nonlinear circuit first solve with the previous LU "
               "factors as a GMRES preconditioner, factoring only when that does not converge (0: never)")
          .bind<&O::lureuse>(),
      P("power").kind(ParamKind::Flag).def(0).range(0, 1).doc("power probes in every op, dc and tran")
          .bind<&O::power>(),
      P("maxdevices").def(10e6).range(1, 1e9).doc("device limit after subcircuit expansion").bind<&O::maxdevices>(),
      P("temp").unit("C").def(27).range(-273.15, kInf).doc("circuit temperature (as .temp)").bind<&O::temp>(),
      P("tnom").unit("C").def(27).range(-273.15, kInf).doc("nominal temperature of model parameters")
          .bind<&O::tnom>(),
      P("itl2").def(50).doc("DC transfer-curve iteration limit").no_effect(kConvergence),
      P("itl3").def(4).doc("lower transient iteration limit").no_effect(kConvergence),
      P("itl5").def(5000).doc("total transient iteration limit").no_effect(kConvergence),
      P("itl6").def(0).doc("source-stepping steps").no_effect(kConvergence),
      P("gminsteps").def(0).doc("gmin-stepping steps").no_effect(kConvergence),
      P("srcsteps").def(0).doc("source-stepping steps").no_effect(kConvergence),
      P("pivtol").def(1e-13).doc("pivot tolerance").no_effect(kConvergence),
      P("pivrel").def(1e-3).doc("relative pivot ratio").no_effect(kConvergence),
      P("sparse").kind(ParamKind::Flag).def(1).doc("sparse solver").no_effect(kConvergence),
      P("dcstep").def(0).doc("HSPICE DC convergence conductance").no_effect(kConvergence),
      P("acct").kind(ParamKind::Flag).doc("accounting").no_effect(kListing),
      P("noacct").kind(ParamKind::Flag).doc("no accounting").no_effect(kListing),
      P("nopage").kind(ParamKind::Flag).doc("no page breaks").no_effect(kListing),
      P("list").kind(ParamKind::Flag).doc("list the deck").no_effect(kListing),
      P("node").kind(ParamKind::Flag).doc("node table").no_effect(kListing),
      P("nomod").kind(ParamKind::Flag).doc("no model listing").no_effect(kListing),
      P("opts").kind(ParamKind::Flag).doc("option listing").no_effect(kListing),
      P("post").def(1).doc("HSPICE output file").no_effect(kListing),
      P("probe").kind(ParamKind::Flag).doc("HSPICE: write only probed signals").no_effect(kListing),
      P("ingold").def(0).doc("HSPICE number format").no_effect(kListing),
      P("numdgt").def(4).doc("printed digits").no_effect(kListing),
      P("brief").kind(ParamKind::Flag).doc("HSPICE short listing").no_effect(kListing),
      P("nowarn").kind(ParamKind::Flag).doc("suppress warnings").no_effect(kListing),
      P("noinit").kind(ParamKind::Flag).doc("no operating-point printout").no_effect(kListing),
      P("keepopinfo").kind(ParamKind::Flag).doc("keep op information").no_effect(kListing),
      P("savecurrents").kind(ParamKind::Flag).doc("device currents (anasim writes source currents)")
          .no_effect(kListing),
      P("maxwarns").def(0).doc("warning limit").no_effect(kListing),
      P("filetype").kind(ParamKind::Text).doc("raw file format").no_effect(kListing),
      P("defl").unit("m").doc("MOS default length").no_effect(kNoMos),
      P("defw").unit("m").doc("MOS default width").no_effect(kNoMos),
      P("defad").unit("m^2").doc("MOS default drain area").no_effect(kNoMos),
      P("defas").unit("m^2").doc("MOS default source area").no_effect(kNoMos),
  };
  return table;
}

}  // namespace anasim
