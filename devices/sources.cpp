// Independent voltage (V) and current (I) sources: DC value, AC magnitude/phase, and a PULSE/SIN/EXP/PWL
// time function. As in ngspice, .op/.dc/.ac use `dc` when given and otherwise the time function at t = 0;
// transient (its initial operating point included) uses the time function when there is one. All values are scaled by ctx.srcfact.
#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "devices/waveform.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {
struct SourceParams {
  std::optional<double> dc;       // DC value (with a time function, .op/.dc/.ac use it only when given)
  std::optional<double> acmag;    // AC small-signal magnitude
  std::optional<double> acphase;  // [deg] AC small-signal phase
  std::vector<double> pulse, sin, exp, pwl, am, sffm;  // time functions (empty = not given)
};

ParamTable source_params(const char* unit) {
  using S = SourceParams;
  using P = ParamDecl;
  return {
      P("dc").unit(unit).def(0).doc("DC value").bind<&S::dc>(),
      P("acmag").alias("ac").unit(unit).def(0).doc("AC small-signal magnitude").bind<&S::acmag>(),
      P("acphase").unit("deg").def(0).doc("AC small-signal phase").bind<&S::acphase>(),
      P("pulse").kind(ParamKind::List).doc("PULSE(v1 v2 td tr tf pw per np)").bind<&S::pulse>(),
      P("sin").kind(ParamKind::List).doc("SIN(vo va freq td theta phase)").bind<&S::sin>(),
      P("exp").kind(ParamKind::List).doc("EXP(v1 v2 td1 tau1 td2 tau2)").bind<&S::exp>(),
      P("pwl").kind(ParamKind::List).doc("PWL(t1 v1 t2 v2 ...)").bind<&S::pwl>(),
      P("am").kind(ParamKind::List).doc("AM(va vo mf fc td phasec phases)").bind<&S::am>(),
      P("sffm").kind(ParamKind::List).doc("SFFM(vo va fc mdi fs phasec phases)").bind<&S::sffm>(),
  };
}

// The time functions of p with their names and kinds, in table order.
struct TimeFunction {
  const char* name;
  Waveform::Kind kind;
  const std::vector<double>* values;
};
std::array<TimeFunction, 6> time_functions(const SourceParams& p) {
  return {{{"pulse", Waveform::Kind::Pulse, &p.pulse},
           {"sin", Waveform::Kind::Sin, &p.sin},
           {"exp", Waveform::Kind::Exp, &p.exp},
           {"pwl", Waveform::Kind::Pwl, &p.pwl},
           {"am", Waveform::Kind::Am, &p.am},
           {"sffm", Waveform::Kind::Sffm, &p.sffm}}};
}

// Shared by V and I: the value of the source at a load.
class SourceValue {
 public:
  Status init(const FlatDevice& fd) {
    SourceParams p;
    if (Status st = apply_params(fd.params, p, "source"); !st) return st;
    dc_ = p.dc.value_or(0.0);
    dc_given_ = p.dc.has_value();
    ac_ = std::polar(p.acmag.value_or(0.0), p.acphase.value_or(0.0) * M_PI / 180.0);
    for (const TimeFunction& f : time_functions(p)) {
      if (f.values->empty()) continue;
      const SourceLoc& at = fd.params.loc(fd.params.index_of(f.name));
      if (wave_.kind != Waveform::Kind::None)
        return Status::input(fmt::format("source '{}' has more than one time function", fd.name), at);
      wave_.kind = f.kind;
      wave_.p = *f.values;
      if (const char* msg = wave_.check()) return Status::input(msg, at);
    }
    return {};
  }
  double value(const LoadContext& ctx) const {
    double v;
    if (wave_.kind == Waveform::Kind::None) v = dc_;
    else if (!ctx.transient() && dc_given_ && ctx.tran_stop == 0) v = dc_;  // .op/.dc/.ac bias, not a .tran start
    else v = wave_.value(ctx.transient() ? ctx.time : 0.0, ctx.tran_step, ctx.tran_stop);
    return v * ctx.srcfact;
  }
  double next_breakpoint(double t, double tstep, double tstop) const { return wave_.next_breakpoint(t, tstep, tstop); }
  std::complex<double> ac() const { return ac_; }
  void set_dc(double v) { dc_ = v; dc_given_ = true; }
  double dc() const { return dc_; }
 private:
  double dc_ = 0.0;
  bool dc_given_ = false;
  std::complex<double> ac_;
  Waveform wave_;
};

class VSource : public Device {
 public:
  VSource(const FlatDevice& fd) : Device(fd.name, fd.loc), p_(fd.nodes[0]), n_(fd.nodes[1]) {}
  Status init(const FlatDevice& fd) { return src_.init(fd); }
  void allocate(Allocator& a) override { br_ = a.add_branch(*this); }
  void declare(PatternBuilder& p) override { b_.declare(p, p.unknown(p_), p.unknown(n_), br_); }
  void load(LoadContext& ctx) override {
    b_.stamp_incidence(ctx.A);
    VSource::load_rhs(ctx);
  }
  RhsSplit rhs_split() const override { return RhsSplit::Rhs; }
  void load_rhs(LoadContext& ctx) override {
    ctx.b[b_.rhs] += src_.value(ctx);
    tstep_ = ctx.tran_step;
    tstop_ = ctx.tran_stop;
  }
  void load_ac(AcLoadContext& ctx) override {
    b_.stamp_incidence(ctx.A);
    ctx.b[b_.rhs] += src_.ac();
  }
  double next_breakpoint(double t) const override { return src_.next_breakpoint(t, tstep_, tstop_); }
  void voltage_edges(std::vector<NodePair>& out) const override { out.emplace_back(p_, n_); }
  bool set_dc(double v) override { src_.set_dc(v); return true; }
  double dc_value() const override { return src_.dc(); }
 private:
  NodeId p_, n_;
  UnknownIndex br_;
  BranchStamp b_;
  SourceValue src_;
  double tstep_ = 0, tstop_ = 0;
};

// Current source: positive current flows from p through the source to n.
class ISource : public Device {
 public:
  ISource(const FlatDevice& fd) : Device(fd.name, fd.loc), p_(fd.nodes[0]), n_(fd.nodes[1]) {}
  Status init(const FlatDevice& fd) { return src_.init(fd); }
  void declare(PatternBuilder& p) override { i_.declare(p, p.unknown(p_), p.unknown(n_)); }
  void load(LoadContext& ctx) override {
    i_.stamp(ctx.b, src_.value(ctx));
    tstep_ = ctx.tran_step;
    tstop_ = ctx.tran_stop;
  }
  RhsSplit rhs_split() const override { return RhsSplit::Rhs; }
  void load_rhs(LoadContext& ctx) override { ISource::load(ctx); }
  void load_ac(AcLoadContext& ctx) override { i_.stamp(ctx.b, src_.ac()); }
  double next_breakpoint(double t) const override { return src_.next_breakpoint(t, tstep_, tstop_); }
  bool set_dc(double v) override { src_.set_dc(v); return true; }
  double dc_value() const override { return src_.dc(); }
 private:
  NodeId p_, n_;
  CurrentStamp i_;
  SourceValue src_;
  double tstep_ = 0, tstop_ = 0;
};

std::string fmt_list(const char* name, const std::vector<double>& v) {
  return fmt::format(" {}({:.15g})", name, fmt::join(v, " "));
}

template <class Dev>
class SourceType : public DeviceType {
 public:
  SourceType(const char* k, const char* ln, const char* unit) {
    key = k;
    long_name = ln;
    description = std::string("independent ") + (k[0] == 'v' ? "voltage" : "current") +
                  " source: DC, AC and PULSE/SIN/EXP/PWL/AM/SFFM";
    pins = {"p", "n"};
    positional = {"dc"};
    source_syntax = true;
    supply = true;
    params = source_params(unit);
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    auto d = std::make_unique<Dev>(fd);
    Status s = d->init(fd);
    if (!s) {
      st.merge(s);
      return nullptr;
    }
    return d;
  }
  std::string spice_line(const FlatDevice& fd, const std::vector<std::string>& pins) const override {
    SourceParams p;
    apply_params(fd.params, p, "source");  // no integer or choice lines: cannot fail
    std::string line = fmt::format("{} {} {}", spice_instance_name(key, fd.name), pins[0], pins[1]);
    const auto fns = time_functions(p);
    const bool timed = std::any_of(fns.begin(), fns.end(), [](const TimeFunction& f) { return !f.values->empty(); });
    if (p.dc || !timed) line += fmt::format(" dc {:.15g}", p.dc.value_or(0.0));
    if (p.acmag || p.acphase)
      line += fmt::format(" ac {:.15g} {:.15g}", p.acmag.value_or(0.0), p.acphase.value_or(0.0));
    for (const TimeFunction& f : fns)
      if (!f.values->empty()) line += fmt_list(f.name, *f.values);
    return line;
  }
};
}  // namespace

std::unique_ptr<DeviceType> make_vsource_type() { return std::make_unique<SourceType<VSource>>("v", "vsource", "V"); }
std::unique_ptr<DeviceType> make_isource_type() { return std::make_unique<SourceType<ISource>>("i", "isource", "A"); }

}  // namespace anasim
