// Linear resistor (see resistor.hpp).
#include "devices/resistor.hpp"
#include "devices/registry.hpp"

namespace anasim {

namespace {
enum { kR };
class ResistorType : public DeviceType {
 public:
  ResistorType() {
    key = "r";
    long_name = "resistor";
    description = "linear resistor";
    pins = {"p", "n"};
    positional = {"r"};
    params = {
        {"r", "ohm", std::nan(""), 0, kInf, "resistance", ParamKind::Real, true, "resistance"},
    };
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status&) const override {
    return std::make_unique<Resistor>(fd, fd.params[kR]);
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
