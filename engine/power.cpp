// Device powers from the devices' own stamps, and transient energies (see power.hpp).
#include "engine/power.hpp"
#include <algorithm>
#include "engine/device_query.hpp"
#include "engine/newton.hpp"
#include <unordered_map>

namespace anasim {

namespace {

// Re-declares devices against the compiled pattern: writes each slot's offset (looked up in the CSC pattern,
// so the offsets compile() wrote are rewritten unchanged) and records the entries and rhs rows it is given.
class RecordingBuilder : public PatternBuilder {
 public:
  explicit RecordingBuilder(const Circuit& c) : c_(c) {}

  UnknownIndex unknown(NodeId n) const override { return c_.node_unknown(n); }
  UnknownIndex branch_of(const std::string& name) const override {
    if (branches_.empty())
      for (int u = 0; u < c_.n(); ++u)
        if (!c_.unknowns()[u].is_node) branches_.emplace(c_.unknowns()[u].name, u);
    auto it = branches_.find("i(" + name + ")");
    return it == branches_.end() ? UnknownIndex() : UnknownIndex(it->second);
  }
  Offset rhs(UnknownIndex u) const override {
    if (u.v >= 0) rhs_.push_back(u.v);
    return u.v < 0 ? c_.n() : u.v;
  }
  void entry(UnknownIndex row, UnknownIndex col, Offset* slot) override {
    const Offset trash = c_.nnz();
    if (row.v < 0 || col.v < 0) {
      *slot = trash;
      return;
    }
    const auto& Ap = c_.Ap();
    const auto& Ai = c_.Ai();
    auto first = Ai.begin() + Ap[col.v], last = Ai.begin() + Ap[col.v + 1];
    auto it = std::lower_bound(first, last, row.v);
    *slot = static_cast<Offset>(it - Ai.begin());  // declared entries are always in the pattern
    entries_.push_back({*slot, row.v, col.v});
  }

  struct Rec {
    Offset off;
    int row, col;
  };
  std::vector<Rec> entries_;
  mutable std::vector<int> rhs_;

 private:
  const Circuit& c_;
  mutable std::unordered_map<std::string, int> branches_;
};

}  // namespace

PowerMeter::PowerMeter(Circuit& c, const FlatNetlist& fn, bool powers) : c_(c), powers_(powers) {
  const auto& unk = c.unknowns();
  RecordingBuilder rb(c);
  entry_begin_.push_back(0);
  rhs_begin_.push_back(0);
  std::unordered_map<std::string, int> group_index;
  auto group = [&](const std::string& key, bool supply) {
    auto [it, fresh] = group_index.emplace(key, static_cast<int>(groups_.size()));
    if (fresh) {
      groups_.push_back(key);
      supply_group_.push_back(supply);
    }
    return it->second;
  };
  for (size_t k = 0; k < c.devices().size(); ++k) {
    Device* d = c.devices()[k].get();
    devices_.push_back(d);
    rb.entries_.clear();
    rb.rhs_.clear();
    d->declare(rb);
    // Unique offsets on node rows (a device may declare an entry twice; its share is the slot's total).
    std::sort(rb.entries_.begin(), rb.entries_.end(), [](const auto& a, const auto& b) { return a.off < b.off; });
    Offset prev = -1;
    for (const auto& e : rb.entries_) {
      if (e.off == prev) continue;
      prev = e.off;
      entries_.push_back({e.off, e.row, e.col, unk[e.row].is_node});
    }
    std::sort(rb.rhs_.begin(), rb.rhs_.end());
    rb.rhs_.erase(std::unique(rb.rhs_.begin(), rb.rhs_.end()), rb.rhs_.end());
    rhs_rows_.insert(rhs_rows_.end(), rb.rhs_.begin(), rb.rhs_.end());
    entry_begin_.push_back(static_cast<int>(entries_.size()));
    rhs_begin_.push_back(static_cast<int>(rhs_rows_.size()));
    const DeviceType* type = k < fn.devices.size() ? fn.devices[k].type : nullptr;
    names_.push_back(d->name());
    group_of_.push_back(group(type ? type->key : "other", type && type->supply));
    if (d->has_internal_supply()) supplied_.push_back(static_cast<int>(k));
  }
  for (int k : supplied_) {
    names_.push_back(devices_[k]->name() + "#rails");
    group_of_.push_back(group("rails", true));
  }
  dA_.assign(entries_.size(), 0.0);
  db_.assign(rhs_rows_.size(), 0.0);
  is_node_.resize(c.n() + 1);
  for (int u = 0; u < c.n(); ++u) is_node_[u] = unk[u].is_node;
  xr_.assign(c.n() + 1, 0.0L);
  resid_.assign(c.n() + 1, 0.0L);
  d_.assign(c.n() + 1, 0.0);
  p_.assign(names_.size(), 0.0);
  p1_ = e1_ = e2_ = p_;
  for (const std::string& out : fn.outputs) {
    std::string dev, what;
    if (!split_device_ref(out, dev, what)) continue;
    for (size_t k = 0; k < fn.devices.size() && k < devices_.size(); ++k) {
      const FlatDevice& fd = fn.devices[k];
      DeviceQuery q;
      if (fd.name != dev || !device_query(*fd.type, what, q)) continue;  // the reader checked the reference
      Reference r{out, q.unit, static_cast<int>(q.kind), static_cast<int>(k)};
      if (q.kind == DeviceQuery::Kind::Param) r.value = fd.params.value[q.param];
      r.dc = q.kind == DeviceQuery::Kind::Param && fd.type->source_syntax && what == "dc";
      for (int u = 0; u < c.n() && q.kind == DeviceQuery::Kind::Current; ++u)
        if (unk[u].name == "i(" + fd.name + ")") r.branch = u;
      if (r.branch < 0 && !fd.nodes.empty()) {
        r.row = c.node_unknown(fd.nodes[0]).v;
        if (r.row < 0 && fd.nodes.size() > 1) {
          r.row = c.node_unknown(fd.nodes[1]).v;
          r.sign = -1;
        }
      }
      refs_.push_back(std::move(r));
      break;
    }
  }
}

double PowerMeter::pin_current(size_t d, int row) const {
  if (row < 0) return 0.0;
  long double i = 0.0;
  for (int k = entry_begin_[d]; k < entry_begin_[d + 1]; ++k)
    if (entries_[k].row == row) i += dA_[k] * xr_[entries_[k].col];
  for (int k = rhs_begin_[d]; k < rhs_begin_[d + 1]; ++k)
    if (rhs_rows_[k] == row) i -= db_[k];
  return static_cast<double>(i);
}

void PowerMeter::load(LoadContext& ctx) {
  double* A = ctx.A;
  double* b = ctx.b;
  const Entry* en = entries_.data();
  const int* rr = rhs_rows_.data();
  for (size_t d = 0; d < devices_.size(); ++d) {
    const int e0 = entry_begin_[d], e1 = entry_begin_[d + 1];
    const int r0 = rhs_begin_[d], r1 = rhs_begin_[d + 1];
    for (int k = e0; k < e1; ++k) dA_[k] = A[en[k].off];
    for (int k = r0; k < r1; ++k) db_[k] = b[rr[k]];
    devices_[d]->load(ctx);
    for (int k = e0; k < e1; ++k) dA_[k] = A[en[k].off] - dA_[k];
    for (int k = r0; k < r1; ++k) db_[k] = b[rr[k]] - db_[k];
  }
}

void PowerMeter::residual() {
  std::fill(resid_.begin(), resid_.end(), 0.0L);
  for (size_t k = 0; k < entries_.size(); ++k) resid_[entries_[k].row] += dA_[k] * xr_[entries_[k].col];
  for (size_t k = 0; k < rhs_rows_.size(); ++k) resid_[rhs_rows_[k]] -= db_[k];
}

void PowerMeter::evaluate(const double* x, NewtonSolver& s) {
  const int n = c_.n();
  std::copy(x, x + n + 1, xr_.begin());
  // One step of iterative refinement in long double: x rounded to double leaves a KCL residual of about 1e-16 of
  // the largest stamp times its voltage (1e-11 A next to a 1e5 S op-amp gain), which would show in the power sum.
  residual();
  for (int u = 0; u < n; ++u) d_[u] = -static_cast<double>(resid_[u]);
  d_[n] = 0.0;
  if (s.solve_last(d_.data()))
    for (int u = 0; u < n; ++u) xr_[u] += d_[u];
  for (size_t d = 0; d < devices_.size(); ++d) {
    long double p = 0.0;
    for (int k = entry_begin_[d]; k < entry_begin_[d + 1]; ++k)
      if (entries_[k].node) p += xr_[entries_[k].row] * dA_[k] * xr_[entries_[k].col];
    for (int k = rhs_begin_[d]; k < rhs_begin_[d + 1]; ++k)
      if (is_node_[rhs_rows_[k]]) p -= xr_[rhs_rows_[k]] * db_[k];
    p_[d] = static_cast<double>(p);
  }
  for (size_t s = 0; s < supplied_.size(); ++s) {
    const double draw = devices_[supplied_[s]]->internal_supply_power(x);
    p_[supplied_[s]] += draw;
    p_[devices_.size() + s] = -draw;
  }
  for (Reference& r : refs_) {
    if (r.dc) r.value = devices_[r.device]->dc_value();
    else if (r.kind == static_cast<int>(DeviceQuery::Kind::Power)) r.value = p_[r.device];
    else if (r.kind == static_cast<int>(DeviceQuery::Kind::Current))
      r.value = r.branch >= 0 ? static_cast<double>(xr_[r.branch]) : r.sign * pin_current(r.device, r.row);
  }
}

void PowerMeter::start_energies(bool have_powers) {
  if (!have_powers) std::fill(p_.begin(), p_.end(), 0.0);
  p1_ = p_;
  std::fill(e1_.begin(), e1_.end(), 0.0);
  e2_ = e1_;
}

void PowerMeter::integrate(const Integrator& integ) {
  for (size_t k = 0; k < p_.size(); ++k) {
    const double e0 = integ.integrate(e1_[k], e2_[k], p_[k], p1_[k]);
    e2_[k] = e1_[k];
    e1_[k] = e0;
    p1_[k] = p_[k];
  }
}

void PowerMeter::signals(bool energies, std::vector<std::pair<std::string, std::string>>& out) const {
  for (const char* q : {"p", "e"}) {
    if (!powers_) break;
    if (q[0] == 'e' && !energies) break;
    const std::string unit = q[0] == 'p' ? "W" : "J";
    for (const auto& n : names_) out.emplace_back(std::string(q) + "(" + n + ")", unit);
    for (const auto& g : groups_) out.emplace_back(std::string(q) + "(type:" + g + ")", unit);
    out.emplace_back(std::string(q) + "(total)", unit);
  }
  for (const Reference& r : refs_) out.emplace_back(r.name, r.unit);
}

void PowerMeter::values(bool energies, std::vector<double>& out) const {
  std::vector<double> group(groups_.size());
  for (const std::vector<double>* v : {&p_, &e1_}) {
    if (!powers_ || (v == &e1_ && !energies)) break;
    std::fill(group.begin(), group.end(), 0.0);
    for (size_t k = 0; k < v->size(); ++k) {
      out.push_back((*v)[k]);
      group[group_of_[k]] += (*v)[k];
    }
    double delivered = 0.0;  // by the supplies: minus what they absorb
    for (size_t g = 0; g < groups_.size(); ++g) {
      out.push_back(group[g]);
      if (supply_group_[g]) delivered -= group[g];
    }
    out.push_back(delivered);
  }
  for (const Reference& r : refs_) out.push_back(r.value);
}

}  // namespace anasim
