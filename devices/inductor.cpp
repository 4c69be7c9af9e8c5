// Linear inductor L: l [H] between p and n with a branch-current unknown, optional initial current ic [A].
#include <cmath>
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {
struct InductorParams {
  double l = std::nan("");   // [H] required
  std::optional<double> ic;  // [A] initial current (with uic)
};

class Inductor : public Device {
 public:
  Inductor(const FlatDevice& fd, const InductorParams& p)
      : Device(fd.name, fd.loc), p_(fd.nodes[0]), n_(fd.nodes[1]), l_(p.l), ic_(p.ic.value_or(0.0)),
        has_ic_(p.ic.has_value()) {}
  void allocate(Allocator& a) override {
    br_ = a.add_branch(*this);
    state_ = a.add_states(1);
  }
  void declare(PatternBuilder& p) override {
    b_.declare(p, p.unknown(p_), p.unknown(n_), br_);
    p.entry(br_, br_, &br_br_);
  }
  // Branch equation: v(p) - v(n) - d(L i)/dt = 0.
  void load(LoadContext& ctx) override {
    b_.stamp_incidence(ctx.A);
    Inductor::load_rhs(ctx);
    if (ctx.transient()) ctx.A[br_br_] -= ctx.ag0 * l_;
  }
  RhsSplit rhs_split() const override { return RhsSplit::Rhs; }
  // The flux and, in a transient, the companion voltage source.
  void load_rhs(LoadContext& ctx) override {
    const double r = ctx.linear_charge(state_, l_, ctx.v(br_));
    if (ctx.transient()) ctx.b[b_.rhs] += r;
  }
  void update_states(LoadContext& ctx) override { ctx.q[state_] = l_ * ctx.v(br_); }
  bool linear_charges(std::vector<LinearCharge>& out) const override {
    out.push_back({state_, l_, br_, UnknownIndex(-1), -1, b_.rhs});
    return true;
  }
  void init_uic(LoadContext& ctx) override { ctx.q[state_] = l_ * (has_ic_ ? ic_ : 0.0); }
  void load_ac(AcLoadContext& ctx) override {
    b_.stamp_incidence(ctx.A);
    ctx.A[br_br_] -= std::complex<double>(0.0, ctx.omega * l_);
  }
  void dc_paths(std::vector<NodePair>& out) const override { out.emplace_back(p_, n_); }
  void voltage_edges(std::vector<NodePair>& out) const override { out.emplace_back(p_, n_); }
 private:
  NodeId p_, n_;
  UnknownIndex br_;
  double l_, ic_;
  bool has_ic_;
  int state_ = 0;
  BranchStamp b_;
  Offset br_br_ = 0;
};

class InductorType : public DeviceType {
 public:
  InductorType() {
    key = "l";
    long_name = "inductor";
    description = "linear inductor (branch current is an unknown)";
    pins = {"p", "n"};
    positional = {"l"};
    params = {
        ParamDecl("l").alias("inductance").unit("H").def(std::nan("")).above(0).doc("inductance")
            .bind<&InductorParams::l>(),
        ParamDecl("ic").unit("A").def(0).doc("initial current (with uic)").bind<&InductorParams::ic>(),
    };
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    InductorParams p;
    if (Status e = apply_params(fd.params, p, "inductor"); !e) {
      st.merge(e);
      return nullptr;
    }
    return std::make_unique<Inductor>(fd, p);
  }
};
}  // namespace

std::unique_ptr<DeviceType> make_inductor_type() { return std::make_unique<InductorType>(); }

}  // namespace anasim
