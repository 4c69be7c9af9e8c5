// Circuit construction: device instantiation, unknown allocation, sparse pattern compilation and
// topology checks (voltage-source loops, nodes without a DC path to ground).
#include "engine/circuit.hpp"
#include "engine/two_threads.hpp"
#include <algorithm>
#include <numeric>
#include <fmt/format.h>

namespace anasim {

namespace {

// Union-find over node ids, for topology checks.
struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int a) {
    while (parent[a] != a) a = parent[a] = parent[parent[a]];
    return a;
  }
  bool unite(int a, int b) {  // false if already joined
    a = find(a); b = find(b);
    if (a == b) return false;
    parent[a] = b;
    return true;
  }
};

}  // namespace

class CircuitBuilder : public Allocator, public PatternBuilder {
 public:
  explicit CircuitBuilder(Circuit& c) : c_(c) {}

  UnknownIndex unknown(NodeId n) const override { return c_.node_unknown(n); }
  UnknownIndex add_branch(const Device& owner, const std::string& suffix) override {
    UnknownIndex u(static_cast<int>(c_.unknowns_.size()));
    std::string nm = suffix.empty() ? owner.name() : owner.name() + "#" + suffix;
    c_.unknowns_.push_back({"i(" + nm + ")", false, true});
    c_.branch_owner_.push_back(owner.name());
    if (suffix.empty()) branches_.emplace_back(owner.name(), u);
    return u;
  }
  NodeId add_internal_node(const Device& owner, const std::string& suffix, bool visible) override {
    NodeId id(static_cast<int>(c_.node_names_.size()));
    std::string nm = owner.name() + "#" + suffix;
    c_.node_names_.push_back(nm);
    UnknownIndex u(static_cast<int>(c_.unknowns_.size()));
    c_.node_unknown_.push_back(u);
    c_.unknowns_.push_back({"v(" + nm + ")", true, visible});
    c_.branch_owner_.push_back(owner.name());
    return id;
  }
  int add_states(int count) override {
    int first = c_.n_states_;
    c_.n_states_ += count;
    return first;
  }
  void entry(UnknownIndex row, UnknownIndex col, Offset* slot) override {
    entries_.push_back({row.v, col.v, slot});
  }
  UnknownIndex branch_of(const std::string& name) const override {
    for (const auto& [n, u] : branches_)
      if (n == name) return u;
    return UnknownIndex();
  }
  Offset rhs(UnknownIndex u) const override { return u.v < 0 ? c_.n() : u.v; }
  // Room for `entries` declared matrix entries (plus one diagonal entry per unknown, added by compile()).
  void reserve(size_t entries) { entries_.reserve(entries + c_.unknowns_.size()); }

  // Builds CSC arrays from the declared entries and writes offsets back into device slots:
  // bucket the entries by column, sort the (few) rows of each column, drop duplicates.
  void compile() {
    const int n = c_.n();
    std::vector<Offset> diag_slots(n);
    for (int i = 0; i < n; ++i) entries_.push_back({i, i, &diag_slots[i]});
    std::vector<int> count(n + 1, 0);
    for (const auto& e : entries_)
      if (e.row >= 0 && e.col >= 0) ++count[e.col + 1];
    for (int j = 0; j < n; ++j) count[j + 1] += count[j];
    std::vector<int> order(count[n]);  // entry indices bucketed by column
    {
      std::vector<int> next(count.begin(), count.end() - 1);
      for (int k = 0; k < static_cast<int>(entries_.size()); ++k) {
        const auto& e = entries_[k];
        if (e.row >= 0 && e.col >= 0) order[next[e.col]++] = k;
        else *e.slot = -1;  // patched to the trash offset below
      }
    }
    c_.Ap_.assign(n + 1, 0);
    c_.Ai_.clear();
    c_.Ai_.reserve(order.size());
    for (int j = 0; j < n; ++j) {
      auto first = order.begin() + count[j], last = order.begin() + count[j + 1];
      std::sort(first, last, [&](int a, int b) { return entries_[a].row < entries_[b].row; });
      int prev_row = -1;
      for (auto it = first; it != last; ++it) {
        const auto& e = entries_[*it];
        if (e.row != prev_row) {
          c_.Ai_.push_back(e.row);
          prev_row = e.row;
        }
        *e.slot = static_cast<Offset>(c_.Ai_.size()) - 1;
      }
      c_.Ap_[j + 1] = static_cast<int>(c_.Ai_.size());
    }
    const Offset trash = static_cast<Offset>(c_.Ai_.size());
    for (const auto& e : entries_)
      if (e.row < 0 || e.col < 0) *e.slot = trash;
    c_.diag_ = diag_slots;
  }

 private:
  struct Entry {
    int row, col;
    Offset* slot;
  };
  Circuit& c_;
  std::vector<Entry> entries_;
  std::vector<std::pair<std::string, UnknownIndex>> branches_;
};

void Circuit::set_temperature(const Temperature& t) {
  ++temperature_epoch_;
  for (auto& d : devices_) d->set_temperature(t);
}

Device* Circuit::find_device(const std::string& name) const {
  for (const auto& d : devices_)
    if (d->name() == name) return d.get();
  return nullptr;
}

std::string Circuit::describe(int u) const {
  if (u < 0 || u >= n()) return "an unknown";
  const auto& info = unknowns_[u];
  std::string inner = info.name.substr(2, info.name.size() - 3);
  if (info.is_node) return fmt::format("node '{}'", inner);
  return fmt::format("branch current of '{}'", branch_owner_[u]);
}

Status Circuit::build(const FlatNetlist& fn, const DeviceCatalog&) {
  Status st;
  devices_.clear();
  unknowns_.clear();
  branch_owner_.clear();
  node_names_ = fn.node_names;
  node_unknown_.assign(node_names_.size(), UnknownIndex());
  unknowns_.reserve(node_names_.size());
  for (size_t i = 1; i < node_names_.size(); ++i) {
    node_unknown_[i] = UnknownIndex(static_cast<int>(i) - 1);
    unknowns_.push_back({"v(" + node_names_[i] + ")", true, true});
  }
  branch_owner_.resize(unknowns_.size());
  n_states_ = 0;
  nonlinear_ = false;

  // The devices, in netlist order. A flat deck of kTwoThreadItems devices or more has them created on two threads
  // (the first half here, the second on a worker), unless a type's create() reads files; the messages are those
  // of one thread: the first half's warnings, then the second's, and the first failure in device order. Measured
  // against the same build with the threshold out of reach (2 cores, whole runs, medians of 15 alternated,
  // 2026-11-25): 784x128 crossbar deck 0.683 -> 0.633 s, 256x64 0.112 -> 0.104 s; the build's devices 0.068 ->
  // ~0.035 s, the topology checks (beside the pattern's compilation, below) 0.020 s off the critical path.
  const size_t nd = fn.devices.size();
  devices_.resize(nd);
  // Each device at the circuit's temperature as it is made (set_temperature only sets the device's own values).
  const Temperature temp = fn.options.temperature();
  ++temperature_epoch_;
  bool nonlinear_back = false;
  auto create = [&](size_t i0, size_t i1, Status& s, bool& nonlinear) {  // the first device that failed, or i1
    for (size_t k = i0; k < i1; ++k) {
      const FlatDevice& fd = fn.devices[k];
      devices_[k] = fd.type->create(fd, s);
      if (devices_[k]) {
        devices_[k]->set_temperature(temp);
        nonlinear = nonlinear || devices_[k]->nonlinear();
        continue;
      }
      if (s.ok()) s.merge(Status::input(fmt::format("cannot create {} '{}'", fd.type->long_name, fd.name), fd.loc));
      return k;
    }
    return i1;
  };
  const bool two = nd >= kTwoThreadItems && second_thread_allowed() &&
                   std::none_of(fn.devices.begin(), fn.devices.end(),
                                [](const FlatDevice& fd) { return fd.type->create_reads_files; });
  const size_t half = two ? nd / 2 : nd;
  Status st_back;
  size_t bad = nd, bad_back = nd;
  if (two)
    run_beside([&] { bad_back = create(half, nd, st_back, nonlinear_back); },
               [&] { bad = create(0, half, st, nonlinear_); });
  else
    bad = create(0, nd, st, nonlinear_);
  if (bad < half) {
    devices_.resize(bad);
    return st;
  }
  st.merge(st_back);
  if (bad_back < nd) {
    devices_.resize(bad_back);
    return st;
  }
  nonlinear_ = nonlinear_ || nonlinear_back;

  CircuitBuilder b(*this);
  state_devices_.clear();
  for (auto& d : devices_) {
    const int before = n_states_;
    d->allocate(b);
    if (n_states_ > before) state_devices_.push_back(d.get());
  }
  // Topology checks on all nodes, including device-internal ones (devices and nodes are all in place now).
  // Returns the first error.
  auto check_topology = [this, &fn]() -> Status {
    const int nn = static_cast<int>(node_names_.size());
    // First device touching each node, for locating messages.
    std::vector<int> first_dev(nn, -1);
    for (size_t k = 0; k < fn.devices.size(); ++k)
      for (NodeId id : fn.devices[k].nodes)
        if (first_dev[id.v] < 0) first_dev[id.v] = static_cast<int>(k);
    {
      UnionFind uf(nn);
      std::vector<NodePair> edges;
      for (size_t k = 0; k < devices_.size(); ++k) {
        edges.clear();
        devices_[k]->voltage_edges(edges);
        for (const auto& [a, c] : edges) {
          if (!uf.unite(a.v, c.v))
            return Status::input(fmt::format("{} '{}' closes a loop of voltage sources/inductors between nodes '{}' and "
                                             "'{}' (the loop has no unique solution)",
                                             fn.devices[k].type->long_name, devices_[k]->name(), node_names_[a.v],
                                             node_names_[c.v]),
                                 devices_[k]->loc());
        }
      }
    }
    {
      UnionFind uf(nn);
      std::vector<NodePair> edges;
      for (auto& d : devices_) {
        edges.clear();
        d->dc_paths(edges);
        d->voltage_edges(edges);
        for (const auto& [a, c] : edges) uf.unite(a.v, c.v);
      }
      for (int i = 1; i < nn; ++i) {
        if (uf.find(i) != uf.find(0)) {
          SourceLoc loc = first_dev[i] >= 0 ? fn.devices[first_dev[i]].loc : SourceLoc{};
          std::string via = first_dev[i] >= 0 ? fmt::format(" (connected to '{}')", fn.devices[first_dev[i]].name) : "";
          return Status::input(fmt::format("node '{}' has no DC path to ground{}", node_names_[i], via), loc);
        }
      }
    }
    return {};
  };
  b.reserve(5 * devices_.size());  // most devices are two-terminal conductances (4 entries); sources have more
  for (auto& d : devices_) d->declare(b);
  for (size_t k = 0; k < fn.devices.size(); ++k) {
    const auto& fd = fn.devices[k];
    if (!fd.control.empty() && b.branch_of(fd.control).is_ground())
      return Status::input(fmt::format("{} '{}' is controlled by '{}', which is not a voltage source or inductor "
                                       "in this circuit", fd.type->long_name, fd.name, fd.control),
                           fd.control_loc.valid() ? fd.control_loc : fd.loc);
  }
  // The topology checks read the devices' nodes only, the compilation writes their matrix offsets: on two
  // threads, side by side, where the devices were created on two.
  Status topo;
  if (two) {
    run_beside([&] { topo = check_topology(); }, [&] { b.compile(); });
  } else {
    b.compile();
    topo = check_topology();
  }
  if (!topo) return topo;
  return st;
}

std::vector<int> Circuit::elimination_hint() const {
  std::vector<NodeId> nodes, longest;
  for (const auto& d : devices_) {
    nodes.clear();
    d->elimination_order(nodes);
    if (nodes.size() > longest.size()) longest.swap(nodes);
  }
  std::vector<int> hint;
  hint.reserve(longest.size());
  for (NodeId nd : longest)
    if (UnknownIndex u = node_unknown(nd); !u.is_ground()) hint.push_back(u.v);
  return hint;
}

}  // namespace anasim
