// Numerical integration of device states (charges [C], fluxes [Wb]) for transient analysis:
// backward Euler, trapezoidal and variable-step Gear (BDF, orders 2..5) companion coefficients, state history,
// the SPICE charge-based local-truncation-error step estimate, and the Newton predictor (initial guess at a
// new timepoint extrapolated from the accepted solutions).
#pragma once
#include <vector>
#include "engine/device.hpp"
#include "engine/elaborate.hpp"

namespace anasim {

class Integrator {
 public:
  // n_states states, integrated at orders up to max_order (1..kMaxOrder; the history kept: max_order + 2 points).
  explicit Integrator(int n_states, int max_order = 2);

  // Highest order of the variable-step BDF (Integration::Gear at order 3..kMaxOrder; the engine's .tran uses
  // orders 1 and 2, the network transient's fast path higher ones on the outputs' exponential approach).
  static constexpr int kMaxOrder = 5;
  // Coefficients for a step of size h [s] at the given order (1 = BE; 2 = trapezoidal or Gear-2; 3..kMaxOrder:
  // variable-step BDF of that order, Gear only, on the last `order` accepted points).
  // Writes ctx.ag0 and ctx.hist and points ctx.q at the state vector being solved.
  void prepare(LoadContext& ctx, Integration method, int order, double h);
  // After Newton converged: stores dq/dt of every state for the trapezoidal history.
  void finish(const LoadContext& ctx);
  // Largest step [s] the LTE of the just-solved step allows (SPICE CKTterr, with its Gear error constants above
  // order 2); +inf if no states or not enough history.
  double lte_step(const Options& opt, Integration method, int order) const;
  // Accepts the solved step: shifts the history.
  void accept();
  // Initialises history from the states written by a DC load (or init_uic): q1 = q0, dq/dt = 0.
  void start_from_dc(const LoadContext& ctx);
  std::vector<double>& q0() { return q_[0]; }
  // Per-state floors [C] of the charge tolerance, in place of Options::chgtol where larger (empty: chgtol for every
  // state). For a state whose charge is C v, a floor C * vtol / reltol keeps the truncation tolerance on v at vtol or
  // more near v = 0, instead of reltol * chgtol / C (for a 1-nF internal capacitor 1e-8 V, where SPICE's chgtol is
  // made for pF: 1e-5 V on 1 pF).
  void set_charge_floor(std::vector<double> floor) { qfloor_ = std::move(floor); }
  // Integrates another quantity y' = f over the last prepared step with the same rule (method, order, step):
  // returns y0 from y1, y2 (values at the last two accepted points), f0 (at the new point) and f1 (at the last
  // accepted point). Used for the energies of the power probes [J from W]. Orders 1 and 2 only.
  double integrate(double y1, double y2, double f0, double f1) const;

 private:
  // History points: the order's own and the LTE's divided difference over order + 2 points.
  static constexpr int kPoints = kMaxOrder + 2;
  int n_;
  int np_;                          // history points kept: max_order + 2 (<= kPoints)
  std::vector<double> q_[kPoints];  // q_[0] current step, q_[1] last accepted, q_[2], ... older
  std::vector<double> i_[2];        // dq/dt at q_[0] and q_[1] [A or V]
  std::vector<double> hist_;        // companion history term per state
  std::vector<double> qfloor_;      // [C] per-state floors of the charge tolerance (empty: Options::chgtol)
  double h_[kPoints] = {};          // step sizes: h_[0] current, h_[1] previous, ...
  int valid_ = 1;                   // number of valid history points in q_[1..]
  double ag0_ = 0;
  // The rule of the last prepare(): 1 = backward Euler, 2 = trapezoidal, 3 = Gear-2 (i = ag0 q0 + a1 q1 + a2 q2),
  // 4 = BDF of order 3 and above.
  int rule_ = 1;
  double gear_a1_ = 0, gear_a2_ = 0;
};

// Relative error of the decay rate that the BDF of order k (1..Integrator::kMaxOrder) at constant steps h gives an
// exponential approach y' = -y / tau, z = h / tau: |ln R / (-z) - 1| for the principal root R of the rule's
// characteristic polynomial. To leading order z^k / (k + 1) (the trapezoidal rule's: z^2 / 12); the decay comes out
// too slow at orders 1, 3 and 5, too fast at orders 2 and 4 (as with the trapezoidal rule).
double bdf_rate_error(int k, double z);
// The step, in units of the approach's time constant (z above, at most 1), at which the BDF of order k has the rate
// error eps. For eps = 5e-4: 0.125, 0.20, 0.26 at orders 3, 4, 5 (the trapezoidal rule: 0.077).
double bdf_step_for_rate_error(int k, double eps);
// The largest growth of the step from one BDF step of order k to the next that this code allows: below the
// variable-step BDF's zero-stability bounds (1.618 at order 3, 1.28 at 4, 1.13 at 5; Grigorieff); 2 up to order 2
// (SPICE's).
double bdf_step_growth(int k);

// The .tran step control of ngspice 39's DCtran, shared by the engine's transient (engine/an_tran.cpp) and the
// network transient's fast path (nn/fast_tran.cpp): breakpoints closer than a minimum after t are the caller's to
// drop; at a breakpoint the order drops to 1 and the step to 0.1 x min(step before the cut, distance to the next
// breakpoint); the very first step is cut by another 10 and skips the LTE check; the order rises to 2 only when
// the order-2 LTE estimate allows a step > 1.05 x the current one; a rejected step is retried smaller.
struct StepControl {
  double delta = 0;       // [s] the step being tried
  double save_delta = 0;  // [s] the step before it was last cut to land on a breakpoint
  int order = 1;
  int maxorder = 2;
  bool at_break = true;   // the last accepted time is a breakpoint (t = 0 counts as one)
  bool first = true;      // no step accepted yet

  // Sets delta for the step from t toward the next breakpoint bp with largest step tmax [s]; true when the step
  // lands on bp (delta = bp - t).
  bool propose(double t, double bp, double tmax);
  // After a converged step other than the first: the next step newdelta [s] from the LTE (and the order for it),
  // at most `growth` times this one; false when the truncation error rejects this step (newdelta is then the
  // retry's). The order rises from 1 to 2 only (higher orders are the caller's to set).
  bool judge(const Integrator& integ, const Options& opt, Integration method, double& newdelta, double growth = 2);
  // A further bound h [s] on the step from other states' truncation error (their own tolerances), after judge():
  // newdelta is at most h, and false when h rejects the step as judge() would (h <= 0.9 x the step tried).
  bool bound(double h, double& newdelta) const;
  // A rejected step: the retry's delta = newdelta, at least hmin once; false when already at hmin (give up).
  bool retry(double newdelta, double hmin);
};

// Initial guess for Newton at a new timepoint (SPICE's predictor, ngspice DEVpred): the solution extrapolated
// linearly from the last two accepted timepoints, x = x1 + (h / h1) (x1 - x2) for a step h after a step h1.
// Devices still limit their junction voltages against their previous evaluation, so a poor guess (e.g. across
// a source corner) only costs iterations. Saves about one Newton iteration per step on diode circuits.
class Predictor {
 public:
  // size: length of the solution vector (n unknowns + 1, ground last).
  explicit Predictor(size_t size);
  // Records the accepted solution x reached after a step h [s]; h = 0 for the initial point (t = 0 or after
  // a restart), which forgets the older point so the next guess is x itself.
  void accept(const std::vector<double>& x, double h);
  // Writes the guess for a step of size h [s] from the last accepted point into x (same size).
  void predict(double h, std::vector<double>& x) const;
  // Last accepted solution.
  const std::vector<double>& last() const { return x_[0]; }

 private:
  std::vector<double> x_[2];  // x_[0] last accepted solution, x_[1] the one before (if have_old_)
  double h1_ = 0.0;           // [s] step between them
  bool have_old_ = false;
};

}  // namespace anasim
