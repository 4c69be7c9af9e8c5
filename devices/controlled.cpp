// Linear controlled sources: E (VCVS), G (VCCS), F (CCCS), H (CCVS). F and H read the branch current of a
// controlling voltage source (or inductor); G and F drive current from p through the device to n.
#include <cmath>
#include <fmt/format.h>
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

namespace {
struct ControlledParams {
  double gain = std::nan("");  // required; unit per kind (V/V, A/V, A/A, V/A)
};

double gain_of(const FlatDevice& fd) {
  ControlledParams p;
  apply_params(fd.params, p, "controlled source");  // one Real line: cannot fail
  return p.gain;
}

// E: v(p) - v(n) = gain * (v(cp) - v(cn)); branch current unknown.
class Vcvs : public Device {
 public:
  Vcvs(const FlatDevice& fd) : Device(fd.name, fd.loc), nodes_(fd.nodes), gain_(gain_of(fd)) {}
  void allocate(Allocator& a) override { br_ = a.add_branch(*this); }
  void declare(PatternBuilder& p) override {
    b_.declare(p, p.unknown(nodes_[0]), p.unknown(nodes_[1]), br_);
    p.entry(br_, p.unknown(nodes_[2]), &br_cp_);
    p.entry(br_, p.unknown(nodes_[3]), &br_cn_);
  }
  template <class T> void stamp(T* A) const {
    b_.stamp_incidence(A);
    A[br_cp_] -= T(gain_);
    A[br_cn_] += T(gain_);
  }
  void load(LoadContext& ctx) override { stamp(ctx.A); }
  RhsSplit rhs_split() const override { return RhsSplit::MatrixOnly; }
  void load_ac(AcLoadContext& ctx) override { stamp(ctx.A); }
  void voltage_edges(std::vector<NodePair>& out) const override { out.emplace_back(nodes_[0], nodes_[1]); }
 private:
  std::vector<NodeId> nodes_;
  double gain_;
  UnknownIndex br_;
  BranchStamp b_;
  Offset br_cp_ = 0, br_cn_ = 0;
};

// G: current gain * (v(cp) - v(cn)) from p to n.
class Vccs : public Device {
 public:
  Vccs(const FlatDevice& fd) : Device(fd.name, fd.loc), nodes_(fd.nodes), gm_(gain_of(fd)) {}
  void declare(PatternBuilder& p) override {
    g_.declare(p, p.unknown(nodes_[0]), p.unknown(nodes_[1]), p.unknown(nodes_[2]), p.unknown(nodes_[3]));
  }
  void load(LoadContext& ctx) override { g_.stamp(ctx.A, gm_); }
  RhsSplit rhs_split() const override { return RhsSplit::MatrixOnly; }
  void load_ac(AcLoadContext& ctx) override { g_.stamp(ctx.A, std::complex<double>(gm_)); }
 private:
  std::vector<NodeId> nodes_;
  double gm_;
  TransconductanceStamp g_;
};

// F: current gain * i(control) from p to n.
class Cccs : public Device {
 public:
  Cccs(const FlatDevice& fd) : Device(fd.name, fd.loc), nodes_(fd.nodes), gain_(gain_of(fd)), control_(fd.control) {}
  void declare(PatternBuilder& p) override {
    UnknownIndex c = p.branch_of(control_);
    p.entry(p.unknown(nodes_[0]), c, &p_c_);
    p.entry(p.unknown(nodes_[1]), c, &n_c_);
  }
  template <class T> void stamp(T* A) const { A[p_c_] += T(gain_); A[n_c_] -= T(gain_); }
  void load(LoadContext& ctx) override { stamp(ctx.A); }
  RhsSplit rhs_split() const override { return RhsSplit::MatrixOnly; }
  void load_ac(AcLoadContext& ctx) override { stamp(ctx.A); }
 private:
  std::vector<NodeId> nodes_;
  double gain_;
  std::string control_;
  Offset p_c_ = 0, n_c_ = 0;
};

// H: v(p) - v(n) = gain * i(control) [ohm]; branch current unknown.
class Ccvs : public Device {
 public:
  Ccvs(const FlatDevice& fd) : Device(fd.name, fd.loc), nodes_(fd.nodes), gain_(gain_of(fd)), control_(fd.control) {}
  void allocate(Allocator& a) override { br_ = a.add_branch(*this); }
  void declare(PatternBuilder& p) override {
    b_.declare(p, p.unknown(nodes_[0]), p.unknown(nodes_[1]), br_);
    p.entry(br_, p.branch_of(control_), &br_c_);
  }
  template <class T> void stamp(T* A) const { b_.stamp_incidence(A); A[br_c_] -= T(gain_); }
  void load(LoadContext& ctx) override { stamp(ctx.A); }
  RhsSplit rhs_split() const override { return RhsSplit::MatrixOnly; }
  void load_ac(AcLoadContext& ctx) override { stamp(ctx.A); }
  void voltage_edges(std::vector<NodePair>& out) const override { out.emplace_back(nodes_[0], nodes_[1]); }
 private:
  std::vector<NodeId> nodes_;
  double gain_;
  std::string control_;
  UnknownIndex br_;
  BranchStamp b_;
  Offset br_c_ = 0;
};

template <class Dev>
class ControlledType : public DeviceType {
 public:
  ControlledType(const char* k, const char* ln, const char* desc, bool current_controlled, const char* unit) {
    key = k;
    long_name = ln;
    description = desc;
    needs_control = current_controlled;
    pins = current_controlled ? std::vector<std::string>{"p", "n"} : std::vector<std::string>{"p", "n", "cp", "cn"};
    positional = {"gain"};
    params = {ParamDecl("gain").alias("value").unit(unit).def(std::nan("")).doc("gain").bind<&ControlledParams::gain>()};
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status&) const override { return std::make_unique<Dev>(fd); }
};
}  // namespace

std::unique_ptr<DeviceType> make_vcvs_type() {
  return std::make_unique<ControlledType<Vcvs>>("e", "vcvs", "voltage-controlled voltage source", false, "V/V");
}
std::unique_ptr<DeviceType> make_vccs_type() {
  return std::make_unique<ControlledType<Vccs>>("g", "vccs", "voltage-controlled current source", false, "A/V");
}
std::unique_ptr<DeviceType> make_cccs_type() {
  return std::make_unique<ControlledType<Cccs>>("f", "cccs", "current-controlled current source", true, "A/A");
}
std::unique_ptr<DeviceType> make_ccvs_type() {
  return std::make_unique<ControlledType<Ccvs>>("h", "ccvs", "current-controlled voltage source", true, "V/A");
}

}  // namespace anasim
