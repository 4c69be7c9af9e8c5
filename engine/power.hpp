// Power in the engine: the power every device absorbs [W], taken from the device's own stamps (no device has
// power code of its own), per-type and total sums, and in transient the energies [J] integrated with the run's
// own rule. Signals: p(<device>), p(<opamp>#rails), p(type:<key>), p(type:rails), p(total); e(...) likewise.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "engine/circuit.hpp"
#include "engine/elaborate.hpp"
#include "engine/integrator.hpp"

namespace anasim {

class NewtonSolver;

// Measures power on a built circuit. While set on a NewtonSolver (set_power_meter), every load goes through
// load() below, which keeps each device's own share of the matrix and rhs; the power a device absorbs at the
// solution x of that load's system is then
//   p = sum over its node rows r of x[r] * (A_dev x - b_dev)[r],
// the current into each of its pins times the pin's voltage (KCL rows: A x - b = current leaving the node into
// the device). Summed over all devices this is x . (A x - b) = 0 to rounding (Tellegen), also for nonlinear
// circuits, because every device is measured on the same linearisation that produced x (refined once in long
// double, so the rounding of x to double does not show either). Devices with supplies
// inside them (op-amps without supply pins) add what they draw (Device::internal_supply_power); that supply is
// reported as a term of its own, "p(<name>#rails)", which delivers it.
class PowerMeter {
 public:
  // Records each device's matrix entries and rhs rows (re-declaring every device against the compiled pattern;
  // offsets come out unchanged). `fn` is the netlist the circuit was built from (device types, same order).
  // Its outputs' @device[name] references (engine/device_query.hpp) become signals of the meter, after the
  // powers; with `powers` false the meter writes those signals only (no p(...)/e(...)).
  PowerMeter(Circuit& c, const FlatNetlist& fn, bool powers = true);

  // Loads every device into ctx.A / ctx.b (as NewtonSolver::load does: same order, same values) and keeps
  // each device's share of them.
  void load(LoadContext& ctx);
  // Absorbed powers at the solution x (size n + 1) of the system of the last load() [W]; s is the solver that
  // loaded and solved it (its factors refine x for the sums, see power.cpp).
  void evaluate(const double* x, NewtonSolver& s);

  // Transient energies: start at zero from the current powers (the t = 0 point, or no point with uic).
  void start_energies(bool have_powers);
  // After an accepted step: integrates the powers of the last evaluate() over the step with its rule.
  void integrate(const Integrator& integ);

  // Signal names and units, in output order: per device (and internal supply), per type, total; with
  // `energies` the e(...) signals follow in the same order; then the @device[name] references.
  void signals(bool energies, std::vector<std::pair<std::string, std::string>>& out) const;
  // Values in the order of signals(), appended to out.
  void values(bool energies, std::vector<double>& out) const;

  // Number of per-device terms: devices in circuit order, then the internal supplies.
  size_t terms() const { return names_.size(); }

 private:
  struct Entry {
    Offset off;  // value-array offset
    int row;     // unknown of the row
    int col;     // unknown multiplying it
    bool node;   // row is a node (KCL) row; branch rows carry no power
  };
  // resid_ = (sum of the device shares of A) xr_ - (sum of their shares of b), in long double.
  void residual();
  Circuit& c_;
  std::vector<Device*> devices_;
  std::vector<int> entry_begin_;   // size devices + 1: entries of device d are [entry_begin_[d], entry_begin_[d+1])
  std::vector<Entry> entries_;     // unique offsets per device, node rows only, no ground
  std::vector<double> dA_;         // size entries_: the device's share of A at the last load
  std::vector<int> rhs_begin_;     // size devices + 1
  std::vector<int> rhs_rows_;      // unique node rows per device
  std::vector<double> db_;         // size rhs_rows_: the device's share of b at the last load
  std::vector<int> supplied_;      // devices with an internal supply (index into devices_)
  std::vector<char> is_node_;      // size n + 1: unknown u is a node voltage
  std::vector<long double> xr_;    // size n + 1: the refined solution the powers are taken at [V, A]
  std::vector<long double> resid_; // size n + 1: residual of xr_
  std::vector<double> d_;          // size n + 1: refinement step

  // Terms: one per device, then one per internal supply.
  std::vector<std::string> names_;  // "<device>" or "<device>#rails"
  std::vector<int> group_of_;       // size terms: index into groups_
  std::vector<std::string> groups_; // "r", "c", ..., "rails"
  std::vector<char> supply_group_;  // size groups_: the group delivers into p(total) (V, I, DAC, rails)
  std::vector<double> p_;           // size terms [W]
  std::vector<double> p1_;          // powers at the last accepted timepoint [W]
  std::vector<double> e1_, e2_;     // energies at the last two accepted timepoints [J]

  // An @device[name] output (engine/device_query.hpp) and its value at the last evaluate().
  struct Reference {
    std::string name;  // "@r1[i]"
    std::string unit;
    int kind;          // DeviceQuery::Kind as int
    int device;        // index into devices_
    int row = -1;      // Current without a branch: the node row of the pin the current enters (first pin)
    double sign = 1;   // -1 when the first pin is ground and `row` is the second pin's
    int branch = -1;   // Current of a device with a branch unknown
    bool dc = false;   // a source's dc parameter: read from the device (a .dc sweep sets it)
    double value = 0;  // [A], [W] or the parameter's unit
  };
  // The current into device d at node row `row`: (A_dev xr - b_dev)[row] [A].
  double pin_current(size_t d, int row) const;
  bool powers_ = true;
  std::vector<Reference> refs_;
};

}  // namespace anasim
