// Evaluation drivers (see evaluate.hpp): accuracy through the mapped circuit, the MNA reference comparison and
// Monte Carlo with sweeps.
#include "nn/evaluate.hpp"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>
#include <unordered_map>
#include <fmt/format.h>
#include "devices/dac.hpp"
#include "devices/registry.hpp"
#include "engine/circuit.hpp"
#include "engine/distribute.hpp"
#include "engine/newton.hpp"
#include "engine/hdf5_module.hpp"
#include "nn/model_io.hpp"
#include "nn/netlist_builder.hpp"

namespace anasim::nn {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double accuracy_of(const std::vector<int>& pred, const std::vector<int>& labels, int n) {
  long right = 0;
  for (int i = 0; i < n; ++i) right += pred[i] == labels[i];
  return n > 0 ? static_cast<double>(right) / n : 0.0;
}

}  // namespace

std::vector<std::pair<std::string, double>> periphery_node_voltages(const MappedNetwork& map,
                                                                    const std::vector<LayerVoltages>& fv) {
  std::vector<std::pair<std::string, double>> out;
  auto set = [&](std::string node, double v) { out.emplace_back(std::move(node), v); };
  for (size_t l = 0; l < map.layers.size(); ++l) {
    const LayerVoltages& v = fv[l];
    for (int j = 0; j < map.layers[l].outputs; ++j) {
      set(fmt::format("c{}_{}", l, j), v.c[j]);
      set(fmt::format("y{}_{}", l, j), v.y[j]);
      set(fmt::format("utia{}_{}#p", l, j), v.p[3 * j]);
      if (!map.layers[l].rectifier) continue;
      set(fmt::format("s{}_{}", l, j), v.s[j]);
      set(fmt::format("a{}_{}", l, j), v.a[j]);
      set(fmt::format("h{}_{}", l, j), v.h[j]);
      set(fmt::format("t{}_{}", l, j), v.t[j]);
      set(fmt::format("hn{}_{}", l, j), v.hn[j]);
      set(fmt::format("urect{}_{}#p", l, j), v.p[3 * j + 1]);
      set(fmt::format("uinv{}_{}#p", l, j), v.p[3 * j + 2]);
      if (!v.d1i.empty()) {
        set(fmt::format("d1{}_{}#internal", l, j), v.d1i[j]);
        set(fmt::format("d2{}_{}#internal", l, j), v.d2i[j]);
      }
    }
  }
  return out;
}

Status compare_reference(const HardwareInstance& hw, FastEvaluator& fast, const MatrixRf& x, int n,
                         ReferenceReport& rep, bool warm_start, const std::function<void(int)>& progress) {
  const MappedNetwork& map = *hw.map;
  rep = ReferenceReport{};
  rep.warm_start = warm_start;
  n = std::min<int>(n, static_cast<int>(x.rows()));
  FlatNetlist fn;
  NetlistNames names;
  Circuit circuit;
  std::unique_ptr<NewtonSolver> solver;
  std::vector<std::vector<Dac*>> dacs;
  std::vector<std::vector<Device*>> noise;
  std::unordered_map<std::string, int> node_id;
  const double swing = std::min(map.vhi, -map.vlo);
  double seconds = 0;
  std::vector<long> mna_codes;  // per sample, the last layer's ADC codes of the MNA solution
  for (int k = 0; k < n; ++k) {
    std::vector<LayerVoltages> fv;
    LayerCodes codes;
    if (Status st = fast.evaluate_one(x.row(k).data(), static_cast<std::uint64_t>(k), fv, &codes); !st)
      return Status::numerical(fmt::format("sample {}: {}", k, st.errors[0].message));
    if (k == 0) {
      if (Status st = build_netlist(hw, codes, 0, fn, names); !st) return st;
      if (Status st = circuit.build(fn, builtin_catalog()); !st) return st;
      solver = std::make_unique<NewtonSolver>(circuit, fn.options);
      rep.unknowns = circuit.n();
      const auto& cn = circuit.node_names();  // includes device-internal nodes ("utia0_3#p")
      for (size_t i = 0; i < cn.size(); ++i) node_id[cn[i]] = static_cast<int>(i);
      dacs.resize(map.layers.size());
      noise.resize(map.layers.size());
      for (size_t l = 0; l < map.layers.size(); ++l) {
        for (const auto& dn : names.dacs[l]) dacs[l].push_back(dynamic_cast<Dac*>(circuit.find_device(dn)));
        if (map.cfg.read_noise > 0)
          for (int j = 0; j < map.layers[l].outputs; ++j)
            noise[l].push_back(circuit.find_device(fmt::format("in{}_{}", l, j)));
      }
    } else {
      for (size_t l = 0; l < map.layers.size(); ++l) {
        const LayerMapping& m = map.layers[l];
        const int first = m.dac_rows ? 0 : m.physical_rows() - 2;
        for (size_t d = 0; d < dacs[l].size(); ++d) {
          const int i = (first + static_cast<int>(d)) / 2;
          if (i < m.inputs) dacs[l][d]->set_code(codes[l][i]);
        }
        for (int j = 0; j < static_cast<int>(noise[l].size()); ++j)
          noise[l][j]->set_dc(read_noise_current(hw, static_cast<int>(l), j, static_cast<std::uint64_t>(k)));
      }
    }
    const auto t0 = Clock::now();
    const long it0 = solver->newton_iterations();
    bool solved = false;
    if (warm_start) {
      std::vector<double>& xs = solver->x();
      auto set = [&](const std::string& node, double v) {
        const auto it = node_id.find(node);
        if (it == node_id.end() || !std::isfinite(v)) return;
        const UnknownIndex u = circuit.node_unknown(NodeId(it->second));
        if (!u.is_ground()) xs[u.v] = v;
      };
      for (const auto& [node, v] : periphery_node_voltages(map, fv)) set(node, v);
      solver->ctx().mode = LoadContext::Mode::Dc;
      solver->ctx().srcfact = 1.0;
      solved = solver->newton(fn.options.itl1, false).ok();
    }
    if (!solved)
      if (Status st = solver->operating_point(); !st)
        return Status::numerical(fmt::format("MNA reference, sample {}: {}", k, st.errors[0].message));
    rep.newton_iterations += solver->newton_iterations() - it0;
    seconds += since(t0);
    const std::vector<double>& xs = solver->x();
    auto volt = [&](const std::string& node) {
      const UnknownIndex u = circuit.node_unknown(NodeId(node_id.at(node)));
      return u.is_ground() ? 0.0 : xs[u.v];
    };
    bool saturated = false;
    auto cmp = [&](const std::vector<double>& f, const std::vector<std::string>& nodes) {
      for (size_t j = 0; j < nodes.size(); ++j) {
        const double r = volt(nodes[j]);
        const double d = std::fabs(f[j] - r);
        const double rel = d / std::max(std::fabs(r), 1e-3);
        rep.max_abs = std::max(rep.max_abs, d);
        if (rel > rep.max_rel || rep.worst.empty()) {
          if (rel >= rep.max_rel) rep.worst = fmt::format("{} (sample {}: fast {:.12g} V, MNA {:.12g} V)", nodes[j], k,
                                                          f[j], r);
          rep.max_rel = std::max(rep.max_rel, rel);
        }
        if (std::fabs(r) > 0.98 * swing) saturated = true;
      }
    };
    for (size_t l = 0; l < map.layers.size(); ++l) {
      cmp(fv[l].y, names.tia_out[l]);
      cmp(fv[l].h, names.rect_out[l]);
      cmp(fv[l].hn, names.inv_out[l]);
    }
    rep.saturated += saturated;
    // Hybrid: the codes the MNA voltages give must be those the fast path passed on.
    for (size_t l = 0; l + 1 < map.layers.size(); ++l) {
      if (!map.layers[l + 1].dac_rows) continue;
      const LayerMapping& nm = map.layers[l + 1];
      bool same = true;
      for (int j = 0; j < map.layers[l].outputs; ++j) {
        const long code = adc_code(hw, static_cast<int>(l), j, volt(names.tia_out[l][j]));
        same = same && relu_code(map.layers[l], nm, code) == codes[l + 1][j];
      }
      rep.code_mismatches += !same;
    }
    // The last layer's codes from the MNA voltages, for the batched path's check below.
    const size_t last = map.layers.size() - 1;
    for (int j = 0; j < map.layers[last].outputs; ++j)
      mna_codes.push_back(adc_code(hw, static_cast<int>(last), j, volt(names.tia_out[last][j])));
    rep.samples = k + 1;
    if (progress) progress(k + 1);
  }
  rep.seconds_per_sample = n > 0 ? seconds / n : 0.0;
  // classify() (the batched path that gives the accuracies: images side by side, FastOptions::batch) must give the
  // MNA's last-layer codes too: a sample whose codes differ counts as a mismatch.
  if (n > 0) {
    std::vector<int> cls;
    std::vector<long> fast_codes;
    if (Status st = fast.classify(x, 0, n, 0, cls, &fast_codes); !st) return st;
    const size_t outs = static_cast<size_t>(map.layers.back().outputs);
    for (int k = 0; k < n; ++k)
      rep.code_mismatches += !std::equal(fast_codes.begin() + k * outs, fast_codes.begin() + (k + 1) * outs,
                                         mna_codes.begin() + k * outs);
  }
  return {};
}

Status run_eval(const Mlp& net, const HardwareConfig& cfg, const MatrixRf& calib, const Dataset& test, int samples,
                int reference, EvalReport& rep, bool warm_reference) {
  rep = EvalReport{};
  MappedNetwork map;
  if (Status st = map_network(net, cfg, calib, map); !st) return st;
  rep.opamps = map.opamps();
  rep.program = map.program;
  HardwareInstance hw;
  realize(map, cfg.seed, 0, hw);
  const int n = samples > 0 ? std::min(samples, test.size()) : test.size();
  rep.samples = n;
  const auto t0 = Clock::now();
  FastEvaluator fe;
  if (Status st = fe.prepare(hw); !st) return st;
  std::vector<int> analog;
  if (Status st = fe.classify(test.images, 0, n, 0, analog); !st) return st;
  rep.seconds = since(t0);
  rep.stats = fe.stats();
  rep.seconds_prepare = rep.stats.seconds_prepare;
  const std::vector<int> digital = predict(net, test.images.topRows(n));
  rep.digital_accuracy = accuracy_of(digital, test.labels, n);
  rep.analog_accuracy = accuracy_of(analog, test.labels, n);
  long same = 0;
  for (int i = 0; i < n; ++i) same += digital[i] == analog[i];
  rep.agreement = n > 0 ? static_cast<double>(same) / n : 0.0;
  rep.digital_class.assign(digital.begin(), digital.begin() + n);
  rep.analog_class.assign(analog.begin(), analog.begin() + std::min<std::size_t>(analog.size(), n));
  if (rep.stats.failures > 0)
    return Status::numerical(fmt::format("the fast evaluator did not converge on {} of {} images",
                                         rep.stats.failures, n));
  if (reference > 0) {
    rep.has_reference = true;
    if (Status st = compare_reference(hw, fe, test.images, reference, rep.reference, warm_reference); !st) return st;
  }
  return {};
}

Status load_eval_setup(const std::string& model, bool keras, DatasetKind kind, const std::string& data_dir,
                       EvalSetup& s) {
  Status ld = keras ? import_keras(model, s.net) : load_model(model, s.net, nullptr);
  if (!ld) return ld;
  if (Status st = find_data_dir(kind, data_dir, false, s.dir); !st) return st;
  if (Status st = load_split(s.dir, Split::Test, s.test); !st) return st;
  if (s.test.images.cols() != s.net.inputs())
    return Status::input(fmt::format("{}: the model has {} inputs, the images {} pixels", model, s.net.inputs(),
                                     s.test.images.cols()));
  if (s.net.outputs() < 10)
    return Status::input(fmt::format("{}: the model has {} outputs, {} has 10 classes", model, s.net.outputs(),
                                     dataset_name(kind)));
  std::string ti, tl;
  s.train = Dataset{};
  if (!split_files(s.dir, Split::Train, ti, tl).ok()) {  // no training files: calibrate on the test images
    ld.warnings.push_back(fmt::format("no training images in {}; calibrating on the test images", s.dir));
    return ld;
  }
  if (Status st = load_split(s.dir, Split::Train, s.train); !st) return st;  // present but unreadable: an error
  return ld;
}

Status parse_mc_sweep(const std::string& text, const HardwareConfig& cfg, McOptions& opt) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size())
    return Status::input(fmt::format("a sweep is PARAM=v1,v2,..., got '{}'", text));
  opt.sweep_param = text.substr(0, eq);
  opt.sweep_values.clear();
  const std::string rest = text.substr(eq + 1);
  for (size_t p = 0; p <= rest.size();) {
    const size_t q = std::min(rest.find(',', p), rest.size());
    if (q > p) opt.sweep_values.push_back(rest.substr(p, q - p));
    p = q + 1;
  }
  if (opt.sweep_values.empty()) return Status::input(fmt::format("the sweep '{}' lists no values", text));
  HardwareConfig probe = cfg;
  for (const auto& v : opt.sweep_values)
    if (Status st = set_hardware_param(probe, opt.sweep_param, v); !st) return st;
  return {};
}

void add_model_and_data(RunIdentity& id, const Mlp& net, const MatrixRf& calib, const Dataset& test, int n) {
  std::string w;
  for (const auto& l : net.layers) {
    w.append(reinterpret_cast<const char*>(l.weight.data()), l.weight.size() * sizeof(*l.weight.data()));
    w.append(reinterpret_cast<const char*>(l.bias.data()), l.bias.size() * sizeof(*l.bias.data()));
  }
  id.add("model", fmt::format("{} weights, {}", fmt::join(net.sizes(), "-"), bytes_digest(w.data(), w.size())));
  std::string d(reinterpret_cast<const char*>(test.images.data()),
                static_cast<size_t>(n) * test.images.cols() * sizeof(float));
  d.append(reinterpret_cast<const char*>(test.labels.data()), static_cast<size_t>(n) * sizeof(int));
  d.append(reinterpret_cast<const char*>(calib.data()), calib.size() * sizeof(float));
  id.add("data", fmt::format("{} test images, {} calibration images, {}", n, calib.rows(),
                             bytes_digest(d.data(), d.size())));
}

namespace {

// The parts of run_mc's checkpoint identity that it knows itself: arguments, model weights, images, version.
RunIdentity mc_identity(const Mlp& net, const MatrixRf& calib, const Dataset& test, int n, const McOptions& opt) {
  RunIdentity id = opt.identity;
  id.add("command", "nn mc");
  id.add("arguments", fmt::format("trials={} seed={} samples={} sweep={}", opt.trials, opt.seed, n,
                                  opt.sweep_param.empty() ? "none"
                                                          : opt.sweep_param + "=" + fmt::format("{}", fmt::join(opt.sweep_values, ","))));
  add_model_and_data(id, net, calib, test, n);
  id.add("version", binary_version());
  return id;
}

// Mean, sample standard deviation, minimum and 5th percentile of a point's accuracies.
void point_statistics(McPoint& pt) {
  const auto& a = pt.accuracy;
  const double m = a.empty() ? 0 : std::accumulate(a.begin(), a.end(), 0.0) / a.size();
  double var = 0;
  for (double q : a) var += (q - m) * (q - m);
  pt.mean = m;
  pt.std = a.size() > 1 ? std::sqrt(var / (a.size() - 1)) : 0.0;
  std::vector<double> s = a;
  std::sort(s.begin(), s.end());
  pt.min = s.empty() ? 0 : s.front();
  // 5th percentile, linear interpolation between order statistics.
  if (!s.empty()) {
    const double pos = 0.05 * static_cast<double>(s.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, s.size() - 1);
    pt.p5 = s[lo] + (pos - static_cast<double>(lo)) * (s[hi] - s[lo]);
  }
}

}  // namespace

Status run_mc(const Mlp& net, const HardwareConfig& cfg, const MatrixRf& calib, const Dataset& test,
              const McOptions& opt, McReport& rep) {
  rep = McReport{};
  const auto t0 = Clock::now();
  const int n = opt.samples > 0 ? std::min(opt.samples, test.size()) : test.size();
  rep.samples = n;
  rep.digital_accuracy = accuracy_of(predict(net, test.images.topRows(n)), test.labels, n);
  std::vector<std::string> values = opt.sweep_values;
  if (opt.sweep_param.empty()) values = {""};
  const long total = static_cast<long>(values.size()) * opt.trials;  // item = point * trials + trial
  dist::ItemTable table(total);                                        // [item] -> {accuracy}
  RunIdentity id;
  if (!opt.checkpoint.empty()) {
    id = mc_identity(net, calib, test, n, opt);
    if (dist::is_root())
      if (Status st = load_checkpoint(opt.checkpoint, id, table, &rep.resumed); !st) return st;
  }
  FastEvaluator fe;
  MappedNetwork map;
  long mapped = -1;  // the sweep point `map` is for
  // Maps sweep point p: its targets (compensated with program: compensated) before any trial's draw.
  std::vector<std::vector<LayerProgram>> programs(values.size());
  std::vector<char> have_program(values.size(), 0);
  auto map_point = [&](size_t p) -> Status {
    HardwareConfig c = cfg;
    if (!opt.sweep_param.empty())
      if (Status st = set_hardware_param(c, opt.sweep_param, values[p]); !st) return st;
    mapped = -1;
    if (Status st = map_network(net, c, calib, map); !st) return st;
    mapped = static_cast<long>(p);
    programs[p] = map.program;
    have_program[p] = 1;
    return {};
  };
  auto compute = [&](const std::vector<long>& items, std::vector<std::vector<double>>& out) -> Status {
    for (size_t k = 0; k < items.size(); ++k) {
      const long p = items[k] / opt.trials;
      const int t = static_cast<int>(items[k] % opt.trials);
      const std::string& v = values[p];
      if (p != mapped)
        if (Status st = map_point(static_cast<size_t>(p)); !st) return st;
      HardwareInstance hw;
      realize(map, opt.seed, t, hw);
      if (Status st = fe.prepare(hw); !st) return st;
      std::vector<int> cls;
      fe.reset_stats();
      if (Status st = fe.classify(test.images, 0, n, 0, cls); !st) return st;
      if (fe.stats().failures > 0)
        return Status::numerical(fmt::format("trial {}{}: the fast evaluator did not converge on {} images", t,
                                             v.empty() ? "" : fmt::format(" ({}={})", opt.sweep_param, v),
                                             fe.stats().failures));
      out[k] = {accuracy_of(cls, test.labels, n)};
    }
    return {};
  };
  auto after_round = [&](const dist::ItemTable& t) -> Status {
    return opt.checkpoint.empty() || !dist::is_root() ? Status{} : save_checkpoint(opt.checkpoint, id, t);
  };
  if (Status st = dist::run_items(table, 1, compute, after_round, "trials"); !st) return st;
  for (size_t p = 0; p < values.size(); ++p) {
    // The programming report of a compensated point whose trials all ran on other ranks or came from the
    // checkpoint: the same deterministic mapping again.
    if (!have_program[p]) {
      HardwareConfig c = cfg;
      if (!opt.sweep_param.empty())
        if (Status st = set_hardware_param(c, opt.sweep_param, values[p]); !st) return st;
      if (c.program == ProgramMode::Compensated)
        if (Status st = map_point(p); !st) return st;
    }
    McPoint pt;
    pt.param = opt.sweep_param;
    pt.value = values[p];
    pt.program = programs[p];
    for (int t = 0; t < opt.trials; ++t) pt.accuracy.push_back(table.values[p * opt.trials + t].at(0));
    point_statistics(pt);
    rep.points.push_back(std::move(pt));
  }
  rep.seconds = since(t0);
  rep.seconds_per_trial = total > 0 ? rep.seconds / total : 0.0;
  for (McPoint& pt : rep.points) pt.seconds = rep.seconds / static_cast<double>(rep.points.size());
  return {};
}

Status write_mc_hdf5(const std::string& path, const McReport& rep, const McOptions& opt) {
  using Write = void(const std::string&, const McReport&, const McOptions&, Status*);
  return hdf5::call<Write>("anasim_hdf5_write_mc", path, rep, opt);
}

}  // namespace anasim::nn
