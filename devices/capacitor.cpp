// Linear capacitor C: c [F] between p and n, optional initial voltage ic [V] (used with uic).
#include <cmath>
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {
struct CapacitorParams {
  double c = std::nan("");   // [F] required
  std::optional<double> ic;  // [V] initial voltage (with uic)
};

class Capacitor : public Device {
 public:
  Capacitor(const FlatDevice& fd, const CapacitorParams& p)
      : Device(fd.name, fd.loc), p_(fd.nodes[0]), n_(fd.nodes[1]), c_(p.c), ic_(p.ic.value_or(0.0)),
        has_ic_(p.ic.has_value()) {}
  void allocate(Allocator& a) override { state_ = a.add_states(1); }
  void declare(PatternBuilder& p) override {
    up_ = p.unknown(p_);
    un_ = p.unknown(n_);
    y_.declare(p, up_, un_);
    i_.declare(p, up_, un_);
  }
  void load(LoadContext& ctx) override {
    const double v = ctx.v(up_) - ctx.v(un_);
    const double i = ctx.ddt(state_, c_ * v);
    if (!ctx.transient()) return;
    const double geq = ctx.ag0 * c_;
    y_.stamp(ctx.A, geq);
    i_.stamp(ctx.b, i - geq * v);
  }
  void update_states(LoadContext& ctx) override { ctx.q[state_] = c_ * (ctx.v(up_) - ctx.v(un_)); }
  void init_uic(LoadContext& ctx) override {
    const double v = has_ic_ ? ic_ : ctx.v(up_) - ctx.v(un_);
    ctx.q[state_] = c_ * v;
  }
  void load_ac(AcLoadContext& ctx) override { y_.stamp(ctx.A, std::complex<double>(0.0, ctx.omega * c_)); }
 private:
  NodeId p_, n_;
  UnknownIndex up_, un_;
  double c_, ic_;
  bool has_ic_;
  int state_ = 0;
  AdmittanceStamp y_;
  CurrentStamp i_;
};

class CapacitorType : public DeviceType {
 public:
  CapacitorType() {
    key = "c";
    long_name = "capacitor";
    description = "linear capacitor";
    pins = {"p", "n"};
    positional = {"c"};
    params = {
        ParamDecl("c").alias("capacitance").unit("F").def(std::nan("")).range(0, kInf).doc("capacitance")
            .bind<&CapacitorParams::c>(),
        ParamDecl("ic").unit("V").def(0).doc("initial voltage (with uic)").bind<&CapacitorParams::ic>(),
    };
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    CapacitorParams p;
    if (Status e = apply_params(fd.params, p, "capacitor"); !e) {
      st.merge(e);
      return nullptr;
    }
    return std::make_unique<Capacitor>(fd, p);
  }
};
}  // namespace

std::unique_ptr<DeviceType> make_capacitor_type() { return std::make_unique<CapacitorType>(); }

}  // namespace anasim
