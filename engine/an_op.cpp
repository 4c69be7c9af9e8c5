// .op driver and helpers shared by the analysis drivers.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <fmt/format.h>
#include "engine/analyses.hpp"
#include "engine/newton.hpp"
#include "engine/two_threads.hpp"

namespace anasim {

Status select_outputs(const Circuit& c, const std::vector<std::string>& outputs, std::vector<int>& idx) {
  idx.clear();
  if (outputs.empty()) {
    for (int u = 0; u < c.n(); ++u)
      if (c.unknowns()[u].visible) idx.push_back(u);
    return {};
  }
  for (const auto& o : outputs) {
    if (!o.empty() && o[0] == '@') continue;  // @device[name]: recorded by the power meter (power_meter)
    int found = -1;
    for (int u = 0; u < c.n(); ++u)
      if (c.unknowns()[u].name == o) found = u;
    if (found < 0) return Status::input(fmt::format("output '{}' is not a node voltage or branch current of this circuit", o));
    idx.push_back(found);
  }
  return {};
}

Recorder::Recorder(const Circuit& c, const std::vector<int>& out, AnalysisResult& res, bool with_probes)
    : out_(out), res_(res) {
  res.signals.reserve(res.signals.size() + out.size());
  for (int u : out) res.signals.push_back({c.unknowns()[u].name, c.unknowns()[u].is_node ? "V" : "A", {}, {}});
  if (!with_probes) return;
  std::vector<std::pair<std::string, std::string>> names;
  for (const auto& d : c.devices()) {
    size_t before = names.size();
    d->probes(names);
    if (names.size() > before) probing_.push_back(d.get());
  }
  for (auto& [n, unit] : names) res.signals.push_back({n, unit, {}, {}});
}

void Recorder::add_power(const PowerMeter* meter, bool energies) {
  meter_ = meter;
  energies_ = energies;
  std::vector<std::pair<std::string, std::string>> names;
  meter->signals(energies, names);
  for (auto& [n, unit] : names) res_.signals.push_back({n, unit, {}, {}});
}

void Recorder::stream_to(RowSink* sink) {
  sink_ = sink;
  lead_ = sink ? 1 : 0;
  res_.streamed = sink != nullptr;
}

void Recorder::reserve(size_t rows) {
  if (sink_) return;
  res_.sweep.reserve(rows);
  for (Signal& sg : res_.signals) sg.re.reserve(rows);
}

bool Recorder::record(const double* x, double t) {
  buf_.clear();
  for (const Device* d : probing_) d->probe_values(x, t, buf_);
  if (meter_) meter_->values(energies_, buf_);
  const size_t width = lead_ + out_.size() + buf_.size();
  if (width != width_) {  // the first row (or the signals changed): size the buffer
    flush();
    width_ = width;
    const size_t bytes = sink_ ? kSinkBytes : kBufferBytes, most = sink_ ? kSinkRows : kMaxRows;
    capacity_ = std::clamp<size_t>(bytes / (sizeof(double) * std::max<size_t>(width, 1)), 1, most);
    rows_.reset(new double[capacity_ * width]);
  }
  double* row = rows_.get() + pending_ * width_;
  if (sink_) *row++ = t;
  for (size_t k = 0; k < out_.size(); ++k) row[k] = x[out_[k]];
  std::copy(buf_.begin(), buf_.end(), row + out_.size());
  if (++pending_ == capacity_) flush();
  return sink_ok_;
}

void Recorder::flush() {
  if (pending_ == 0) return;
  if (sink_) {
    if (sink_ok_ && !begun_) sink_ok_ = sink_->begin(res_);
    begun_ = true;
    if (sink_ok_) sink_ok_ = sink_->rows(rows_.get(), pending_, width_);
    pending_ = 0;
    return;
  }
  // Eight signals at a time: their values of a row share a cache line; each signal then gets its rows at once.
  constexpr size_t kBlock = 8;
  double col[kBlock][kMaxRows];
  for (size_t c0 = 0; c0 < width_; c0 += kBlock) {
    const size_t nc = std::min(kBlock, width_ - c0);
    for (size_t r = 0; r < pending_; ++r) {
      const double* row = rows_.get() + r * width_ + c0;
      for (size_t j = 0; j < nc; ++j) col[j][r] = row[j];
    }
    for (size_t j = 0; j < nc; ++j) {
      std::vector<double>& re = res_.signals[c0 + j].re;
      re.insert(re.end(), col[j], col[j] + pending_);
    }
  }
  pending_ = 0;
}

Status Recorder::finish() {
  flush();
  if (!sink_) return {};
  if (!begun_ && sink_ok_) sink_ok_ = sink_->begin(res_);  // no rows: the header alone
  begun_ = true;
  return sink_->end();
}

std::unique_ptr<PowerMeter> power_meter(Circuit& c, const FlatNetlist& fn, const Analysis& a, NewtonSolver& s) {
  const bool powers = a.power || fn.options.power;
  const bool refs = std::any_of(fn.outputs.begin(), fn.outputs.end(),
                                [](const std::string& o) { return !o.empty() && o[0] == '@'; });
  if (!powers && !refs) return nullptr;
  auto m = std::make_unique<PowerMeter>(c, fn, powers);
  s.set_power_meter(m.get());
  return m;
}

std::vector<std::pair<UnknownIndex, double>> forced_ics(const Circuit& c, const FlatNetlist& fn) {
  std::vector<std::pair<UnknownIndex, double>> f;
  for (const auto& [node, v] : fn.ics) f.emplace_back(c.node_unknown(node), v);
  return f;
}

bool apply_guess(const Circuit& c, const FlatNetlist& fn, std::vector<double>& x) {
  if (fn.guess.empty()) return false;
  std::unordered_map<std::string_view, int> id;
  const auto& names = c.node_names();
  id.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) id.emplace(names[i], static_cast<int>(i));
  for (const auto& [node, v] : fn.guess) {
    const auto it = id.find(node);
    if (it == id.end() || !std::isfinite(v)) continue;
    const UnknownIndex u = c.node_unknown(NodeId(it->second));
    if (!u.is_ground()) x[u.v] = v;
  }
  return true;
}

Status run_op(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res) {
  auto t0 = std::chrono::steady_clock::now();
  NewtonSolver s(c, fn.options);
  auto meter = power_meter(c, fn, a, s);
  // The result's signals (a name each, and room for their one value) are created beside the solve where there are
  // many: the 784x128 crossbar deck's 202,656 take 17 ms, hidden behind the solve's single-threaded setup (op 0.135
  // -> 0.117 s), and their 202,656 value blocks ~5 ms more.
  std::optional<Recorder> rec;
  auto signals = [&] {
    rec.emplace(c, out, res);
    rec->reserve(1);
  };
  Status st;
  if (out.size() >= kTwoThreadItems && second_thread_allowed()) {
    run_beside(signals, [&] { st = s.operating_point(); });
  } else {
    st = s.operating_point();
    if (st) signals();
  }
  if (!st) return st;
  res.kind = "op";
  if (meter) {
    meter->evaluate(s.x().data(), s);
    rec->add_power(meter.get(), false);
  }
  rec->record(s.x().data(), 0.0);
  res.stats = s.stats();
  res.stats.timepoints = 1;
  res.stats.kcl_residual = s.kcl_residual();
  res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {};
}

}  // namespace anasim
