// Resistor R between pins p and n, as ngspice 39's resistor: a value or a .model (type r: sheet resistance RSH
// with L, W, NARROW, SHORT, or a default R), multipliers m and scale, a separate AC resistance ac=, and the
// temperature coefficients tc1, tc2 (polynomial) or tce (exponential) about the model's TNOM.
#pragma once
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

// The resistor's values before temperature (what the instance and its model give).
struct ResistorValues {
  double r = 0;             // [ohm] resistance at the nominal temperature, before m and scale
  double r_ac = 0;          // [ohm] AC resistance at the nominal temperature (= r unless ac= is given)
  double m = 1, scale = 1;  // conductance multiplied by m, divided by scale
  double tc1 = 0, tc2 = 0;  // [1/K], [1/K^2] polynomial temperature coefficients
  double tce = 0;           // [%/K] exponential coefficient (factor 1.01^(tce dT)), used when tce_given
  bool tce_given = false;
  double tnom = std::numeric_limits<double>::quiet_NaN();  // [C] model TNOM; NaN: the circuit's (.options tnom)
  double temp = std::numeric_limits<double>::quiet_NaN();  // [C] instance temperature; NaN: the circuit's
  double dtemp = 0;         // [K] instance offset from the circuit temperature
};

class Resistor : public Device {
 public:
  Resistor(const FlatDevice& fd, const ResistorValues& v);
  void declare(PatternBuilder& p) override;
  void load(LoadContext& ctx) override;
  void load_ac(AcLoadContext& ctx) override;
  void set_temperature(const Temperature& t) override;
  RhsSplit rhs_split() const override { return RhsSplit::MatrixOnly; }
  void dc_paths(std::vector<NodePair>& out) const override { out.emplace_back(p_, n_); }
  double conductance() const { return g_; }  // [S]
 private:
  NodeId p_, n_;
  UnknownIndex up_, un_;
  ResistorValues v_;
  double g_, g_ac_;  // [S] DC and AC conductance at the circuit temperature
  AdmittanceStamp y_;
};

}  // namespace anasim
