// Elaboration (see elaborate.hpp): parameter evaluation, subcircuit flattening, model binding and
// initial conditions; the options and analyses are engine/elaborate_cards.cpp.
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
#include "engine/elaborator.hpp"
#include "engine/two_threads.hpp"

namespace anasim {

namespace {

constexpr int kMaxDepth = 64;  // subcircuit nesting limit (catches recursive definitions)

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

}  // namespace

namespace elab {

thread_local std::vector<std::pair<size_t, std::string>>* Elaborator::t_warnings_ = nullptr;
thread_local size_t Elaborator::t_device_ = 0;

Status Elaborator::run() {
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

void Elaborator::warn(std::string text) const {
  if (t_warnings_) {  // flatten_run's back end: kept for later, in order
    t_warnings_->emplace_back(t_device_, std::move(text));
    return;
  }
  if (warned_.insert(text).second) warnings_.push_back(std::move(text));
}

NodeId Elaborator::node(std::string_view name) {
  if (name == "0") return NodeId(0);
  const size_t next = out_.node_names.size();
  auto [id, inserted] = node_ids_.try_emplace(name, next, NodeNameOf{out_.node_names});
  if (inserted) out_.node_names.emplace_back(name);
  return NodeId(static_cast<int>(id));
}

Status Elaborator::flatten(const std::vector<DeviceInstance>& devs, const std::string& prefix,
                           const std::map<std::string, std::string>& ports, const Scope& scope,
                           const ModelScope& models, int depth) {
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

template <class MapNode>
Status Elaborator::flatten_run(const std::vector<DeviceInstance>& devs, size_t i0, size_t i1,
                               const std::string& prefix, const MapNode& map_node, const Scope& scope,
                               const ModelScope& models) {
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

template <class MapNode>
Status Elaborator::device_checked(const DeviceInstance& inst, const std::string& full, const std::string& prefix,
                                  FlatDevice& fd, const Scope& scope, const ModelScope& models,
                                  const MapNode& map_node) const {
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

template <class MapNode>
Status Elaborator::compile_expressions(FlatDevice& fd, const std::string& full, const std::string& prefix,
                                       const Scope& scope, const MapNode& map_node) const {
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

Status Elaborator::device_params(const DeviceInstance& inst, const DeviceType& t, const std::string& prefix,
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

Status Elaborator::resolve_expressions() {
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

const ValueExpr* Elaborator::find_temper() const {
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

Status Elaborator::eval(const ValueExpr& e, double def, double& out, const SourceLoc& where, const char* what) {
  if (e.text.empty()) {
    if (std::isnan(def)) return Status::input(fmt::format("missing {}", what), where);
    out = def;
    return {};
  }
  return evaluate_expr(e.text, e.loc, top_, out);
}

}  // namespace elab

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

Status elaborate(const ParsedNetlist& pn, const DeviceCatalog& catalog, FlatNetlist& out, const Variation* var) {
  out = FlatNetlist{};
  return elab::Elaborator(pn, catalog, out, var).run();
}

}  // namespace anasim
