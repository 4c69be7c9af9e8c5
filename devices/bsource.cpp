// Behavioural source "b" (ngspice B source, YAML type bsource): either a voltage v(p) - v(n) = f (V=expr,
// with a branch current unknown) or a current f flowing from p through the source to n (I=expr), where f is an
// expression of node voltages v(a) / v(a, b), branch currents i(vname), parameters and time
// (engine/expr.hpp). The expression is compiled once at elaboration; every Newton iteration evaluates it with
// its exact gradient and stamps the linearisation f(x0) + sum_k df/dx_k (x_k - x0_k). AC uses the same
// Jacobian at the operating point. Its memory: the Newton step limiting of its tanh() arguments (ExprLimiting:
// the arguments at the previous iterate), as the op-amp device limits its own, and one integration state per
// distinct ddt() argument, integrated like a capacitor's charge (0 at DC; j omega times the argument in AC, where
// ngspice 39's ddt has no small-signal part).
#include <cmath>
#include <complex>
#include <memory>
#include <vector>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {

struct BSourceParams {
  std::shared_ptr<CompiledExpr> v;  // voltage expression, null if not given
  std::shared_ptr<CompiledExpr> i;  // current expression, null if not given
};

class BSource : public Device {
 public:
  BSource(const FlatDevice& fd, std::shared_ptr<const CompiledExpr> f, bool voltage)
      : Device(fd.name, fd.loc), f_(std::move(f)), voltage_(voltage), p_(fd.nodes[0]), n_(fd.nodes[1]) {
    const size_t nv = static_cast<size_t>(f_->n_vars());
    u_.resize(nv);
    jac_.resize(nv);
    x0_.resize(nv);
    grad_.resize(nv);
    work_.resize(f_->work_size());
    lim_prev_.resize(static_cast<size_t>(f_->n_limited()));
    if (f_->n_ddt() > 0) ac_grad_.resize(nv);
  }

  bool nonlinear() const override { return f_->n_vars() > 0; }

  void allocate(Allocator& al) override {
    if (voltage_) br_ = al.add_branch(*this);
    if (f_->n_ddt() > 0) state_ = al.add_states(f_->n_ddt());
  }

  void declare(PatternBuilder& pb) override {
    const UnknownIndex up = pb.unknown(p_), un = pb.unknown(n_);
    const auto& qs = f_->quantities();
    for (size_t k = 0; k < qs.size(); ++k)
      u_[k] = qs[k].kind == ExprQuantity::Kind::Voltage ? pb.unknown(qs[k].node) : pb.branch_of(qs[k].name);
    if (voltage_) {
      b_.declare(pb, up, un, br_);
      for (size_t k = 0; k < qs.size(); ++k) pb.entry(br_, u_[k], &jac_[k].p);
    } else {
      for (size_t k = 0; k < qs.size(); ++k) {
        pb.entry(up, u_[k], &jac_[k].p);
        pb.entry(un, u_[k], &jac_[k].n);
      }
      i_.declare(pb, up, un);
    }
  }

  void load(LoadContext& ctx) override {
    const size_t nv = u_.size();
    for (size_t k = 0; k < nv; ++k) x0_[k] = ctx.v(u_[k]);
    ExprLimiting lim;
    lim.prev = lim_prev_.data();
    lim.first = ctx.init_junctions || !ctx.limit_tanh;
    ExprIntegration integ;
    if (f_->n_ddt() > 0) {
      integ.q = ctx.q + state_;
      if (ctx.transient()) integ.ag0 = ctx.ag0, integ.hist = ctx.hist + state_;
    }
    const double f = f_->eval(x0_.data(), ctx.time, grad_.data(), work_.data(), &lim, &integ);
    if (lim.limited) ctx.noncon = true;
    if (!std::isfinite(f) && ctx.domain_error.empty())
      ctx.domain_error = fmt::format("{} ({}:{}): {}", name(), loc().file(), loc().line, f_->domain_error(work_.data()));
    double c = f;  // constant part of the linearisation
    for (size_t k = 0; k < nv; ++k) c -= grad_[k] * x0_[k];
    stamp_jacobian(ctx.A, grad_.data());
    if (voltage_) ctx.b[b_.rhs] += c;
    else i_.stamp(ctx.b, c);
  }

  void load_ac(AcLoadContext& ctx) override {
    if (f_->n_ddt() == 0) return stamp_jacobian(ctx.A, grad_.data());
    f_->ac_gradient(work_.data(), ctx.omega, ac_grad_.data());
    stamp_jacobian(ctx.A, ac_grad_.data());
  }

  void dc_paths(std::vector<NodePair>& out) const override {
    if (!voltage_) out.emplace_back(p_, n_);
  }
  void voltage_edges(std::vector<NodePair>& out) const override {
    if (voltage_) out.emplace_back(p_, n_);
  }

 private:
  // Matrix entries of controlling quantity k: rows p and n (current), or the branch row (voltage, in p).
  struct Entries {
    Offset p = 0, n = 0;
  };

  // The linearised stamps with gradient g (size n_vars), real or complex.
  template <class T, class G> void stamp_jacobian(T* A, const G* g) const {
    if (voltage_) {  // v(p) - v(n) - sum_k g_k x_k = f(x0) - sum_k g_k x0_k
      b_.stamp_incidence(A);
      for (size_t k = 0; k < u_.size(); ++k) A[jac_[k].p] -= T(g[k]);
    } else {  // current sum_k g_k x_k leaves p, enters n
      for (size_t k = 0; k < u_.size(); ++k) {
        A[jac_[k].p] += T(g[k]);
        A[jac_[k].n] -= T(g[k]);
      }
    }
  }

  std::shared_ptr<const CompiledExpr> f_;
  bool voltage_;
  NodeId p_, n_;
  UnknownIndex br_;                 // V=: branch current [A], from p through the source to n
  BranchStamp b_;
  CurrentStamp i_;
  std::vector<UnknownIndex> u_;     // size n_vars: unknown of each controlling quantity
  std::vector<Entries> jac_;        // size n_vars
  std::vector<double> x0_, grad_;   // size n_vars: iterate [V or A]; gradient at the last load [S, V/V, ohm, A/A]
  std::vector<double> work_;        // size f_->work_size(): evaluation scratch
  std::vector<double> lim_prev_;    // size f_->n_limited(): limited tanh arguments at the previous iterate
  int state_ = 0;                   // first of f_->n_ddt() integration states (ddt arguments)
  std::vector<std::complex<double>> ac_grad_;  // size n_vars when the expression has ddt(): AC gradient
};

class BSourceType : public DeviceType {
 public:
  BSourceType() {
    key = "b";
    long_name = "bsource";
    description = "behavioural source (ngspice B): V=expr or I=expr of v(n), v(a,b), i(vname), time";
    pins = {"p", "n"};
    params = {
        ParamDecl("v").unit("V").kind(ParamKind::Expr).doc("voltage v(p) - v(n) as an expression")
            .bind<&BSourceParams::v>(),
        ParamDecl("i").unit("A").kind(ParamKind::Expr).doc("current from p through the source to n as an expression")
            .bind<&BSourceParams::i>(),
    };
  }

  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    BSourceParams p;
    apply_params(fd.params, p, "bsource");  // expressions only: cannot fail
    const bool v = fd.params.has(fd.params.index_of("v")), i = fd.params.has(fd.params.index_of("i"));
    if (v == i) {
      st.merge(Status::input(fmt::format(v ? "bsource '{}' takes either V=expression or I=expression, not both"
                                           : "bsource '{}' needs V=expression or I=expression",
                                         fd.name),
                             v ? fd.params.loc(fd.params.index_of("i")) : fd.loc));
      return nullptr;
    }
    return std::make_unique<BSource>(fd, v ? p.v : p.i, v);
  }

  // "b<name> p n v = <expr>" with flattened node and source names and parameters folded to numbers.
  std::string spice_line(const FlatDevice& fd, const std::vector<std::string>& pins) const override {
    BSourceParams p;
    apply_params(fd.params, p, "bsource");
    const bool v = fd.params.has(fd.params.index_of("v"));
    const std::shared_ptr<CompiledExpr>& f = v ? p.v : p.i;
    if (!f) return fmt::format("* bsource {}: no expression", fd.name);
    auto name = [](const ExprQuantity& q) {
      if (q.kind == ExprQuantity::Kind::Voltage) return "v(" + q.name + ")";
      return "i(" + spice_instance_name(q.device_key.empty() ? "v" : q.device_key, q.name) + ")";
    };
    return fmt::format("{} {} {} {} = {}", spice_instance_name(key, fd.name), pins[0], pins[1],
                       v ? "v" : "i", f->text(name));
  }
};

}  // namespace

std::unique_ptr<DeviceType> make_bsource_type() { return std::make_unique<BSourceType>(); }

}  // namespace anasim
