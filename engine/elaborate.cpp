// Elaboration (see elaborate.hpp): parameter evaluation, subcircuit flattening, model binding and
// validation of analyses, options and initial conditions.
#include "engine/elaborate.hpp"
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string_view>
#include <utility>
#include <atomic>
#include <mutex>
#include <fmt/format.h>
#include "engine/name_index.hpp"
#include "engine/two_threads.hpp"

namespace anasim {

namespace {

constexpr int kMaxDepth = 64;  // subcircuit nesting limit (catches recursive definitions)

struct ModelScope {
  const std::vector<ModelDef>* models;
  const ModelScope* parent;
  const ModelDef* find(const std::string& name) const {
    for (const auto& m : *models)
      if (m.name == name) return &m;
    return parent ? parent->find(name) : nullptr;
  }
};

// Draws the toleranced parameters of one flattened device for a Monte Carlo trial.
Status apply_tolerances(FlatDevice& fd, const std::vector<ParamAssign>& assigns, const Scope& scope,
                        const Variation* var) {
  for (const auto& pa : assigns) {
    if (!pa.tol()) continue;
    const ValueExpr& tv = *pa.tol();
    const int i = fd.params.index_of(pa.name);
    if (i < 0 || fd.type->params[i].kind != ParamKind::Real)
      return Status::input(fmt::format("parameter '{}' of {} '{}' cannot take a tolerance", pa.name,
                                       fd.type->long_name, fd.name), tv.loc);
    std::string text = tv.text;
    const bool relative = !text.empty() && text.back() == '%';
    if (relative) text.pop_back();
    double tol;
    if (Status st = evaluate_expr(text, tv.loc, scope, tol); !st) return st;
    if (relative) tol /= 100.0;
    if (!(tol >= 0)) return Status::input(fmt::format("tolerance must be >= 0, got {}", tv.text), tv.loc);
    if (!var) continue;  // nominal run
    std::mt19937_64 rng(variation_seed(var->seed, var->trial, fd.name, pa.name));
    double z;
    if (pa.tolerance->dist == "uniform") z = std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
    else z = std::normal_distribution<double>(0.0, 1.0)(rng);
    double& v = fd.params.value[i];
    v = relative ? v * (1.0 + tol * z) : v + tol * z;
    const ParamSpec& spec = fd.type->params[i];
    if (v < spec.min || (spec.min_exclusive && v <= spec.min) || v > spec.max)
      return Status::input(fmt::format("trial {}: sampled {} = {} of {} '{}' is outside its range; reduce the "
                                       "tolerance", var->trial, pa.name, v, fd.type->long_name, fd.name),
                           tv.loc);
  }
  return {};
}

// k -> names[k], the name_of of a NameIndex over node names.
struct NodeNameOf {
  const std::vector<std::string>& names;
  const std::string& operator()(size_t k) const { return names[k]; }
};

class Elaborator {
 public:
  Elaborator(const ParsedNetlist& pn, const DeviceCatalog& cat, FlatNetlist& out, const Variation* var)
      : pn_(pn), cat_(cat), out_(out), var_(var) {}

  Status run() {
    out_.title = pn_.title;
    out_.file = pn_.file;
    out_.node_names = {"0"};
    node_ids_.clear();
    names_.clear();
    // `temper` in expressions: the circuit temperature [C], from .temp / .options temp when that is a constant.
    top_.set("temper", 27.0);
    for (const auto& a : pn_.options) {
      double t;
      if (a.name == "temp" && a.values.size() == 1 && evaluate_expr(a.values[0].text, a.values[0].loc, top_, t))
        top_.set("temper", t);
    }
    for (const auto& p : pn_.params) {
      double v;
      if (p.values.size() != 1) return Status::input(fmt::format("parameter '{}' needs one value", p.name), p.loc);
      Status st = evaluate_expr(p.values[0].text, p.values[0].loc, top_, v);
      if (!st) return st;
      top_.set(p.name, v);
      out_.params[p.name] = v;
    }
    for (const auto& s : pn_.subckts) subckts_[s.name] = &s;
    if (Status st = options(); !st) return st;
    ModelScope ms{&pn_.models, nullptr};
    out_.devices.reserve(pn_.devices.size());
    out_.node_names.reserve(pn_.devices.size() + 1);
    names_.reserve(pn_.devices.size());
    node_ids_.reserve(pn_.devices.size());
    std::map<std::string, std::string> ports;  // top level: identity
    if (Status st = flatten(pn_.devices, "", ports, top_, ms, 0); !st) return st;
    // A netlist whose analyses are all extensions (e.g. nn_eval) needs no circuit.
    bool only_extensions = !pn_.analyses.empty();
    for (const auto& a : pn_.analyses) only_extensions = only_extensions && a.kind == AnalysisSpec::Kind::Extension;
    if (out_.devices.empty() && !only_extensions) {
      return Status::input("the netlist defines no devices", SourceLoc::whole(pn_.file));
    }
    for (size_t d : bound_) {
      FlatDevice& fd = out_.devices[d];
      if (fd.control.empty()) continue;
      const size_t k = names_.find(fd.control, names_of(out_.devices));
      const FlatDevice* c = k == NameIndex::npos ? nullptr : &out_.devices[k];
      if (!c || (c->type->key != "v" && c->type->key != "l"))
        return Status::input(fmt::format("{} '{}' is controlled by '{}', which is not a voltage source or inductor",
                                         fd.type->long_name, fd.name, fd.control),
                             fd.control_loc.valid() ? fd.control_loc : fd.loc);
      fd.control_type = c->type;
    }
    if (Status st = resolve_expressions(); !st) return st;
    out_.sections = pn_.sections;  // before analyses(): extension checks may read other sections
    if (Status st = analyses(); !st) return st;
    for (const auto& ic : pn_.ics) {
      const size_t id = node_ids_.find(ic.name, NodeNameOf{out_.node_names});
      if (id == NameIndex::npos)
        return Status::input(fmt::format(".ic names node '{}', which is not in the circuit", ic.name), ic.loc);
      double v;
      if (ic.values.size() != 1) return Status::input(".ic needs one value per node", ic.loc);
      if (Status st = evaluate_expr(ic.values[0].text, ic.values[0].loc, top_, v); !st) return st;
      out_.ics.emplace_back(NodeId(static_cast<int>(id)), v);
    }
    out_.outputs = pn_.outputs;
    out_.measures = pn_.measures;
    Status done;
    done.warnings = warnings_;  // options and parameters without effect
    return done;
  }

 private:
  // .options / YAML options: through option_table(); a no_effect option warns, an unknown one is an error.
  Status options() {
    const ParamTable& table = option_table();
    ParamValues pv = default_params(table);
    for (const auto& a : pn_.options) {
      const int i = pv.index_of(a.name);
      if (i < 0) {
        std::string names;
        for (const ParamSpec& s : table)
          if (!s.no_effect) names += fmt::format("{}{}", names.empty() ? "" : ", ", s.name);
        return Status::input(fmt::format("unknown option '{}'; expected {}", a.name, names), a.loc);
      }
      const ParamSpec& spec = table[i];
      if (spec.no_effect) {
        warn(fmt::format("{}:{}: option {} has no effect in anasim ({})", a.loc.file(), a.loc.line, a.name,
                         spec.no_effect));
        continue;
      }
      std::string text = a.values.empty() ? "1" : a.values[0].text;
      const std::string m = to_lower(text);
      pv.given[i] = 1;
      pv.set_loc(i, a.loc);
      if (spec.kind == ParamKind::Text) {  // method (with its other spellings) and solver
        if (m == "trapezoidal") text = "trap";
        else if (m == "gear2" || m == "bdf2") text = "gear";
        else if (m == "be") text = "euler";
        if (choice_index(spec, text) < 0 && std::string(spec.name) == "method")
          return Status::input(fmt::format("unknown integration method '{}'; expected trap, gear or euler", text),
                               a.loc);
        if (choice_index(spec, text) < 0)
          return Status::input(fmt::format("unknown {} '{}'; expected one of {}", spec.name, text, spec.choices),
                               a.loc);
        pv.text()[i] = text;
        continue;
      }
      if (spec.kind == ParamKind::Flag) {  // `.options power`, YAML `options: {power: true}`
        if (m == "true" || m == "yes" || m == "on") text = "1";
        else if (m == "false" || m == "no" || m == "off") text = "0";
      }
      double v = 1;
      if (!a.values.empty()) {
        if (Status st = evaluate_expr(text, a.values[0].loc, top_, v); !st) return st;
      }
      if (spec.min_exclusive ? !(v > spec.min) : !(v >= spec.min && v <= spec.max)) {
        auto num = [](double x) {  // 1e9 rather than 1e+09
          const double e = std::round(std::log10(x));
          return x >= 1e6 && x == std::pow(10.0, e) ? fmt::format("1e{}", e) : fmt::format("{}", x);
        };
        std::string want = spec.min_exclusive                 ? fmt::format("> {}", num(spec.min))
                           : spec.max - spec.min == 1         ? fmt::format("{} or {}", num(spec.min), num(spec.max))
                           : !std::isfinite(spec.max)         ? fmt::format(">= {}", num(spec.min))
                                                              : fmt::format("from {} to {}", num(spec.min), num(spec.max));
        return Status::input(fmt::format("option {} must be {}, got {}", a.name, want, v), a.loc);
      }
      pv.value[i] = v;
    }
    return apply_params(pv, out_.options, "options");
  }

  // A warning of the elaboration, each text once (a model shared by many devices warns once).
  void warn(std::string text) const {
    if (t_warnings_) {  // flatten_run's back end: kept for later, in order
      t_warnings_->emplace_back(t_device_, std::move(text));
      return;
    }
    if (warned_.insert(text).second) warnings_.push_back(std::move(text));
  }
  // flatten_run: where the warnings of the thread that runs the back end go (nullptr: warn() as usual), each with
  // t_device_, the first device of the block it came from (the blocks' warnings are put in order by it).
  static thread_local std::vector<std::pair<size_t, std::string>>* t_warnings_;
  static thread_local size_t t_device_;

  // `name` is already mapped (map_node), so ground is spelled "0".
  NodeId node(std::string_view name) {
    if (name == "0") return NodeId(0);
    const size_t next = out_.node_names.size();
    auto [id, inserted] = node_ids_.try_emplace(name, next, NodeNameOf{out_.node_names});
    if (inserted) out_.node_names.emplace_back(name);
    return NodeId(static_cast<int>(id));
  }

  Status flatten(const std::vector<DeviceInstance>& devs, const std::string& prefix,
                 const std::map<std::string, std::string>& ports, const Scope& scope, const ModelScope& models,
                 int depth) {
    auto map_node = [&](const std::string& n) -> std::string {
      if (is_ground_name(n)) return "0";
      auto it = ports.find(n);
      if (it != ports.end()) return it->second;
      if (!pn_.globals.empty() && std::find(pn_.globals.begin(), pn_.globals.end(), n) != pn_.globals.end())
        return n;  // .global: the same node everywhere
      return prefix + n;
    };
    for (size_t i = 0; i < devs.size();) {
      const DeviceInstance& inst = devs[i];
      if (inst.type != "x") {  // a run of devices up to the next subcircuit instance
        size_t j = i;
        while (j < devs.size() && devs[j].type != "x") ++j;
        // A fan-out of nested instances (2^40 devices from 40 levels of two) stops at the limit instead of
        // exhausting memory (~700 bytes per flat device with its names: 7 GB at the default limit).
        const long room = std::max(0L, out_.options.maxdevices - static_cast<long>(out_.devices.size()));
        const size_t end = std::min(j, i + static_cast<size_t>(room));
        if (end > i)
          if (Status st = flatten_run(devs, i, end, prefix, map_node, scope, models); !st) return st;
        if (end < j)
          return Status::input(fmt::format("the netlist expands to more than {} devices (at '{}{}'); raise "
                                           "`.options maxdevices` if the machine can hold them",
                                           out_.options.maxdevices, prefix, devs[end].name),
                               devs[end].loc);
        i = j;
        continue;
      }
      // A subcircuit instance: its body flattened under the path full + "."
      const std::string full = prefix + inst.name;
      auto it = subckts_.find(inst.model);
      if (it == subckts_.end())
        return Status::input(fmt::format("undefined subcircuit '{}' (instance '{}')", inst.model, inst.name),
                             inst.model_loc.valid() ? inst.model_loc : inst.loc);
      const SubcktDef& sd = *it->second;
      if (depth >= kMaxDepth)
        return Status::input(fmt::format("subcircuit '{}' is nested more than {} levels deep (recursive definition?)",
                                         sd.name, kMaxDepth), inst.loc);
      if (inst.nodes.size() != sd.ports.size())
        return Status::input(fmt::format("subcircuit '{}' has {} ports, instance '{}' connects {} nodes", sd.name,
                                         sd.ports.size(), inst.name, inst.nodes.size()), inst.loc);
      std::map<std::string, std::string> child_ports;
      for (size_t k = 0; k < sd.ports.size(); ++k) child_ports[sd.ports[k]] = map_node(inst.nodes[k]);
      // Instance overrides are evaluated in the caller's scope; defaults in the child's.
      Scope child(&top_);
      std::map<std::string, double> overrides;
      for (const auto& pa : inst.params) {
        bool known = false;
        for (const auto& d : sd.params) known = known || d.name == pa.name;
        if (!known)
          return Status::input(fmt::format("subcircuit '{}' has no parameter '{}'", sd.name, pa.name), pa.loc);
        double v;
        if (pa.values.size() != 1) return Status::input("subcircuit parameters take one value", pa.loc);
        if (Status st = evaluate_expr(pa.values[0].text, pa.values[0].loc, scope, v); !st) return st;
        overrides[pa.name] = v;
      }
      for (const auto& d : sd.params) {
        auto o = overrides.find(d.name);
        double v;
        if (o != overrides.end()) v = o->second;
        else {
          if (d.values.size() != 1) return Status::input("subcircuit parameters take one value", d.loc);
          if (Status st = evaluate_expr(d.values[0].text, d.values[0].loc, child, v); !st) return st;
        }
        child.set(d.name, v);
      }
      ModelScope ms{&sd.models, &models};
      if (Status st = flatten(sd.devices, full + ".", child_ports, child, ms, depth + 1); !st) return st;
      ++i;
    }
    return {};
  }

  // Devices devs[i0, i1) (no subcircuit instances) of the subcircuit path `prefix` ("" at the top level, node names
  // mapped by map_node) into out_.devices, in two passes: the types, parameters and models (device_checked, work
  // per device that reads only shared state), then the nodes and names in netlist order, so that node numbers and
  // names come out in the same order however the first pass is split. The error reported is the first in device
  // order, and for one device its own before a duplicate name; out_.devices keeps the devices before it.
  //
  // A long run at the top level (kTwoThreadItems devices: a flat deck) takes both passes at once on two threads:
  // this one numbers the nodes and enters the names (a run's names are then its instances' names), a second thread
  // fills in the devices from the front, and this one joins it from the back when the names are in, in blocks
  // claimed under a lock. Warnings keep their device order (the back's are collected and added after the front's).
  // Measured (2 cores, whole runs, against one thread): the 784x128 crossbar deck (302,000 devices) 0.81 -> 0.73 s
  // (elaboration 0.28 -> 0.20 s), 256x64 (50,000) 0.131 -> 0.114 s, a 180x48 deck (26,000) 0.071 -> 0.069 s; 128x32
  // (12,500) the same time, and a 5,000-device crossbar transient 0.7 MB more memory (the second thread's heap)
  // for nothing, hence the threshold.
  template <class MapNode>
  Status flatten_run(const std::vector<DeviceInstance>& devs, size_t i0, size_t i1, const std::string& prefix,
                     const MapNode& map_node, const Scope& scope, const ModelScope& models) {
    const size_t base = out_.devices.size(), n = i1 - i0;
    const bool two = prefix.empty() && n >= kTwoThreadItems && second_thread_allowed();
    if (two && out_.devices.capacity() >= base + n)  // (run() reserved them: the records constructed below are
      populate_pages(out_.devices.data() + base, n * sizeof(FlatDevice));  // 94 MB for the 784x128 deck)
    out_.devices.resize(base + n);
    constexpr size_t kBlock = 512;
    const size_t blocks = (n + kBlock - 1) / kBlock;
    // Blocks [0, front) are the front's, [back, blocks) the back's; each end claims its next block under the lock.
    std::mutex claims;
    size_t front = 0, back = blocks;
    auto claim = [&](bool from_front) -> size_t {
      std::lock_guard<std::mutex> g(claims);
      if (front >= back) return blocks;
      return from_front ? front++ : --back;
    };
    auto stop_back = [&] {  // the front failed: its device comes before every block the back has not taken
      std::lock_guard<std::mutex> g(claims);
      back = std::max(front, back);
      front = back;
    };
    std::atomic<size_t> fail_names{n};  // first duplicate name (n: none)
    // One end's first failing device and its status; the back's warnings with their devices.
    struct End {
      size_t fail = static_cast<size_t>(-1);
      Status status;
      std::vector<std::pair<size_t, std::string>> warnings;
      std::vector<size_t> bound;  // its devices that name a controlling source or hold expressions (see bound_)
    };
    End fr, bk;
    auto run_block = [&](size_t blk, End& e) {
      const size_t k1 = std::min(n, (blk + 1) * kBlock);
      for (size_t k = blk * kBlock; k < k1; ++k) {
        if (k > fail_names.load(std::memory_order_relaxed)) return false;
        const DeviceInstance& inst = devs[i0 + k];
        FlatDevice& fd = out_.devices[base + k];
        Status st = device_checked(inst, prefix + inst.name, prefix, fd, scope, models, map_node);
        if (st && (!fd.control.empty() || !std::as_const(fd.params).expr().empty())) e.bound.push_back(base + k);
        if (!st) {
          e.fail = k;
          e.status = std::move(st);
          return false;
        }
      }
      return true;
    };
    auto front_work = [&] {  // block after block until the ends meet or a device fails
      for (size_t blk; (blk = claim(true)) < blocks;)
        if (!run_block(blk, fr)) break;
      if (fr.fail < n) stop_back();
    };
    auto names = [&] {
      // The names of earlier devices are in out_.devices; this run's are its instances' (top level, two threads)
      // or already in out_.devices too (one thread: after the first pass).
      auto name_of = [&](size_t k) -> const std::string& {
        return k < base || !two ? out_.devices[k].name : devs[i0 + (k - base)].name;
      };
      constexpr size_t kAhead = 8;  // the look-ups of the device kAhead places on start early (NameIndex::prefetch)
      const size_t last = two ? n : std::min(n, fr.fail);
      for (size_t k = 0; k < last; ++k) {
        const DeviceInstance& inst = devs[i0 + k];
        if (prefix.empty() && k + kAhead < n) {
          names_.prefetch(devs[i0 + k + kAhead].name);
          for (const std::string& nm : devs[i0 + k + kAhead].nodes) node_ids_.prefetch(nm);
        }
        FlatDevice& fd = out_.devices[base + k];
        fd.nodes.reserve(inst.nodes.size());
        if (prefix.empty()) {  // the top level maps every name to itself but ground's (no string built)
          for (const std::string& nm : inst.nodes)
            fd.nodes.push_back(is_ground_name(nm) ? NodeId(0) : node(nm));
        } else {
          for (const std::string& nm : inst.nodes) fd.nodes.push_back(node(map_node(nm)));
        }
        if (!names_.try_emplace(two ? std::string_view(inst.name) : std::string_view(fd.name), base + k, name_of)
                 .second) {
          fail_names.store(k);
          return;
        }
      }
    };
    if (!two) {
      front_work();
      names();
    } else {
      auto back_work = [&] {  // the names, then blocks from the back, their warnings kept aside
        names();
        struct Keep {
          explicit Keep(std::vector<std::pair<size_t, std::string>>* w) { t_warnings_ = w; }
          ~Keep() { t_warnings_ = nullptr; }
        } keep(&bk.warnings);
        for (size_t blk; (blk = claim(false)) < blocks;) {
          t_device_ = blk * kBlock;
          if (!run_block(blk, bk)) break;
        }
      };
      // (an exception on either thread ends the other's work early, at its next device)
      run_beside(front_work, back_work, [&] {
        fail_names.store(0);
        stop_back();
      });
      // The back's warnings in device order, after the front's (all at earlier devices).
      std::stable_sort(bk.warnings.begin(), bk.warnings.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& [k, w] : bk.warnings) warn(std::move(w));
    }
    bound_.insert(bound_.end(), fr.bound.begin(), fr.bound.end());
    std::sort(bk.bound.begin(), bk.bound.end());  // (the back's blocks were taken from the end)
    bound_.insert(bound_.end(), bk.bound.begin(), bk.bound.end());
    const size_t fail_params = std::min(fr.fail, bk.fail), dup = fail_names.load();
    const size_t bad = std::min(fail_params, dup);
    if (bad < n) out_.devices.resize(base + bad);  // the devices before it, complete
    if (fail_params <= dup && fail_params < n) return fr.fail <= bk.fail ? fr.status : bk.status;
    if (dup < n)
      return Status::input(fmt::format("duplicate device name '{}{}'", prefix, devs[i0 + dup].name), devs[i0 + dup].loc);
    return {};
  }

  // The type, parameters, model and expressions of fd from inst, named `full` (`prefix`: its subcircuit path), with
  // the checks in this order: type, pin count, parameters, expressions. fd.nodes is left alone. Reads only shared
  // state (flatten_run calls it on two threads).
  template <class MapNode>
  Status device_checked(const DeviceInstance& inst, const std::string& full, const std::string& prefix,
                        FlatDevice& fd, const Scope& scope, const ModelScope& models, const MapNode& map_node) const {
    const DeviceType* type = cat_.find(inst.type);
    if (!type) return Status::input(fmt::format("unknown device type '{}'", inst.type), inst.loc);
    if (!type->variadic_pins && inst.nodes.size() != type->pins.size())
      return Status::input(fmt::format("{} '{}' needs {} nodes ({}), got {}", type->long_name, inst.name,
                                       type->pins.size(), fmt::join(type->pins, ", "), inst.nodes.size()), inst.loc);
    fd.name = full;
    fd.type = type;
    fd.loc = inst.loc;
    if (Status st = device_params(inst, *type, prefix, scope, models, fd); !st) return st;
    return compile_expressions(fd, full, prefix, scope, map_node);
  }

  // Compiles the behavioural expressions (Expr parameters, B source) of fd, mapping node names with map_node and
  // device names with `prefix`; their quantities are bound to the circuit by resolve_expressions().
  template <class MapNode>
  Status compile_expressions(FlatDevice& fd, const std::string& full, const std::string& prefix, const Scope& scope,
                             const MapNode& map_node) const {
    // (read through const: the non-const expr() would give every device a table of extra values, 72 bytes and an
    // allocation each, where only devices whose table has expression parameters need one)
    const size_t n_expr = std::as_const(fd.params).expr().size();
    for (size_t i = 0; i < n_expr; ++i) {
      if (!fd.params.has(static_cast<int>(i))) continue;
      auto ce = std::make_shared<CompiledExpr>();
      const ExprNameMap names{map_node, [&](const std::string& d) { return prefix + d; }};
      Status st = compile_expr(fd.params.text()[i], fd.params.loc(i), scope, names, *ce);
      if (!st) {
        for (Diag& d : st.errors)
          d.message += fmt::format(" (in {}= of {} '{}')", fd.type->params[i].name, fd.type->long_name, full);
        return st;
      }
      fd.params.expr()[i] = std::move(ce);
    }
    return {};
  }

  // The parameters, control source and model of fd (name, type and nodes already set). Reads only shared
  // state that does not change during flattening, so devices can be filled on several threads.
  Status device_params(const DeviceInstance& inst, const DeviceType& t, const std::string& prefix,
                       const Scope& scope, const ModelScope& models, FlatDevice& fd) const {
    const DeviceType* type = &t;
    const std::string& full = fd.name;
    fd.params = default_params(type->params, inst.params.size() + 1);  // (+1: a value named by a bare word)
    Status given = assign_params(fd.params, inst.params, scope, type->long_name, full);
    if (!given) return given;
    for (std::string& w : given.warnings) warn(std::move(w));
    if (Status st = apply_tolerances(fd, inst.params, scope, var_); !st) return st;
    // R, C: a bare name after the nodes that names no model but a parameter is the value (r1 a b rval).
    // A name that is no model is read as the value when the value is not given otherwise (an unknown name then
    // reads as an unknown parameter).
    const bool value_named = type->model_optional && !type->positional.empty() && !inst.model.empty() &&
                             !models.find(inst.model) && !fd.params.has(fd.params.index_of(type->positional[0]));
    if (value_named) {
      ParamAssign pa;
      pa.name = type->positional[0];
      pa.loc = inst.model_loc;
      pa.values.push_back(ValueExpr{inst.model, inst.model_loc});
      if (Status st = assign_params(fd.params, {pa}, scope, type->long_name, full); !st) return st;
    }
    // A parameter without a default must be given, unless a model may supply it (R, C).
    const bool model_supplies = type->model_optional && !inst.model.empty() && !value_named;
    for (size_t i = 0; i < type->params.size(); ++i) {
      if (std::isnan(fd.params.value[i]) && !fd.params.has(static_cast<int>(i)) && !model_supplies &&
          type->params[i].kind == ParamKind::Real)
        return Status::input(fmt::format("{} '{}' needs a value for '{}' ({})", type->long_name, inst.name,
                                         type->params[i].name, type->params[i].description), inst.loc);
    }
    if (type->needs_control) {
      if (inst.model.empty())
        return Status::input(fmt::format("{} '{}' needs a controlling voltage source", type->long_name, inst.name),
                             inst.loc);
      fd.control = prefix + inst.model;
      fd.control_loc = inst.model_loc;
    }
    // An optional model that is not named gets no value set (a resistor deck would carry ~400 bytes of defaults
    // per device): FlatDevice::model stays without a table, which apply_params reads as the defaults.
    if (!type->model_type.empty() && (!type->model_optional || (!inst.model.empty() && !value_named))) {
      fd.model = default_params(type->model_params);
      if (!inst.model.empty() && !value_named) {
        const ModelDef* md = models.find(inst.model);
        if (!md && type->builtin_model(inst.model, fd.model)) {
          fd.model_name = inst.model;
        } else if (!md) {
          const auto parts = type->builtin_model_names();
          return Status::input(fmt::format("undefined model '{}' for {} '{}'{}", inst.model, type->long_name, inst.name,
                                           parts.empty() ? "" : fmt::format(" (built-in: {})", fmt::join(parts, ", "))),
                               inst.model_loc.valid() ? inst.model_loc : inst.loc);
        } else if (md->type != type->model_type)
          return Status::input(fmt::format("model '{}' has type '{}', but {} '{}' needs a '{}' model", md->name,
                                           md->type, type->long_name, inst.name, type->model_type),
                               inst.model_loc.valid() ? inst.model_loc : inst.loc);
        if (md) {
          Status st = assign_params(fd.model, md->params, scope, fmt::format("model '{}'", md->name));
          if (!st) return st;
          for (std::string& w : st.warnings) warn(std::move(w));
          fd.model_name = md->name;
        }
      } else if (!type->model_optional) {
        return Status::input(fmt::format("{} '{}' needs a model name", type->long_name, inst.name), inst.loc);
      }
    }
    return {};
  }

  // Binds the quantities of behavioural expressions to nodes and branch-carrying devices, once every
  // device is flattened (an expression may name a node or source defined further down).
  Status resolve_expressions() {
    for (size_t d : bound_) {
      FlatDevice& fd = out_.devices[d];
      if (std::as_const(fd.params).expr().empty()) continue;  // (a controlled source: no table of extra values)
      for (auto& ce : fd.params.expr()) {
        if (!ce) continue;
        for (ExprQuantity& q : ce->quantities()) {
          if (q.kind == ExprQuantity::Kind::Voltage) {
            const size_t id = node_ids_.find(q.name, NodeNameOf{out_.node_names});
            if (id == NameIndex::npos)
              return Status::input(fmt::format("{} '{}' reads v({}), but node '{}' is not in the circuit",
                                               fd.type->long_name, fd.name, q.name, q.name), q.loc);
            q.node = NodeId(static_cast<int>(id));
            continue;
          }
          const size_t k = names_.find(q.name, names_of(out_.devices));
          const FlatDevice* c = k == NameIndex::npos ? nullptr : &out_.devices[k];
          if (!c || (c->type->key != "v" && c->type->key != "l"))
            return Status::input(fmt::format("{} '{}' reads i({}), but '{}' is not a voltage source or inductor in "
                                             "the circuit", fd.type->long_name, fd.name, q.name, q.name), q.loc);
          q.device_key = c->type->key;
        }
      }
    }
    return {};
  }

  // The first expression of the netlist that reads `temper` (a whole word), nullptr if none.
  const ValueExpr* find_temper() const {
    auto reads = [](const std::string& text) {
      for (size_t p = text.find("temper"); p != std::string::npos; p = text.find("temper", p + 1)) {
        auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
        if ((p == 0 || !word(text[p - 1])) && (p + 6 >= text.size() || !word(text[p + 6]))) return true;
      }
      return false;
    };
    auto in = [&](const std::vector<ParamAssign>& as) -> const ValueExpr* {
      for (const auto& a : as)
        for (const auto& v : a.values)
          if (reads(to_lower(v.text))) return &v;
      return nullptr;
    };
    auto in_devices = [&](const std::vector<DeviceInstance>& ds, const std::vector<ModelDef>& ms) -> const ValueExpr* {
      for (const auto& d : ds)
        if (const ValueExpr* e = in(d.params)) return e;
      for (const auto& m : ms)
        if (const ValueExpr* e = in(m.params)) return e;
      return nullptr;
    };
    if (const ValueExpr* e = in(pn_.params)) return e;
    if (const ValueExpr* e = in_devices(pn_.devices, pn_.models)) return e;
    for (const auto& sd : pn_.subckts) {
      if (const ValueExpr* e = in(sd.params)) return e;
      if (const ValueExpr* e = in_devices(sd.devices, sd.models)) return e;
    }
    return nullptr;
  }

  Status eval(const ValueExpr& e, double def, double& out, const SourceLoc& where, const char* what) {
    if (e.text.empty()) {
      if (std::isnan(def)) return Status::input(fmt::format("missing {}", what), where);
      out = def;
      return {};
    }
    return evaluate_expr(e.text, e.loc, top_, out);
  }

  Status analyses() {
    for (const auto& a : pn_.analyses) {
      Analysis an;
      an.kind = a.kind;
      an.loc = a.loc;
      an.power = a.power;
      const double nan = std::nan("");
      auto at = [&](const ValueExpr& e) { return e.loc.valid() ? e.loc : a.loc; };  // the offending value
      switch (a.kind) {
        case AnalysisSpec::Kind::Op: break;
        case AnalysisSpec::Kind::Dc:
          if (a.sweeps.empty() || a.sweeps.size() > 2)
            return Status::input(".dc needs one or two sweeps: source start stop step", a.loc);
          for (const auto& s : a.sweeps) {
            DcSweep sw;
            sw.source = s.source;
            sw.loc = s.loc;
            const size_t k = names_.find(s.source, names_of(out_.devices));
            sw.temperature = s.source == "temp" && k == NameIndex::npos;
            if (sw.temperature) {
              // Expressions reading `temper` follow the sweep (as ngspice's): run_dc_temper elaborates again.
              if (!out_.temper && find_temper())
                out_.temper = std::make_shared<const TemperSource>(
                    TemperSource{pn_, var_ ? std::optional<Variation>(*var_) : std::nullopt});
            } else if (k == NameIndex::npos || !out_.devices[k].type->source_syntax)
              return Status::input(fmt::format(".dc sweeps '{}', which is not an independent source in this circuit",
                                               s.source), s.loc);
            if (Status st = eval(s.start, nan, sw.start, s.loc, "sweep start"); !st) return st;
            if (Status st = eval(s.stop, nan, sw.stop, s.loc, "sweep stop"); !st) return st;
            if (Status st = eval(s.step, nan, sw.step, s.loc, "sweep step"); !st) return st;
            if (sw.step == 0 || (sw.stop - sw.start) / sw.step < 0)
              return Status::input(fmt::format("sweep step {} does not lead from {} to {}", sw.step, sw.start, sw.stop),
                                   s.step.loc.valid() ? s.step.loc : s.loc);
            if ((sw.stop - sw.start) / sw.step > 1e7)
              return Status::input("sweep has more than 10 million points", s.loc);
            an.sweeps.push_back(sw);
          }
          break;
        case AnalysisSpec::Kind::Tran:
          if (Status st = eval(a.tstep, nan, an.tstep, a.loc, "tstep (.tran tstep tstop)"); !st) return st;
          if (Status st = eval(a.tstop, nan, an.tstop, a.loc, "tstop (.tran tstep tstop)"); !st) return st;
          if (Status st = eval(a.tstart, 0.0, an.tstart, a.loc, "tstart"); !st) return st;
          if (Status st = eval(a.tmax, 0.0, an.tmax, a.loc, "tmax"); !st) return st;
          an.uic = a.uic;
          if (!(an.tstep > 0) || !(an.tstop > 0))
            return Status::input(fmt::format(".tran needs tstep > 0 and tstop > 0, got {} and {}", an.tstep, an.tstop),
                                 at(!(an.tstep > 0) ? a.tstep : a.tstop));
          if (an.tstart < 0 || an.tstart >= an.tstop)
            return Status::input(fmt::format(".tran tstart {} must lie in [0, tstop)", an.tstart), at(a.tstart));
          if (an.tmax < 0) return Status::input(".tran tmax must be >= 0", at(a.tmax));
          break;
        case AnalysisSpec::Kind::Ac: {
          an.variation = a.variation;
          double pts;
          if (Status st = eval(a.points, nan, pts, a.loc, "number of points (.ac dec n fstart fstop)"); !st) return st;
          if (Status st = eval(a.fstart, nan, an.fstart, a.loc, "fstart"); !st) return st;
          if (Status st = eval(a.fstop, nan, an.fstop, a.loc, "fstop"); !st) return st;
          if (an.variation != "dec" && an.variation != "oct" && an.variation != "lin")
            return Status::input(fmt::format(".ac variation '{}' must be dec, oct or lin", an.variation), a.loc);
          if (!(pts >= 1) || pts > 1e7)
            return Status::input(fmt::format(".ac needs 1 to 10 million points, got {}", pts), at(a.points));
          an.points = static_cast<int>(pts);
          if (!(an.fstart > 0) && an.variation != "lin")
            return Status::input(fmt::format(".ac fstart must be > 0 for {} sweeps, got {}", an.variation, an.fstart),
                                 at(a.fstart));
          if (an.fstart < 0 || an.fstop < an.fstart)
            return Status::input(fmt::format(".ac needs 0 <= fstart <= fstop, got {} and {}", an.fstart, an.fstop),
                                 at(an.fstart < 0 ? a.fstart : a.fstop));
          break;
        }
        case AnalysisSpec::Kind::Extension: {
          an.type = a.type;
          an.args = default_params(a.type->params);
          if (Status st = assign_params(an.args, a.args, top_, fmt::format("{} analysis", a.type->name)); !st)
            return st;
          AnalysisRequest req;
          req.netlist = &out_;
          req.args = &an.args;
          req.loc = a.loc;
          if (Status st = a.type->check(req); !st) return st;
          break;
        }
      }
      out_.analyses.push_back(an);
    }
    return {};
  }

  const ParsedNetlist& pn_;
  const DeviceCatalog& cat_;
  FlatNetlist& out_;
  const Variation* var_;
  Scope top_;
  std::map<std::string, const SubcktDef*> subckts_;
  NameIndex node_ids_;  // node name -> NodeId, into out_.node_names (ground "0" is not in it)
  NameIndex names_;     // device name -> index into out_.devices
  // The devices, ascending, that name a controlling source (F, H) or hold compiled expressions: what is bound to
  // the circuit once every device is in (a pass over these instead of all: 302,000 on the 784x128 crossbar deck).
  // After a failed run it may name devices no longer in out_.devices (elaboration then stops).
  std::vector<size_t> bound_;
  mutable std::vector<std::string> warnings_;  // warn(): returned with the result
  mutable std::set<std::string> warned_;
};

thread_local std::vector<std::pair<size_t, std::string>>* Elaborator::t_warnings_ = nullptr;
thread_local size_t Elaborator::t_device_ = 0;

}  // namespace

uint64_t variation_seed(uint64_t seed, int trial, const std::string& owner, const std::string& what) {
  auto mix = [](uint64_t z) {  // splitmix64 finaliser
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over "owner\0what"
  for (char c : owner) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  h = (h ^ 0u) * 1099511628211ULL;
  for (char c : what) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return mix(mix(seed) ^ mix(static_cast<uint64_t>(trial) + 0x632be59bd9b4e019ULL) ^ h);
}

const ParamTable& option_table() {
  using P = ParamDecl;
  using O = Options;
  // Options of other simulators that cannot change a result anasim computes: output format and listing
  // controls, accounting, and convergence aids whose solution (when there is one) is the same.
  static const char* const kListing = "listing or output format only";
  static const char* const kConvergence = "a convergence aid; it does not change a converged answer";
  static const char* const kNoMos = "MOS defaults; anasim has no MOS devices";
  static const ParamTable table = {
      P("reltol").def(1e-3).above(0).doc("relative tolerance").bind<&O::reltol>(),
      P("abstol").unit("A").def(1e-12).above(0).doc("current tolerance").bind<&O::abstol>(),
      P("vntol").unit("V").def(1e-6).above(0).doc("voltage tolerance").bind<&O::vntol>(),
      P("chgtol").unit("C").def(1e-14).above(0).doc("charge tolerance (truncation error)").bind<&O::chgtol>(),
      P("trtol").def(7).above(0).doc("truncation-error overestimation factor").bind<&O::trtol>(),
      P("gmin").unit("S").def(1e-12).above(0).doc("minimum conductance across junctions").bind<&O::gmin>(),
      P("itl1").def(100).range(1, 1e9).doc("DC Newton iteration limit").bind<&O::itl1>(),
      P("itl4").def(10).range(1, 1e9).doc("transient Newton iteration limit per step").bind<&O::itl4>(),
      P("method").choices("euler|trap|gear").def(1).doc("integration method (trapezoidal, gear2, bdf2, be also read)")
          .bind<&O::method>(),
      P("maxord").def(2).range(1, 2).doc("highest integration order").bind<&O::maxord>(),
      P("klu").kind(ParamKind::Flag).def(1).range(0, 1).doc("KLU sparse solver (ngspice)")
          .no_effect("anasim chooses its sparse LU by option solver"),
      P("solver").choices("auto|klu|umfpack|pcg").def(0)
          .doc("linear solver: auto (conjugate gradients on large nodal systems where they apply, else KLU, or "
               "UMFPACK with METIS ordering for large matrices that fill in), klu, umfpack, pcg")
          .bind<&O::solver>(),
      P("lureuse").def(50000).range(0, 1e12)
          .doc("unknowns from which Newton iterations of a nonlinear circuit first solve with the previous LU "
               "factors as a GMRES preconditioner, factoring only when that does not converge (0: never)")
          .bind<&O::lureuse>(),
      P("power").kind(ParamKind::Flag).def(0).range(0, 1).doc("power probes in every op, dc and tran")
          .bind<&O::power>(),
      P("maxdevices").def(10e6).range(1, 1e9).doc("device limit after subcircuit expansion").bind<&O::maxdevices>(),
      P("temp").unit("C").def(27).range(-273.15, kInf).doc("circuit temperature (as .temp)").bind<&O::temp>(),
      P("tnom").unit("C").def(27).range(-273.15, kInf).doc("nominal temperature of model parameters")
          .bind<&O::tnom>(),
      P("itl2").def(50).doc("DC transfer-curve iteration limit").no_effect(kConvergence),
      P("itl3").def(4).doc("lower transient iteration limit").no_effect(kConvergence),
      P("itl5").def(5000).doc("total transient iteration limit").no_effect(kConvergence),
      P("itl6").def(0).doc("source-stepping steps").no_effect(kConvergence),
      P("gminsteps").def(0).doc("gmin-stepping steps").no_effect(kConvergence),
      P("srcsteps").def(0).doc("source-stepping steps").no_effect(kConvergence),
      P("pivtol").def(1e-13).doc("pivot tolerance").no_effect(kConvergence),
      P("pivrel").def(1e-3).doc("relative pivot ratio").no_effect(kConvergence),
      P("sparse").kind(ParamKind::Flag).def(1).doc("sparse solver").no_effect(kConvergence),
      P("dcstep").def(0).doc("HSPICE DC convergence conductance").no_effect(kConvergence),
      P("acct").kind(ParamKind::Flag).doc("accounting").no_effect(kListing),
      P("noacct").kind(ParamKind::Flag).doc("no accounting").no_effect(kListing),
      P("nopage").kind(ParamKind::Flag).doc("no page breaks").no_effect(kListing),
      P("list").kind(ParamKind::Flag).doc("list the deck").no_effect(kListing),
      P("node").kind(ParamKind::Flag).doc("node table").no_effect(kListing),
      P("nomod").kind(ParamKind::Flag).doc("no model listing").no_effect(kListing),
      P("opts").kind(ParamKind::Flag).doc("option listing").no_effect(kListing),
      P("post").def(1).doc("HSPICE output file").no_effect(kListing),
      P("probe").kind(ParamKind::Flag).doc("HSPICE: write only probed signals").no_effect(kListing),
      P("ingold").def(0).doc("HSPICE number format").no_effect(kListing),
      P("numdgt").def(4).doc("printed digits").no_effect(kListing),
      P("brief").kind(ParamKind::Flag).doc("HSPICE short listing").no_effect(kListing),
      P("nowarn").kind(ParamKind::Flag).doc("suppress warnings").no_effect(kListing),
      P("noinit").kind(ParamKind::Flag).doc("no operating-point printout").no_effect(kListing),
      P("keepopinfo").kind(ParamKind::Flag).doc("keep op information").no_effect(kListing),
      P("savecurrents").kind(ParamKind::Flag).doc("device currents (anasim writes source currents)")
          .no_effect(kListing),
      P("maxwarns").def(0).doc("warning limit").no_effect(kListing),
      P("filetype").kind(ParamKind::Text).doc("raw file format").no_effect(kListing),
      P("defl").unit("m").doc("MOS default length").no_effect(kNoMos),
      P("defw").unit("m").doc("MOS default width").no_effect(kNoMos),
      P("defad").unit("m^2").doc("MOS default drain area").no_effect(kNoMos),
      P("defas").unit("m^2").doc("MOS default source area").no_effect(kNoMos),
  };
  return table;
}

Status elaborate(const ParsedNetlist& pn, const DeviceCatalog& catalog, FlatNetlist& out, const Variation* var) {
  out = FlatNetlist{};
  return Elaborator(pn, catalog, out, var).run();
}

}  // namespace anasim
