// Elaboration's worker (see elaborate.hpp): one ParsedNetlist into a FlatNetlist. Private to engine/elaborate.cpp
// (parameters, subcircuit flattening, models, expressions) and engine/elaborate_cards.cpp (options, analyses).
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "engine/elaborate.hpp"
#include "engine/name_index.hpp"

namespace anasim::elab {

// The .model cards visible in a subcircuit: its own, then its parents' up to the top level.
struct ModelScope {
  const std::vector<ModelDef>* models;
  const ModelScope* parent;
  const ModelDef* find(const std::string& name) const {
    for (const auto& m : *models)
      if (m.name == name) return &m;
    return parent ? parent->find(name) : nullptr;
  }
};

// k -> names[k], the name_of of a NameIndex over node names.
struct NodeNameOf {
  const std::vector<std::string>& names;
  const std::string& operator()(size_t k) const { return names[k]; }
};

class Elaborator {
 public:
  Elaborator(const ParsedNetlist& pn, const DeviceCatalog& cat, FlatNetlist& out, const Variation* var)
      : pn_(pn), cat_(cat), out_(out), var_(var) {}

  // Elaborates pn into out (cleared by the caller): parameters, options, devices, expressions, analyses, initial
  // conditions. Errors carry the netlist location; warnings go to the result.
  Status run();

 private:
  // .options / YAML options: through option_table(); a no_effect option warns, an unknown one is an error.
  Status options();

  // A warning of the elaboration, each text once (a model shared by many devices warns once).
  void warn(std::string text) const;
  // flatten_run: where the warnings of the thread that runs the back end go (nullptr: warn() as usual), each with
  // t_device_, the first device of the block it came from (the blocks' warnings are put in order by it).
  static thread_local std::vector<std::pair<size_t, std::string>>* t_warnings_;
  static thread_local size_t t_device_;

  // `name` is already mapped (map_node), so ground is spelled "0".
  NodeId node(std::string_view name);

  // The devices devs of the subcircuit path `prefix` (ports: its port names -> the caller's nodes) into
  // out_.devices, subcircuit instances expanded recursively (depth: the nesting, limited to catch recursion).
  Status flatten(const std::vector<DeviceInstance>& devs, const std::string& prefix,
                 const std::map<std::string, std::string>& ports, const Scope& scope, const ModelScope& models,
                 int depth);

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
                     const MapNode& map_node, const Scope& scope, const ModelScope& models);

  // The type, parameters, model and expressions of fd from inst, named `full` (`prefix`: its subcircuit path), with
  // the checks in this order: type, pin count, parameters, expressions. fd.nodes is left alone. Reads only shared
  // state (flatten_run calls it on two threads).
  template <class MapNode>
  Status device_checked(const DeviceInstance& inst, const std::string& full, const std::string& prefix,
                        FlatDevice& fd, const Scope& scope, const ModelScope& models, const MapNode& map_node) const;

  // Compiles the behavioural expressions (Expr parameters, B source) of fd, mapping node names with map_node and
  // device names with `prefix`; their quantities are bound to the circuit by resolve_expressions().
  template <class MapNode>
  Status compile_expressions(FlatDevice& fd, const std::string& full, const std::string& prefix, const Scope& scope,
                             const MapNode& map_node) const;

  // The parameters, control source and model of fd (name, type and nodes already set). Reads only shared
  // state that does not change during flattening, so devices can be filled on several threads.
  Status device_params(const DeviceInstance& inst, const DeviceType& t, const std::string& prefix,
                       const Scope& scope, const ModelScope& models, FlatDevice& fd) const;

  // Binds the quantities of behavioural expressions to nodes and branch-carrying devices, once every
  // device is flattened (an expression may name a node or source defined further down).
  Status resolve_expressions();

  // The first expression of the netlist that reads `temper` (a whole word), nullptr if none.
  const ValueExpr* find_temper() const;

  // e evaluated at the top level into out (def where e is empty; an empty e without a default (NaN) is an error
  // naming `what` at `where`).
  Status eval(const ValueExpr& e, double def, double& out, const SourceLoc& where, const char* what);

  // The analyses' parameters evaluated and checked into out_.analyses.
  Status analyses();

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

}  // namespace anasim::elab
