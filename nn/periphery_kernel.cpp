// Coefficients of the fast evaluator's periphery kernel (nn/periphery_kernel.hpp) from a hardware config: the
// op-amp's DC coefficients and the diodes' through the device models, so the kernel evaluates the same equations
// as the MNA devices of build_netlist's circuit.
#include "nn/periphery_kernel.hpp"
#include "engine/elaborate.hpp"
#include "nn/fast_eval.hpp"

namespace anasim::nn::fast {

namespace {

OpampDc opamp_dc(const HardwareConfig& cfg) {
  opamp_model::Params p;
  p.level = static_cast<int>(opamp_param(cfg, "level"));
  p.a0 = opamp_param(cfg, "a0");
  p.gbw = opamp_param(cfg, "gbw");
  p.sr = opamp_param(cfg, "sr");
  p.vos = 0.0;  // per instance (HardwareInstance offsets)
  p.ib = opamp_param(cfg, "ib");
  p.rin = opamp_param(cfg, "rin");
  p.rout = opamp_param(cfg, "rout");
  p.ilim = opamp_param(cfg, "ilim");
  p.cmrr = opamp_param(cfg, "cmrr");
  p.iq = 0.0;  // supply current: no supply pins in the mapped circuit
  p.hd_hi = opamp_param(cfg, "headroom_hi");
  p.hd_lo = opamp_param(cfg, "headroom_lo");
  p.vpos = opamp_param(cfg, "vpos");
  p.vneg = opamp_param(cfg, "vneg");
  return opamp_model::dc_coeffs(p);
}

// The rectifier diodes as build_netlist's model card "dnn" has them: is, n, rs; the rest at the defaults.
diode_model::Coeffs diode_coeffs(const HardwareConfig& cfg) {
  diode_model::Params p;
  p.is = cfg.diode_is;
  p.n = cfg.diode_n;
  p.rs = cfg.diode_rs;
  return diode_model::coeffs(p);
}

}  // namespace

Kernel make_kernel(const HardwareConfig& cfg, const LayerMapping& m, const FastOptions& opt) {
  Kernel k;
  k.rect = m.rectifier;
  k.op = opamp_dc(cfg);
  k.di = diode_coeffs(cfg);
  k.gmin = Options{}.gmin;  // build_netlist keeps the default
  k.adc_g = m.adc && std::isfinite(m.adc_spec.rin) ? 1.0 / m.adc_spec.rin : 0.0;  // as the ADC device stamps it
  k.L = make_layout(m.rectifier, k.op.level, k.di.rs > 0);
  k.reltol = opt.reltol;
  k.vntol = opt.vntol;
  k.max_newton = opt.max_newton;
  return k;
}

}  // namespace anasim::nn::fast
