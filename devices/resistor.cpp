// Linear resistor (see resistor.hpp).
#include "devices/resistor.hpp"
#include "devices/registry.hpp"

namespace anasim {

namespace {
struct ResistorParams {
  double r = std::nan("");  // [ohm] required
};

class ResistorType : public DeviceType {
 public:
  ResistorType() {
    key = "r";
    long_name = "resistor";
    description = "linear resistor";
    pins = {"p", "n"};
    positional = {"r"};
    params = {
        ParamDecl("r").alias("resistance").unit("ohm").def(std::nan("")).above(0).doc("resistance")
            .bind<&ResistorParams::r>(),
    };
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    ResistorParams p;
    if (Status e = apply_params(fd.params, p, "resistor"); !e) {
      st.merge(e);
      return nullptr;
    }
    return std::make_unique<Resistor>(fd, p.r);
  }
};
}  // namespace

Resistor::Resistor(const FlatDevice& fd, double r)
    : Device(fd.name, fd.loc), p_(fd.nodes[0]), n_(fd.nodes[1]), g_(1.0 / r) {}

void Resistor::declare(PatternBuilder& p) {
  up_ = p.unknown(p_);
  un_ = p.unknown(n_);
  y_.declare(p, up_, un_);
}

void Resistor::load(LoadContext& ctx) { y_.stamp(ctx.A, g_); }
void Resistor::load_ac(AcLoadContext& ctx) { y_.stamp(ctx.A, std::complex<double>(g_)); }

std::unique_ptr<DeviceType> make_resistor_type() { return std::make_unique<ResistorType>(); }

}  // namespace anasim
