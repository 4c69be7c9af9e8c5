// The circuit: device instances, the MNA unknowns and the compiled sparse pattern (CSC) they stamp into.
#pragma once
#include <memory>
#include <string>
#include <vector>
#include "engine/device.hpp"
#include "engine/elaborate.hpp"

namespace anasim {

struct UnknownInfo {
  std::string name;     // output name: "v(out)" or "i(v1)"
  bool is_node = true;  // voltage [V] (vntol) or branch current [A] (abstol)
  bool visible = true;  // written to results
};

class Circuit {
 public:
  // Instantiates devices, allocates unknowns, compiles the pattern, runs topology checks
  // (voltage loops, floating nodes). Errors name devices and nodes, located in the source.
  Status build(const FlatNetlist& fn, const DeviceCatalog& catalog);

  int n() const { return static_cast<int>(unknowns_.size()); }   // number of unknowns
  int nnz() const { return static_cast<int>(Ai_.size()); }
  int n_states() const { return n_states_; }
  bool nonlinear() const { return nonlinear_; }
  const std::vector<UnknownInfo>& unknowns() const { return unknowns_; }
  const std::vector<std::unique_ptr<Device>>& devices() const { return devices_; }
  // The devices that allocated integration states, in device order.
  const std::vector<Device*>& state_devices() const { return state_devices_; }
  Device* find_device(const std::string& name) const;
  // Sets every device's temperature (build() sets the netlist's: .temp / .options temp, tnom).
  void set_temperature(const Temperature& t);
  // Counts set_temperature calls: device values cached elsewhere (NewtonSolver's charge table) are stale when it
  // has moved.
  long temperature_epoch() const { return temperature_epoch_; }
  UnknownIndex node_unknown(NodeId n) const { return n.v == 0 ? UnknownIndex() : node_unknown_[n.v]; }
  const std::vector<std::string>& node_names() const { return node_names_; }
  // Offsets of diagonal entries, one per unknown (gmin stepping and .ic forcing).
  const std::vector<Offset>& diag() const { return diag_; }
  // CSC pattern, size n+1 and nnz, rows sorted within columns.
  const std::vector<int>& Ap() const { return Ap_; }
  const std::vector<int>& Ai() const { return Ai_; }
  // Unknowns in the longest elimination order a device knows (Device::elimination_order), for
  // SparseLU::set_ordering_hint. Orders of several devices are not joined: the unknowns outside the hint are
  // eliminated first, and periphery between crossbar tiles then couples the tiles (nn eval --reference of the
  // 784-128-10 network on its tiles' joined orders: 7.0 s per image against 2.3 s).
  std::vector<int> elimination_hint() const;
  // Describes an unknown for messages: "node 'out'" or "branch current of 'v1'".
  std::string describe(int unknown) const;

 private:
  friend class CircuitBuilder;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Device*> state_devices_;  // subset of devices_ (not owning)
  long temperature_epoch_ = 0;
  std::vector<UnknownInfo> unknowns_;
  std::vector<std::string> node_names_;
  std::vector<UnknownIndex> node_unknown_;
  std::vector<std::string> branch_owner_;  // per unknown: owning device for branches, "" for nodes
  std::vector<Offset> diag_;
  std::vector<int> Ap_, Ai_;
  int n_states_ = 0;
  bool nonlinear_ = false;
};

}  // namespace anasim
