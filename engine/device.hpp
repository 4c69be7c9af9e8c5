// The device interface. A device runs in phases:
//   allocate()  once per topology: branch unknowns, internal nodes, integration states;
//   declare()   once per topology: the matrix entries it stamps (offsets are written back after the
//               sparse pattern is compiled, so load() indexes the value array with no look-ups);
//   load()      every Newton iteration: evaluate and stamp;  load_ac() per frequency point.
// Stamps are "companion form": the device adds to A and b so that the solution of A x = b is the next
// Newton iterate (not a delta), as in SPICE.
#pragma once
#include <complex>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "engine/param.hpp"
#include "engine/types.hpp"

namespace anasim {

class Device;
struct FlatDevice;

// Offset into the matrix value array (or rhs array). Ground rows/columns map to a trash slot
// at the end of the array, so stamping code never branches on ground.
using Offset = int;

// Phase 1: unknowns and states.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // Unknown for a node (ground -> UnknownIndex(-1)).
  virtual UnknownIndex unknown(NodeId n) const = 0;
  // New branch-current unknown, output as "i(<name>)" [A].
  virtual UnknownIndex add_branch(const Device& owner, const std::string& suffix = "") = 0;
  // New internal node "<owner>#<suffix>" [V]; not written to outputs unless `visible`.
  virtual NodeId add_internal_node(const Device& owner, const std::string& suffix, bool visible = false) = 0;
  // Reserve `count` consecutive integration states (charge [C] or flux [Wb]); returns the first index.
  virtual int add_states(int count) = 0;
};

// Phase 2: matrix pattern. The builder writes the final value-array offset into *slot once the pattern
// is compiled; slot must stay valid (a member of the heap-allocated device).
class PatternBuilder {
 public:
  virtual ~PatternBuilder() = default;
  virtual void entry(UnknownIndex row, UnknownIndex col, Offset* slot) = 0;
  // Unknown for a node (ground -> UnknownIndex(-1)).
  virtual UnknownIndex unknown(NodeId n) const = 0;
  // Branch unknown of another device (F/H controlling source); UnknownIndex(-1) if it has none.
  virtual UnknownIndex branch_of(const std::string& device_name) const = 0;
  // rhs offset of an unknown (ground -> trash slot).
  virtual Offset rhs(UnknownIndex u) const = 0;
};

enum class Integration { BackwardEuler, Trapezoidal, Gear };  // Gear: the variable-step BDF (order 2 in .tran)

// The circuit temperature a device evaluates its parameters at (.temp, .options temp/tnom, a .dc temp sweep).
struct Temperature {
  static constexpr double kCtoK = 273.15;  // ngspice CONSTCtoK
  double temp = 27.0 + kCtoK;  // [K] circuit temperature
  double tnom = 27.0 + kCtoK;  // [K] default nominal temperature of model parameters (a model's TNOM overrides it)
};

// Everything load() needs. x, A, b are owned by the analysis.
struct LoadContext {
  enum class Mode { Dc, Tran };
  Mode mode = Mode::Dc;
  const double* x = nullptr;   // current iterate, size n_unknowns + 1 (last entry is ground = 0)
  double* A = nullptr;         // matrix values, size nnz + 1 (last = trash)
  double* b = nullptr;         // rhs, size n_unknowns + 1 (last = trash)
  double time = 0.0;           // [s]
  double srcfact = 1.0;        // independent-source scale factor (source stepping), 0..1
  double gmin = 1e-12;         // [S] minimum junction conductance
  bool init_junctions = false; // first iteration of an op: nonlinear devices start from their initial guess
  bool noncon = false;         // set by a device when it limited its update (not converged)
  bool limit_tanh = true;      // Newton step limiting of tanh arguments (op-amps, B sources); off for plain Newton
  // Set by the first device of a load whose equations gave a value that is not finite at this iterate: the
  // device, where it is written and what happened, e.g. "b1 (deck.cir:7): sqrt of a negative argument (-0.5)".
  std::string domain_error;
  bool uic_init = false;       // t = 0 of a uic transient: reactive states take their IC values
  double tran_step = 0.0;      // [s] .tran tstep and tstop (defaults of PULSE/SIN/EXP timing), 0 outside .tran
  double tran_stop = 0.0;
  // Integration of a state s: i = dq/dt = ag0 * q + hist[s]. In DC mode ag0 = 0 and hist = 0.
  double ag0 = 0.0;            // [1/s]
  const double* hist = nullptr;  // size n_states
  double* q = nullptr;           // size n_states: charge/flux at this timepoint (written by devices)

  double v(UnknownIndex u) const { return u.v < 0 ? 0.0 : x[u.v]; }
  // Records charge q [C] of state s and returns its current dq/dt [A] (0 in DC).
  double ddt(int s, double charge) {
    q[s] = charge;
    return mode == Mode::Dc ? 0.0 : ag0 * charge + hist[s];
  }
  bool transient() const { return mode == Mode::Tran; }
  // A linear charge q = c * v of state s (Device::LinearCharge): records q and returns its companion term in a
  // transient, the history current (ag0 q + hist[s]) - (ag0 c) v (0 in DC). The one arithmetic the linear-charge
  // devices and the Newton solver's table of them share.
  double linear_charge(int s, double c, double v) {
    const double i = ddt(s, c * v);
    return transient() ? i - (ag0 * c) * v : 0.0;
  }
};

// Small-signal stamping at angular frequency omega [rad/s]; values are complex.
struct AcLoadContext {
  std::complex<double>* A = nullptr;  // size nnz + 1
  std::complex<double>* b = nullptr;  // size n_unknowns + 1
  double omega = 0.0;
};

// A pair of nodes, for topology checks.
using NodePair = std::pair<NodeId, NodeId>;

class Device {
 public:
  Device(std::string name, SourceLoc loc) : name_(std::move(name)), loc_(std::move(loc)) {}
  virtual ~Device() = default;
  const std::string& name() const { return name_; }
  const SourceLoc& loc() const { return loc_; }

  // Phase 1 (see file comment).
  virtual void allocate(Allocator&) {}
  // Phase 2: declare every matrix entry load()/load_ac() may touch.
  virtual void declare(PatternBuilder& p) = 0;
  // True if the stamps depend on x (the analysis then iterates Newton).
  virtual bool nonlinear() const { return false; }
  // Stamps the linearised equations at ctx.x. Must not allocate.
  virtual void load(LoadContext& ctx) = 0;
  // How load()'s transient stamps split (NewtonSolver's linear transients, whose matrix then depends on ctx.ag0
  // alone: a step whose ag0 it has factored before stamps only the right-hand side). No (default): they do not.
  // Rhs: the matrix stamps depend on nothing but ctx.ag0 and the device's parameters, and load_rhs() writes exactly
  // what load() writes outside the matrix (ctx.b, ctx.q, the device's own bookkeeping), the same values in the same
  // order. MatrixOnly: as Rhs, with nothing written outside the matrix (load_rhs() is not called).
  enum class RhsSplit { No, Rhs, MatrixOnly };
  virtual RhsSplit rhs_split() const { return RhsSplit::No; }
  virtual void load_rhs(LoadContext&) {}
  // Writes the device's integration states (ctx.q: charge [C], flux [Wb]) at ctx.x as load() would, without
  // stamping; called only on devices that allocated states, after the single solve of a linear circuit's
  // Newton step. Default: load() (its stamps are discarded).
  virtual void update_states(LoadContext& ctx) { load(ctx); }
  // Linear charges (capacitors, inductors): a state whose charge is q = c * (x[u] - x[w]) and whose load_rhs() is
  // exactly r = ctx.linear_charge(state, c, v) and, in a transient, b[ra] -= r, b[rb] += r (offsets into b; the
  // trash entry where there is none). A device whose load_rhs() and
  // update_states() are nothing but such charges appends them here (called after declare()) and returns true; the
  // Newton solver then evaluates them from one table in its right-hand-side-only steps and state updates, without
  // calling the device. Default: false.
  struct LinearCharge {
    int state;
    double c;            // [F] or [H]
    UnknownIndex u, w;   // the charge's unknowns (ground: UnknownIndex(-1))
    Offset ra, rb;       // -1: none
  };
  virtual bool linear_charges(std::vector<LinearCharge>&) const { return false; }
  // Stamps the small-signal model linearised at the last load(); default: device has no AC stamp.
  virtual void load_ac(AcLoadContext&) {}
  // Sets initial states for a uic transient (charge from IC or from x); called once at t = 0.
  virtual void init_uic(LoadContext&) {}
  // Appends internal nodes in a fill-reducing elimination order the device knows from its structure (a
  // crossbar: nested dissection by rows and columns), for the sparse LU's ordering; default: none.
  virtual void elimination_order(std::vector<NodeId>&) const {}
  // Next source corner strictly after t [s] (PULSE edges, PWL points), or +inf.
  virtual double next_breakpoint(double /*t*/) const { return kInf; }
  // Node pairs joined by a DC conductive path through the device (for floating-node checks).
  virtual void dc_paths(std::vector<NodePair>&) const {}
  // Node pairs whose voltage difference the device imposes (V, E, H, L): a loop of them is an error.
  virtual void voltage_edges(std::vector<NodePair>&) const {}
  // Independent sources: sets the DC value [V or A] for a DC sweep; false if not sweepable.
  virtual bool set_dc(double) { return false; }
  virtual double dc_value() const { return 0.0; }
  // Re-evaluates temperature-dependent values at t; called once after create() and at each point of a .dc temp
  // sweep. At t.temp == t.tnom (27 C by default) a device's numbers must equal its temperature-free ones.
  // Default: no temperature dependence.
  virtual void set_temperature(const Temperature&) {}
  // Derived output signals of the device (e.g. ADC codes): appends {name, unit} pairs, e.g. {"code(adc1)", ""}.
  virtual void probes(std::vector<std::pair<std::string, std::string>>&) const {}
  // Values of those signals at solution x (size n_unknowns + 1) and time t [s] (0 in DC), appended to out.
  virtual void probe_values(const double* /*x*/, double /*t*/, std::vector<double>& /*out*/) const {}
  // Power (engine/power.hpp): true if the device draws from supplies inside it that no pin connects (an op-amp
  // without supply pins and its rails vpos/vneg). Fixed once the device is built.
  virtual bool has_internal_supply() const { return false; }
  // Power [W] drawn from those internal supplies at solution x (size n_unknowns + 1); it is added to the
  // device's pin power and reported as delivered by a supply term of its own, so the sum over the circuit stays 0.
  virtual double internal_supply_power(const double* /*x*/) const { return 0.0; }

 private:
  std::string name_;
  SourceLoc loc_;
};

// A device type: its netlist syntax and parameter tables, and a factory.
class DeviceType {
 public:
  virtual ~DeviceType() = default;
  std::string key;                  // lower-case key: "r", "c", ..., matches the SPICE letter
  std::string long_name;            // "resistor"
  std::string description;          // one line for `anasim devices`
  std::vector<std::string> pins;    // pin names in order
  std::vector<std::string> positional;  // SPICE positional parameters after the nodes, in order
  std::string model_type;           // SPICE .model type this device takes ("d"), empty if none
  bool needs_control = false;       // F/H: a controlling voltage-source name follows the nodes
  bool source_syntax = false;       // V/I: DC/AC/PULSE/... keyword syntax
  bool supply = false;              // independent source (V, I, DAC): p(total) is the power these deliver
  bool variadic_pins = false;       // pin count depends on parameters (crossbar): parsers accept any count,
                                    // `pins` lists the pin kinds for help, create() validates the count
  ParamTable params;                // instance parameters
  ParamTable model_params;          // .model parameters (if model_type set)
  bool model_optional = false;      // the model name may be omitted (model_params defaults apply)
  bool spice_model_card = true;     // SPICE export writes a .model card (false: spice_line spells the model out)
  bool create_reads_files = false;  // create() reads data files (crossbar conductances): never called from two
                                    // threads at once (Circuit::build)
  // Built-in named models (a parts table), consulted when the netlist defines no model of that name: sets
  // `model` (model_params values) to part `name` and returns true, or returns false if there is no such part.
  virtual bool builtin_model(const std::string& /*name*/, ParamValues& /*model*/) const { return false; }
  // Names of the built-in models, for messages and help.
  virtual std::vector<std::string> builtin_model_names() const { return {}; }
  // Builds the device; returns nullptr and fills st on a validation error (located at fd.loc).
  virtual std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const = 0;
  // The device as an ngspice deck line (flattened, no newline); pins[k] is the node name of fd.nodes[k]
  // ("0" for ground). Default: name, nodes, [control], [model], positional parameters, then the other given
  // parameters as name=value.
  virtual std::string spice_line(const FlatDevice& fd, const std::vector<std::string>& pins) const;
};

// Instance name for a SPICE deck: flattened names ("x1.r2") get ngspice's own prefix ("r.x1.r2").
std::string spice_instance_name(const std::string& key, const std::string& flat_name);

// The set of known device types (implemented in devices/registry.cpp).
class DeviceCatalog {
 public:
  virtual ~DeviceCatalog() = default;
  virtual const DeviceType* find(const std::string& key) const = 0;
  virtual std::vector<const DeviceType*> all() const = 0;
};

}  // namespace anasim
