// Independent voltage (V) and current (I) sources: DC value, AC magnitude/phase, and a PULSE/SIN/EXP/PWL
// time function. As in ngspice, .op/.dc/.ac use `dc` when given and otherwise the time function at t = 0;
// transient (its initial operating point included) uses the time function when there is one. All values are scaled by ctx.srcfact.
#include <cmath>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "devices/waveform.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {
enum { kDc, kAcMag, kAcPhase, kPulse, kSin, kExp, kPwl };

ParamTable source_params(const char* unit) {
  return {
      {"dc", unit, 0.0, -kInf, kInf, "DC value"},
      {"acmag", unit, 0.0, -kInf, kInf, "AC small-signal magnitude", ParamKind::Real, false, "ac"},
      {"acphase", "deg", 0.0, -kInf, kInf, "AC small-signal phase"},
      {"pulse", "", 0.0, -kInf, kInf, "PULSE(v1 v2 td tr tf pw per)", ParamKind::List},
      {"sin", "", 0.0, -kInf, kInf, "SIN(vo va freq td theta phase)", ParamKind::List},
      {"exp", "", 0.0, -kInf, kInf, "EXP(v1 v2 td1 tau1 td2 tau2)", ParamKind::List},
      {"pwl", "", 0.0, -kInf, kInf, "PWL(t1 v1 t2 v2 ...)", ParamKind::List},
  };
}

// Shared by V and I: the value of the source at a load.
class SourceValue {
 public:
  Status init(const FlatDevice& fd) {
    dc_ = fd.params[kDc];
    dc_given_ = fd.params.has(kDc);
    ac_ = std::polar(fd.params[kAcMag], fd.params[kAcPhase] * M_PI / 180.0);
    const std::pair<int, Waveform::Kind> kinds[] = {
        {kPulse, Waveform::Kind::Pulse}, {kSin, Waveform::Kind::Sin}, {kExp, Waveform::Kind::Exp}, {kPwl, Waveform::Kind::Pwl}};
    for (auto [idx, kind] : kinds) {
      if (!fd.params.has(idx)) continue;
      if (wave_.kind != Waveform::Kind::None)
        return Status::input(fmt::format("source '{}' has more than one time function", fd.name), fd.params.loc[idx]);
      wave_.kind = kind;
      wave_.p = fd.params.list()[idx];
      if (const char* msg = wave_.check()) return Status::input(msg, fd.params.loc[idx]);
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
                  " source: DC, AC and PULSE/SIN/EXP/PWL";
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
    std::string line = fmt::format("{} {} {}", spice_instance_name(key, fd.name), pins[0], pins[1]);
    if (fd.params.has(kDc) || !(fd.params.has(kPulse) || fd.params.has(kSin) || fd.params.has(kExp) || fd.params.has(kPwl)))
      line += fmt::format(" dc {:.15g}", fd.params[kDc]);
    if (fd.params.has(kAcMag) || fd.params.has(kAcPhase))
      line += fmt::format(" ac {:.15g} {:.15g}", fd.params[kAcMag], fd.params[kAcPhase]);
    const std::pair<int, const char*> fns[] = {{kPulse, "pulse"}, {kSin, "sin"}, {kExp, "exp"}, {kPwl, "pwl"}};
    for (auto [idx, nm] : fns)
      if (fd.params.has(idx)) line += fmt_list(nm, fd.params.list()[idx]);
    return line;
  }
};
}  // namespace

std::unique_ptr<DeviceType> make_vsource_type() { return std::make_unique<SourceType<VSource>>("v", "vsource", "V"); }
std::unique_ptr<DeviceType> make_isource_type() { return std::make_unique<SourceType<ISource>>("i", "isource", "A"); }

}  // namespace anasim
