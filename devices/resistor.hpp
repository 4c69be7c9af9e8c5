// Linear resistor R: r [ohm] between pins p and n.
#pragma once
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

class Resistor : public Device {
 public:
  Resistor(const FlatDevice& fd, double r);
  void declare(PatternBuilder& p) override;
  void load(LoadContext& ctx) override;
  void load_ac(AcLoadContext& ctx) override;
  void dc_paths(std::vector<NodePair>& out) const override { out.emplace_back(p_, n_); }
  double conductance() const { return g_; }  // [S]
 private:
  NodeId p_, n_;
  UnknownIndex up_, un_;
  double g_;
  AdmittanceStamp y_;
};

}  // namespace anasim
