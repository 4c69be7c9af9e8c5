// Network transient through the engine (see energy.hpp): builds the transient netlist of one input, runs it,
// reads settling time, energies (the engine's e(...) power probes) and sampled classes from the waveforms.
#include "nn/energy.hpp"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <omp.h>
#include "devices/registry.hpp"
#include "engine/distribute.hpp"
#include "engine/simulate.hpp"
#include "nn/fast_eval.hpp"
#include "nn/evaluate.hpp"
#include "nn/fast_tran.hpp"

namespace anasim::nn {

namespace {

using Clock = std::chrono::steady_clock;

// The engine path's first run: this many times the fast path's settling time of the image (settled = in the first
// half of the run).
constexpr double kEngineRunMargin = 2.5;

// Component of a device of the mapped netlist (by name prefix), -1 for sources.
int part_of(const std::string& dev) {
  auto starts = [&](const char* p) { return dev.rfind(p, 0) == 0; };
  if (starts("xb")) return kPartCrossbar;
  if (starts("utia") || starts("urect") || starts("uinv")) return kPartOpamps;
  if (starts("rdac")) return kPartDacs;
  if (starts("adc")) return kPartAdcs;
  if (starts("rf")) return kPartOther;
  if (starts("d1") || starts("d2") || starts("ri1") || starts("ri2") || starts("r1") || starts("r2") || starts("rl"))
    return kPartActivation;
  return -1;  // dac*, vrail*, in* (sources) and anything else
}

// Class: argmax (first maximum) of the last layer's ADC codes of the output voltages y.
int class_of(const HardwareInstance& hw, const std::vector<double>& y) {
  const int l = static_cast<int>(hw.map->layers.size()) - 1;
  int best = 0;
  long best_code = -1;
  for (int j = 0; j < static_cast<int>(y.size()); ++j) {
    const long k = adc_code(hw, l, j, y[j]);
    if (k > best_code) {
      best_code = k;
      best = j;
    }
  }
  return best;
}

// Classes from the outputs yv (per neuron, over time points t) sampled at the times ts.
std::vector<int> classes_at(const HardwareInstance& hw, const std::vector<double>& t,
                            const std::vector<const std::vector<double>*>& yv, const std::vector<double>& ts) {
  std::vector<int> out;
  std::vector<double> y(yv.size());
  for (double ts_k : ts) {
    for (size_t j = 0; j < yv.size(); ++j) y[j] = interp(t, yv[j]->data(), 1, ts_k);
    out.push_back(class_of(hw, y));
  }
  return out;
}

// One engine run of length tstop; fills out except when the outputs have not settled by tstop / 2 (settled =
// false then).
Status run_once(const HardwareInstance& hw, const LayerCodes& codes, const LayerCodes& from, std::uint64_t sample,
                const TransientOptions& opt, double tstop, const std::vector<double>& sample_times,
                const std::vector<LayerVoltages>* start, ImageTransient& out, bool& settled) {
  const MappedNetwork& map = *hw.map;
  TranSpec ts;
  if (opt.from_previous) ts.from = from;
  ts.tstop = tstop;
  ts.tmax = tstop / std::max(10, opt.points);
  FlatNetlist fn;
  NetlistNames names;
  const auto t0 = Clock::now();
  if (Status st = build_netlist(hw, codes, sample, fn, names, &ts); !st) return st;
  if (start) {
    // The DC netlist's periphery nodes, and the op-amps' supply nodes of the transient one (TranSpec: vcc, vee at
    // the part's vpos, vneg): from 0 V the first Newton iterate would see every op-amp without supply.
    fn.guess = periphery_node_voltages(map, *start);
    fn.guess.emplace_back("vcc", opamp_param(map.cfg, "vpos"));
    fn.guess.emplace_back("vee", opamp_param(map.cfg, "vneg"));
  }
  out.seconds_build += std::chrono::duration<double>(Clock::now() - t0).count();
  const std::vector<std::string>& ys = names.tia_out.back();
  for (const auto& y : ys) fn.outputs.push_back(fmt::format("v({})", y));
  RunResults rr;
  if (Status st = simulate(fn, builtin_catalog(), rr); !st) return st;
  const AnalysisResult& res = rr.analyses.at(0);
  const std::vector<double>& t = res.sweep;
  out.timepoints = res.stats.timepoints;
  out.seconds += res.stats.seconds;
  out.engine.add(res.stats);
  out.tstop_s = tstop;
  if (t.size() < 2) return Status::numerical("network transient: fewer than two time points");

  // Settling: the last entry into the +-0.5 LSB band around the final value (the value at the last point).
  const AdcSpec& adc = map.layers.back().adc_spec;
  const double band = 0.5 * (adc.vmax - adc.vmin) / static_cast<double>(adc_max_code(adc));
  std::vector<const std::vector<double>*> yv;
  for (const auto& y : ys) {
    const Signal* s = res.find(fmt::format("v({})", y));
    if (!s) return Status::numerical(fmt::format("network transient: no signal v({})", y));
    yv.push_back(&s->re);
  }
  double settle = 0;
  for (const auto* v : yv) settle = std::max(settle, last_band_entry(t, v->data(), 1, v->back(), band));
  settled = settle < 0.5 * tstop;
  out.settle_s = settle;
  if (!settled) return {};

  // Energies at the settling time.
  const Signal* total = res.find("e(total)");
  if (!total)
    return Status::numerical("network transient: the engine gave no energies e(...) (power probes not available)");
  out.energy_j = interp(t, total->re.data(), 1, settle);
  std::fill(std::begin(out.energy_parts_j), std::end(out.energy_parts_j), 0.0);
  for (const Signal& s : res.signals) {
    if (s.name.size() < 4 || s.name.compare(0, 2, "e(") != 0 || s.name.compare(2, 5, "type:") == 0) continue;
    const int part = part_of(s.name.substr(2, s.name.size() - 3));
    if (part >= 0) out.energy_parts_j[part] += interp(t, s.re.data(), 1, settle);
  }

  // Classes: settled, and at the sampling times.
  std::vector<double> y(yv.size());
  for (size_t j = 0; j < yv.size(); ++j) y[j] = yv[j]->back();
  out.cls = class_of(hw, y);
  out.cls_at = classes_at(hw, t, yv, sample_times);
  for (size_t k = 0; k < t.size(); ++k) {
    for (size_t j = 0; j < yv.size(); ++j) y[j] = (*yv[j])[k];
    const int c = class_of(hw, y);
    if (out.class_v.empty() || c != out.class_v.back()) {
      out.class_t.push_back(t[k]);
      out.class_v.push_back(c);
    }
  }
  if (opt.keep_waveforms) {
    out.t = t;
    out.y.clear();
    for (const auto* v : yv) out.y.push_back(*v);
  }
  return {};
}

// An image's results as the doubles the MPI work loop moves between ranks, and back (waveforms are not moved).
std::vector<double> pack_image(const ImageTransient& im) {
  std::vector<double> v = {im.settle_s, im.tstop_s, im.energy_j, static_cast<double>(im.cls),
                           static_cast<double>(im.timepoints), im.seconds, static_cast<double>(im.class_t.size())};
  v.insert(v.end(), std::begin(im.energy_parts_j), std::end(im.energy_parts_j));
  v.insert(v.end(), im.class_t.begin(), im.class_t.end());
  v.insert(v.end(), im.class_v.begin(), im.class_v.end());
  return v;
}
ImageTransient unpack_image(const std::vector<double>& v) {
  ImageTransient im;
  im.settle_s = v[0];
  im.tstop_s = v[1];
  im.energy_j = v[2];
  im.cls = static_cast<int>(v[3]);
  im.timepoints = static_cast<long>(v[4]);
  im.seconds = v[5];
  const size_t nc = static_cast<size_t>(v[6]), p0 = 7 + kNumEnergyParts;
  std::copy(v.begin() + 7, v.begin() + p0, std::begin(im.energy_parts_j));
  im.class_t.assign(v.begin() + p0, v.begin() + p0 + nc);
  for (size_t i = 0; i < nc; ++i) im.class_v.push_back(static_cast<int>(v[p0 + nc + i]));
  return im;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size()))) - 1;
  return v[std::min(k, v.size() - 1)];
}

}  // namespace

const char* energy_part_name(int part) {
  static const char* names[kNumEnergyParts] = {"crossbar", "opamps", "activation", "dacs", "adcs", "other_resistors"};
  return part >= 0 && part < kNumEnergyParts ? names[part] : "?";
}

ComponentCounts component_counts(const HardwareInstance& hw) {
  ComponentCounts c;
  c.opamps = hw.map->opamps();
  for (size_t l = 0; l < hw.layers.size(); ++l) {
    const LayerMapping& m = hw.map->layers[l];
    const LayerInstance& li = hw.layers[l];
    for (const TileInstance& t : li.tiles) {
      c.cells += static_cast<long>(t.g.size());
      c.cells_open += std::count(t.g.begin(), t.g.end(), 0.0);
    }
    c.resistors += static_cast<long>(m.outputs) * (m.rectifier ? kNumPeripheryRes : 1);
    c.diodes += m.rectifier ? 2L * m.outputs : 0L;
    c.dacs += static_cast<long>(li.row_dacs.size());
    c.adcs += m.adc ? m.outputs : 0;
  }
  return c;
}

double default_tstop(const HardwareConfig& cfg, int layers) {
  double t = 100 * cfg.dac_tr;
  if (static_cast<int>(opamp_param(cfg, "level")) == 2) {
    const double gbw = opamp_param(cfg, "gbw"), sr = opamp_param(cfg, "sr") * 1e6;  // [Hz], [V/s]
    double vhi = 0, vlo = 0;
    opamp_swing(cfg, vhi, vlo);
    double per_layer = 0;
    if (gbw > 0) per_layer += 30 * 10 / (2 * M_PI * gbw);
    if (sr > 0) per_layer += 2 * (vhi - vlo) / sr;
    t = std::max(t, layers * per_layer);
  }
  return t;
}

Status image_transient(const HardwareInstance& hw, const LayerCodes& codes, const LayerCodes& from,
                       std::uint64_t sample, const TransientOptions& opt, const std::vector<double>& sample_times,
                       ImageTransient& out, const std::vector<LayerVoltages>* start, double first_tstop) {
  out = ImageTransient{};
  const double dflt = default_tstop(hw.map->cfg, static_cast<int>(hw.map->layers.size()));
  double tstop = opt.tstop > 0 ? opt.tstop : std::max(first_tstop, dflt);
  for (int tries = 0; tries <= 6; ++tries, tstop *= 2) {
    bool settled = false;
    if (Status st = run_once(hw, codes, from, sample, opt, tstop, sample_times, start, out, settled); !st) return st;
    if (settled) return {};
    if (opt.tstop > 0) break;
  }
  return Status::numerical(fmt::format("network transient of sample {}: the outputs have not settled by half of the "
                                       "run ({:.4g} s); give a longer tstop",
                                       sample, out.tstop_s));
}

double interp(const std::vector<double>& t, const double* y, size_t stride, double x) {
  const size_t n = t.size();
  if (x <= t.front()) return y[0];
  if (x >= t.back()) return y[(n - 1) * stride];
  const size_t k = static_cast<size_t>(std::upper_bound(t.begin(), t.end(), x) - t.begin());
  const double w = (x - t[k - 1]) / (t[k] - t[k - 1]);
  const double a = y[(k - 1) * stride], b = y[k * stride];
  return a + w * (b - a);
}

double band_entry(double ta, double ya, double t0, double y0, double t1, double y1) {
  const double hb = t1 - t0, db = (y1 - y0) / hb, da = (ya - y0) / (ta - t0);
  const double c2 = (db - da) / (hb - (ta - t0)), c1 = da - c2 * (ta - t0);  // y0 + c1 s + c2 s^2, s = t - t0
  const double linear = t0 + hb * y0 / (y0 - y1);
  if (!(c1 < 0 && c1 + 2 * c2 * hb < 0)) return linear;
  const double s = 2 * y0 / (-c1 + std::sqrt(std::max(0.0, c1 * c1 - 4 * c2 * y0)));  // the root in [0, hb]
  return s >= 0 && s <= hb ? t0 + s : linear;
}

double last_band_entry(const std::vector<double>& t, const double* y, size_t stride, double fin, double band) {
  const size_t n = t.size();
  if (n == 0) return 0;
  if (std::fabs(y[(n - 1) * stride] - fin) > band) return t.back();
  for (size_t q = n - 1; q-- > 0;) {
    const double vq = y[q * stride];
    if (std::fabs(vq - fin) <= band) continue;
    const double side = vq > fin ? 1.0 : -1.0;  // the distance beyond the band edge it enters through
    auto beyond = [&](size_t p) { return side * (y[p * stride] - fin) - band; };
    const double y1 = beyond(q + 1);  // <= 0: q + 1 is inside
    if (q == 0) return t[0] + (t[1] - t[0]) * beyond(0) / (beyond(0) - y1);
    return band_entry(t[q - 1], beyond(q - 1), t[q], beyond(q), t[q + 1], y1);
  }
  return 0;
}

int class_at_time(const ImageTransient& it, double ts) {
  if (it.class_t.empty()) return it.cls;
  const size_t k = static_cast<size_t>(std::upper_bound(it.class_t.begin(), it.class_t.end(), ts) - it.class_t.begin());
  return k == 0 ? it.class_v.front() : it.class_v[k - 1];
}

Status run_energy(const Mlp& net, const HardwareConfig& cfg, const MatrixRf& calib, const Dataset& test, int samples,
                  const TransientOptions& opt, EnergyReport& rep) {
  const auto t0 = Clock::now();
  rep = EnergyReport{};
  MappedNetwork map;
  if (Status st = map_network(net, cfg, calib, map); !st) return st;
  HardwareInstance hw;
  realize(map, cfg.seed, 0, hw);
  FastTransient ft;
  if (Status st = ft.prepare(hw); !st) return st;
  FastEvaluator& fe = ft.dc();
  const int n = samples > 0 ? std::min(samples, test.size()) : test.size();
  rep.samples = n;
  rep.components = component_counts(hw);
  for (size_t l = 0; l + 1 < map.sizes.size(); ++l) rep.macs += static_cast<long>(map.sizes[l]) * map.sizes[l + 1];
  // DAC codes of every image: the input's; in hybrid mode every layer's, from the DC path.
  std::vector<LayerCodes> codes(n);
  for (int k = 0; k < n; ++k) {
    if (cfg.mode == MappingMode::Analog) {
      codes[k].assign(map.layers.size(), {});
      codes[k][0] = input_codes(map.layers[0], test.images.row(k).data());
      continue;
    }
    std::vector<LayerVoltages> fv;
    if (Status st = fe.evaluate_one(test.images.row(k).data(), static_cast<std::uint64_t>(k), fv, &codes[k]); !st)
      return Status::numerical(fmt::format("sample {}: {}", k, st.errors[0].message));
  }
  // Images in chunks over the MPI ranks (engine/distribute.hpp; one rank without mpirun), each chunk's images in
  // parallel on the rank's threads; every rank ends with every image's result.
  const LayerCodes none;
  const std::vector<float> zeros(static_cast<size_t>(test.images.cols()), 0.0f);
  auto chunk = [&](const std::vector<long>& items, std::vector<std::vector<double>>& out) -> Status {
    const int m = static_cast<int>(items.size());
    std::vector<ImageTransient> ims(m);
    std::vector<Status> st(m);
    auto one = [&](int i) {  // the engine's transient of image items[i]
      const int k = static_cast<int>(items[i]);
      const LayerCodes& prev = k > 0 ? codes[k - 1] : none;
      // The engine's initial operating point starts from the fast DC path's state before the step: the previous
      // image's, or an all-zero input's for the reset state (input codes 0; hybrid layers' codes then come from
      // the DC path rather than the reset's 0, so it is a nearby guess there). A cold start if that fails.
      const bool step = opt.from_previous && k > 0;
      std::vector<LayerVoltages> start;
      const bool warm = fe.evaluate_one(step ? test.images.row(k - 1).data() : zeros.data(),
                                        static_cast<std::uint64_t>(step ? k - 1 : k), start).ok();
      // The first run long enough for the fast path's settling time of the image to lie in its first half (with a
      // margin): one run instead of up to three from default_tstop, doubled until the outputs settle in the first
      // half (the shipped network's images settle in 6-9 us against its 6.65 us). The engine's result does not
      // depend on the fast path beyond that length (and the largest step, tstop / opt.points, with it).
      double first = 0;
      ImageTransient fast;
      if (opt.tstop <= 0 && ft.run(codes[k], prev, static_cast<std::uint64_t>(k), opt, {}, fast).ok())
        first = kEngineRunMargin * fast.settle_s;
      st[i] = image_transient(hw, codes[k], prev, static_cast<std::uint64_t>(k), opt, {}, ims[i],
                              warm ? &start : nullptr, first);
    };
    if (opt.engine) {
      for (int i = 0; i < m; ++i) one(i);
    } else {
      // The chunk's images in one group per thread (consecutive images), each group through the SIMD lanes side by
      // side (FastTransient::run_block: a lane that finishes takes the group's next image).
      const int lanes = FastTransient::lanes();
      const int ngroups = std::max(1, std::min(omp_get_max_threads(), (m + lanes - 1) / lanes));
#pragma omp parallel for schedule(static, 1)
      for (int g = 0; g < ngroups; ++g) {
        const int i0 = static_cast<int>(static_cast<long>(m) * g / ngroups);
        const int i1 = static_cast<int>(static_cast<long>(m) * (g + 1) / ngroups);
        std::vector<FastTransient::Item> block;
        for (int i = i0; i < i1; ++i) {
          const int k = static_cast<int>(items[i]);
          block.push_back({&codes[k], k > 0 ? &codes[k - 1] : &none, static_cast<std::uint64_t>(k)});
        }
        std::vector<ImageTransient> outs;
        const std::vector<Status> bst = ft.run_block(block, opt, {}, outs);
        for (int i = i0; i < i1; ++i) {
          st[i] = bst[i - i0];
          ims[i] = std::move(outs[i - i0]);
        }
      }
    }
    out.assign(m, {});
    for (int i = 0; i < m; ++i) {
      if (!st[i]) return st[i];  // the lowest failing image of the chunk
      out[i] = pack_image(ims[i]);
    }
    return {};
  };
  dist::ItemTable table(n);  // [image] -> pack_image
  RunIdentity id;
  if (!opt.checkpoint.empty()) {
    id = opt.identity;
    id.add("command", "nn energy");
    id.add("arguments", fmt::format("samples={} from_previous={} tstop={} points={} engine={}", n,
                                    opt.from_previous ? 1 : 0, opt.tstop, opt.points, opt.engine ? 1 : 0));
    add_model_and_data(id, net, calib, test, n);
    id.add("version", binary_version());
    if (dist::is_root())
      if (Status st = load_checkpoint(opt.checkpoint, id, table, &rep.resumed); !st) return st;
  }
  auto after_round = [&](const dist::ItemTable& t) -> Status {
    return opt.checkpoint.empty() || !dist::is_root() ? Status{} : save_checkpoint(opt.checkpoint, id, t);
  };
  const int per_chunk = dist::chunk_size(n, opt.engine ? 1 : 16 * omp_get_max_threads());
  if (Status st = dist::run_items(table, per_chunk, chunk, after_round, "images"); !st) return st;
  rep.images.assign(n, ImageTransient{});
  for (int k = 0; k < n; ++k) rep.images[k] = unpack_image(table.values[k]);
  std::vector<double> lat, en;
  long right = 0;
  double latest = 0;
  for (int k = 0; k < n; ++k) {
    const ImageTransient& im = rep.images[k];
    rep.labels.push_back(test.labels[k]);
    right += im.cls == test.labels[k];
    lat.push_back(im.settle_s);
    en.push_back(im.energy_j);
    latest = std::max(latest, im.tstop_s);
    rep.latency_mean_s += im.settle_s / n;
    rep.energy_mean_j += im.energy_j / n;
    for (int p = 0; p < kNumEnergyParts; ++p) rep.energy_parts_mean_j[p] += im.energy_parts_j[p] / n;
  }
  rep.latency_p99_s = percentile(lat, 99);
  rep.energy_p99_j = percentile(en, 99);
  rep.accuracy = n > 0 ? static_cast<double>(right) / n : 0;
  // The sampling-time table: 20 times up to the largest settling time, and the longest run, where every image has
  // its final class (at the largest settling time an output can still be half an LSB from its final value: a near
  // tie may still flip).
  const double slowest = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());
  for (int i = 1; i <= 20 && slowest > 0; ++i) rep.sample_times_s.push_back(slowest * i / 20.0);
  if (latest > slowest) rep.sample_times_s.push_back(latest);
  for (double ts : rep.sample_times_s) {
    long ok = 0;
    for (int k = 0; k < n; ++k) ok += class_at_time(rep.images[k], ts) == test.labels[k];
    rep.accuracy_at.push_back(n > 0 ? static_cast<double>(ok) / n : 0);
  }
  // The earliest time from which on the accuracy stays within 0.1 points of the settled accuracy, exactly: the
  // accuracy only changes where an image's class does (its recorded changes, at the time points where they
  // appear), so walk those changes back from the end.
  std::vector<std::pair<double, long>> changes;  // (time [s], change of the number of right classes)
  for (int k = 0; k < n; ++k) {
    const ImageTransient& im = rep.images[k];
    for (size_t i = 1; i < im.class_v.size(); ++i) {
      const long d = long{im.class_v[i] == test.labels[k]} - long{im.class_v[i - 1] == test.labels[k]};
      if (d != 0) changes.emplace_back(im.class_t[i], d);
    }
  }
  std::sort(changes.begin(), changes.end());
  rep.shortest_sample_time_s = 0;
  long count = right;  // right classes after the change being looked at
  for (size_t i = changes.size(); i > 0;) {
    const double t = changes[i - 1].first;
    for (; i > 0 && changes[i - 1].first == t; --i) count -= changes[i - 1].second;  // (changes at the same time)
    if (std::fabs(static_cast<double>(count) / n - rep.accuracy) > 0.001 + 1e-12) {
      rep.shortest_sample_time_s = t;
      break;
    }
  }
  if (rep.latency_mean_s > 0) rep.tops = 2.0 * static_cast<double>(rep.macs) / rep.latency_mean_s / 1e12;
  if (rep.energy_mean_j > 0) rep.tops_per_w = 2.0 * static_cast<double>(rep.macs) / rep.energy_mean_j / 1e12;
  rep.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return {};
}

}  // namespace anasim::nn
