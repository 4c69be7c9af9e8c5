// Numerical core shared by all analyses: assembly of the MNA system from device stamps, KLU factorisation
// with reuse, Newton-Raphson with SPICE convergence tests and damping, and the operating-point strategy
// (plain Newton, then gmin stepping, then source stepping).
#pragma once
#include <memory>
#include <string>
#include <vector>
#include "engine/circuit.hpp"
#include "engine/results.hpp"
#include "engine/sparse_lu.hpp"

namespace anasim {

class PowerMeter;

class NewtonSolver {
 public:
  NewtonSolver(Circuit& c, const Options& opt);

  // Solution vector, size n + 1 (entry n is ground and always 0).
  std::vector<double>& x() { return x_; }
  LoadContext& ctx() { return ctx_; }
  Circuit& circuit() { return c_; }
  const Options& options() const { return opt_; }

  // Node voltages forced during a DC solve with a 1e10 S conductance (SPICE .ic / nodeset semantics).
  void set_forced(std::vector<std::pair<UnknownIndex, double>> f) { forced_ = std::move(f); }
  // Power probes (engine/power.hpp): while set, every load goes through the meter (same stamps, same order),
  // which keeps each device's share. nullptr = off.
  void set_power_meter(PowerMeter* m) { meter_ = m; }

  // Newton iteration from the current x() with the current ctx() settings (mode, time, srcfact, states).
  // A circuit without nonlinear devices is solved with one linear solve. Returns a numerical error naming
  // the worst nodes on non-convergence, or the nodes/devices involved on a singular matrix.
  Status newton(int max_iter, bool init_junctions);

  // DC operating point (ctx mode Dc): Newton, then gmin stepping, then source stepping; if all fail, the same
  // again without Newton step limiting of tanh arguments (ngspice's plain Newton).
  // `from_previous`: start from the current x() (continuation, e.g. the previous DC sweep point) instead of
  // initialising junctions at their critical voltages. Falls back to stepping in either case.
  Status operating_point(bool from_previous = false);

  // Stamps all devices at x() into A/b without solving (used by AC to linearise at the operating point).
  void load();
  // Solves A d = r in place with the factors of the last Newton iteration's matrix (r: size n + 1; entry n is
  // ground, left 0). Returns false, r unchanged, if there are no factors or that matrix held more than the
  // device stamps (gmin stepping, forced .ic values). Used to refine the solution the power probes use.
  bool solve_last(double* r);

  SolverStats stats() const;
  // [A] Largest |sum_j A_ij x_j - b_i| over the node rows i (Kirchhoff's current law) of the last loaded system
  // at x(): for a linear circuit the KCL residual of the solution itself, for a nonlinear one that of the last
  // Newton linearization. O(nnz).
  double kcl_residual() const;
  long newton_iterations() const { return iterations_; }

 private:
  bool factor_and_solve(std::string& err);
  // Options::lureuse: solves A_ x = b_ into xnew_ with the current factors (of other values) as GMRES's
  // preconditioner, when the circuit is that large and the factors are a direct solver's. False (nothing done) if
  // it does not apply or does not converge: the caller factors A_ (and the next call tries the new factors).
  // Factoring sooner, after any reuse of more than 4 iterations, was slower on the shipped network (75 against 90
  // time points in 167 s): a factorization costs more than the iterations it saves.
  bool try_reuse();
  // b (size n) in place: A_ x = b by GMRES with the current factors, from guess (size n, e.g. the last iterate) or
  // 0; false, b unchanged, if it did not converge.
  bool reuse_solve(double* b, const double* guess = nullptr);
  // GMRES's iterations per reuse and its tolerance in a transient: the solution's relative error, at most a
  // thousandth of Newton's reltol (the shipped network's transient netlist had 1e-7, now 1e-4). Measured on its
  // 411,534 unknowns (2026-12-02): 2-12 iterations per solve; in 164 s, 104 time points (t = 5.50 ns) against 49
  // (1.39 ns) with a factorization per Newton iteration. GMRES starts from the last iterate (try_reuse), so it only
  // has to resolve the Newton step to that absolute error (later that day: 157 points, 9.46 ns, in 140 s against
  // 103 points, 5.39 ns, from 0; `nn eval --reference` 3.04 -> 1.67 s per image).
  static constexpr int kReuseIterations = 12;
  static constexpr double kReuseTolerance = 1e-10;
  // Outside a transient (operating points, DC sweeps: the nn --reference solves) the solution is held to what a
  // direct solve gives: with 1e-10 there the shipped network's reference differences rose from 1.3e-10 to 6.8e-10.
  static constexpr double kReuseToleranceDc = 1e-13;
  bool last_reused_ = false;
  long reuses_ = 0, reuse_iterations_ = 0;
  // A step of a linear transient whose devices all split their stamps (Device::rhs_split): its matrix depends on
  // ctx.ag0 alone, so at an ag0 it has factored before only the right-hand side is loaded and that factorization
  // solves (the same matrix as a full load, bit for bit). Returns false, nothing done, when that does not apply.
  bool rhs_only_step();
  // Whether the current load may be keyed by ctx.ag0 (a split linear circuit's plain transient load: no power
  // meter, no gmin stepping, no forced values).
  bool rhs_split_applies() const;
  // Solves with facts_[cur_] into xnew_ (marking its use): b_ as loaded.
  void solve_current();
  // One pass of the operating-point strategy from x0 with the current ctx().limit_tanh: Newton (and a cold
  // start when continuing from a previous solution), then gmin stepping, then source stepping.
  Status dc_strategy(const std::vector<double>& x0, bool from_previous);
  Status nonconvergence_error(const char* what) const;
  // A numerical error saying `what`, led by the device (name, file:line) and operation whose value was not
  // finite at the last load, if there was one.
  Status numerical_error(const std::string& what) const;

  // A factorization and the matrix values it is of. A linear circuit's transient revisits a few matrices over and
  // over (one per step size and integration order: the steps after every breakpoint repeat the same sequence), so
  // its solver keeps up to kMaxFactorizations of them (least recently used replaced) within kCacheBytes of
  // factorizations (SparseLU::factor_bytes) and their matrices in all; a nonlinear circuit's matrix changes with
  // every Newton iteration and keeps one.
  struct Factorization {
    std::unique_ptr<SparseLU<double>> lu;
    std::vector<double> A;  // the factored values (empty: none, or the factorization failed)
    long used = 0;          // last use (use_clock_), for the replacement
    // The transient companion coefficient A was loaded with (keyed: a split linear circuit's, see rhs_only_step).
    bool keyed = false;
    double ag0 = 0;
  };
  static constexpr int kMaxFactorizations = 32;
  static constexpr double kCacheBytes = 7.2e8;
  // With KLU, a new slot (within kCacheBytes, as for every solver) only while there are fewer than
  // kMinKluFactorizations or the cache holds at most kKluCacheBytes: beyond that the least recently used slot is
  // refactored in place (its memory and pivot order), at a fraction of what a new slot's full factorization into
  // fresh memory costs (UMFPACK factors anew either way). Eight slots hold the step sizes that every breakpoint's
  // cycle repeats (two slots made the 64x16 crossbar transient refactor 322 times: 0.148 -> 0.237 s; four, 320
  // times). Measured (perf stat -r 5, against every slot kept): the 64x16 crossbar transient (40,000 entries per
  // factorization) 8 slots instead of 31, analysis 0.169 -> 0.127-0.143 s and 42 -> 27 MB (with its CSV). The
  // budget counts KLU's n-sized arrays and workspace too (~100 bytes per unknown and slot, more than the factors
  // of a sparse ladder): counted as 12 bytes per entry of L and U only, the 1000-section RC ladder kept 24 slots
  // of ~150 KB each.
  static constexpr int kMinKluFactorizations = 8;
  static constexpr double kKluCacheBytes = 1.2e6;
  std::unique_ptr<SparseLU<double>> new_lu() const;
  SparseLU<double>& lu() { return *facts_[cur_].lu; }
  const SparseLU<double>& lu() const { return *facts_[cur_].lu; }

  Circuit& c_;
  Options opt_;
  std::vector<Factorization> facts_;
  int cur_ = 0;  // the factorization solves use
  long use_clock_ = 0;
  bool split_ = false;  // linear circuit whose devices all split their stamps (rhs_only_step)
  std::vector<Device*> rhs_devices_;  // those with right-hand-side stamps (RhsSplit::Rhs), in circuit order,
                                      // without the linear-charge devices
  std::vector<Device*> state_devices_;  // Circuit::state_devices() without the linear-charge devices
  // The devices' linear charges (Device::linear_charges), by field; unknowns and offsets with ground and "none" as
  // n (x's ground entry, b's trash entry). Evaluated by update_charges / rhs_charges without virtual calls.
  struct ChargeTable {
    std::vector<int> state, u, w, ra, rb;
    std::vector<double> c;
    std::vector<const Device*> devices;  // those that gave them, for refreshing c
    long epoch = 0;                      // c is from this Circuit::temperature_epoch()
  } charges_;
  void refresh_charges();  // c from the devices again when the temperature has changed
  void update_charges();  // ctx_.q at ctx_.x
  void rhs_charges();     // ctx_.q and the transient companion terms into ctx_.b
  bool a_stale_ = false;  // A_ is not the matrix of the last solve (an rhs_only_step's: facts_[cur_].A is)
  std::vector<double> A_, b_, x_, xnew_;
  std::vector<double> q_dc_;  // size n_states: state storage for DC loads (tran points ctx.q elsewhere)
  LoadContext ctx_;
  double gdiag_ = 0.0;  // [S] gmin-stepping conductance from every node to ground
  std::vector<std::pair<UnknownIndex, double>> forced_;
  PowerMeter* meter_ = nullptr;
  long iterations_ = 0;
  long reused_ = 0;
  std::vector<double> last_dx_;  // for error reports
  std::string domain_error_;     // ctx().domain_error of the last load (empty: every value was finite)
};

}  // namespace anasim
