// Neural-network bindings: MNIST/IDX and model files, hardware configs (YAML file plus keyword overrides), a
// network mapped onto hardware (nn::map_network + realize + FastEvaluator, as `anasim nn eval` does), per-layer
// probes and crossbar maps of one image, and the Monte Carlo driver of `anasim nn mc`. Arrays cross as NumPy.
#include <algorithm>
#include <memory>
#include "devices/registry.hpp"
#include "engine/simulate.hpp"
#include "nn/dataset.hpp"
#include "nn/energy.hpp"
#include "nn/evaluate.hpp"
#include "nn/fast_eval.hpp"
#include "nn/hardware.hpp"
#include "nn/idx.hpp"
#include "nn/model_io.hpp"
#include "nn/netlist_builder.hpp"
#include "python/src/bindings.hpp"

namespace anasim::py_bind {

namespace {

using namespace anasim::nn;
using Layers = std::vector<std::pair<py::array_t<double, py::array::c_style | py::array::forcecast>,
                                     py::array_t<double, py::array::c_style | py::array::forcecast>>>;
using ImagesF = py::array_t<float, py::array::c_style | py::array::forcecast>;
using Overrides = std::vector<std::pair<std::string, std::string>>;

// (weight outputs x inputs, bias outputs) pairs -> Mlp, validated (shapes chain, values finite).
Mlp mlp_from(const Layers& layers) {
  Mlp net;
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto& w = layers[l].first;
    const auto& b = layers[l].second;
    if (w.ndim() != 2 || b.ndim() != 1)
      raise_if_failed(Status::input("layer " + std::to_string(l) + ": weight must be 2-D and bias 1-D"));
    DenseLayer d;
    d.weight = Eigen::Map<const MatrixRd>(w.data(), w.shape(0), w.shape(1));
    d.bias = Eigen::Map<const Eigen::VectorXd>(b.data(), b.shape(0));
    net.layers.push_back(std::move(d));
  }
  raise_if_failed(validate(net));
  return net;
}

// An images array (count x pixels, or count x rows x cols) -> MatrixRf, one image per row; at most `max_rows`
// of them (the calibration uses only the first calib_samples).
MatrixRf images_from(const ImagesF& x, py::ssize_t max_rows = -1) {
  if (x.ndim() < 1 || x.ndim() > 3) raise_if_failed(Status::input("images must be a 1-, 2- or 3-D array"));
  const py::ssize_t n = x.ndim() == 1 ? 1 : x.shape(0);
  py::ssize_t p = 1;
  for (py::ssize_t k = x.ndim() == 1 ? 0 : 1; k < x.ndim(); ++k) p *= x.shape(k);
  return Eigen::Map<const MatrixRf>(x.data(), max_rows >= 0 ? std::min(n, max_rows) : n, p);
}

// Input errors for no images, images (one per row) whose pixel count is not the network's input count, or
// non-finite pixels (a NaN's DAC code is undefined). `what`: "images" or "calibration images".
void check_pixels(const MatrixRf& x, int inputs, const std::string& what) {
  if (x.rows() == 0) raise_if_failed(Status::input("no " + what + " given"));
  if (x.cols() != inputs)
    raise_if_failed(Status::input(what + " have " + std::to_string(x.cols()) + " pixels, the network " +
                                  std::to_string(inputs) + " inputs"));
  if (!x.allFinite()) raise_if_failed(Status::input(what + " contain NaN or infinite pixels"));
}

// Defaults, then the YAML file (if any), then the overrides in order ("opamp.model", "sigma_g", ...).
HardwareConfig config_from(const std::string& path, const Overrides& overrides) {
  SourceScope scope;  // the configuration's text is freed once read (errors are formatted before)
  HardwareConfig cfg = default_hardware_config();
  if (!path.empty()) raise_if_failed(load_hardware_config(path, cfg));
  for (const auto& [name, value] : overrides) raise_if_failed(set_hardware_param(cfg, name, value));
  return cfg;
}

// Moves the images into a NumPy array that owns them (no copy: the training split is 188 MB).
py::array_t<float> images_to_array(MatrixRf&& m, int rows, int cols) {
  auto* owned = new MatrixRf(std::move(m));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<MatrixRf*>(p); });
  return py::array_t<float>({static_cast<py::ssize_t>(owned->rows()), static_cast<py::ssize_t>(rows),
                             static_cast<py::ssize_t>(cols)},
                            owned->data(), free_when_done);
}

template <class T, class V>
py::array_t<T> vec_array(const V& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

// A network mapped onto hardware, trial 0 of the config's seed drawn and the fast evaluator prepared: the state
// `anasim nn eval` evaluates. Holds its own copies of everything (the evaluator keeps pointers into map_/hw_).
class Accelerator {
 public:
  Accelerator(const Layers& layers, const std::string& config, const Overrides& overrides, const ImagesF& calib)
      : net_(mlp_from(layers)), cfg_(config_from(config, overrides)) {
    const MatrixRf cal = images_from(calib, cfg_.calib_samples);
    check_pixels(cal, net_.inputs(), "calibration images");
    raise_if_failed(without_gil([&]() -> Status {
      if (Status st = map_network(net_, cfg_, cal, map_); !st) return st;
      realize(map_, cfg_.seed, 0, hw_);
      return fe_.prepare(hw_);
    }));
  }

  // Classes, last-layer ADC codes and (with outputs) last-layer TIA output voltages of every image; the float
  // network's classes as the digital reference.
  py::dict evaluate(const ImagesF& images, bool outputs) {
    const MatrixRf x = check_images(images);
    const int n = static_cast<int>(x.rows()), outs = net_.outputs();
    std::vector<int> analog, digital;
    std::vector<long> codes;
    std::vector<double> y;
    raise_if_failed(without_gil([&]() -> Status {
      fe_.reset_stats();
      if (Status st = fe_.classify(x, 0, n, 0, analog, &codes); !st) return st;
      if (fe_.stats().failures > 0)
        return Status::numerical("the fast evaluator did not converge on " + std::to_string(fe_.stats().failures) +
                                 " of " + std::to_string(n) + " images");
      digital = predict(net_, x);
      if (outputs) {
        y.reserve(static_cast<size_t>(n) * outs);
        std::vector<LayerVoltages> v;
        for (int i = 0; i < n; ++i) {
          if (Status st = fe_.evaluate_one(x.row(i).data(), static_cast<std::uint64_t>(i), v); !st) return st;
          y.insert(y.end(), v.back().y.begin(), v.back().y.end());
        }
      }
      return {};
    }));
    py::dict d;
    d["classes"] = vec_array<int>(analog);
    d["digital"] = vec_array<int>(digital);
    d["codes"] = vec_array<long>(codes).reshape({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(outs)});
    if (outputs)
      d["outputs"] = vec_array<double>(y).reshape({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(outs)});
    return d;
  }

  // Every layer's periphery voltages for one image (sample number `sample` selects the read-noise draw), with the
  // nominal gain y / z (TIA output per unit of pre-activation) and the row voltage per unit of input.
  py::dict probe(const ImagesF& image, long sample) {
    const MatrixRf x = check_images(image);
    std::vector<LayerVoltages> v;
    LayerCodes dac;
    raise_if_failed(without_gil([&] {
      return fe_.evaluate_one(x.row(0).data(), static_cast<std::uint64_t>(sample), v, &dac);
    }));
    py::list layers;
    for (size_t l = 0; l < v.size(); ++l) {
      const LayerMapping& lm = map_.layers[l];
      py::dict d;
      d["c"] = to_array(v[l].c);
      d["y"] = to_array(v[l].y);
      d["h"] = to_array(v[l].h);
      d["hn"] = to_array(v[l].hn);
      d["gain"] = lm.polarity * lm.rf * lm.scale * lm.v_unit;
      d["v_unit"] = lm.v_unit;
      d["rectifier"] = lm.rectifier;
      d["adc"] = lm.adc;
      if (lm.adc) {
        std::vector<long> codes;
        for (size_t j = 0; j < v[l].y.size(); ++j) codes.push_back(adc_code(hw_, static_cast<int>(l),
                                                                            static_cast<int>(j), v[l].y[j]));
        d["codes"] = vec_array<long>(codes);
      }
      layers.append(d);
    }
    py::dict out;
    out["layers"] = layers;
    out["mode"] = mode_name(cfg_.mode);
    return out;
  }

  // Tile `tile` of layer `layer`: programmed and target conductances [S] (rows x cols); with ir_drop, the
  // operating point of the full circuit for one image (build_netlist + the MNA engine, as `nn eval
  // --reference`) and the voltages at both ends of every cell of the tile [V] (rows x cols).
  py::dict crossbar(int layer, int tile, const ImagesF& image, long sample, bool ir_drop) {
    if (layer < 0 || layer >= static_cast<int>(hw_.layers.size()))
      raise_if_failed(Status::input("layer must lie in 0.." + std::to_string(hw_.layers.size() - 1)));
    const auto& tiles = hw_.layers[layer].tiles;
    if (tile < 0 || tile >= static_cast<int>(tiles.size()))
      raise_if_failed(Status::input("tile must lie in 0.." + std::to_string(tiles.size() - 1)));
    const TileInstance& t = tiles[tile];
    const int R = t.spec.rows, C = t.spec.cols;
    py::dict d;
    d["name"] = t.name;
    d["row0"] = t.row0;
    d["col0"] = t.col0;
    d["g"] = to_array(t.g).reshape({R, C});
    d["g_target"] = to_array(t.spec.g).reshape({R, C});
    if (!ir_drop) return d;
    const MatrixRf x = check_images(image);
    std::vector<double> vr(static_cast<size_t>(R) * C), vc(vr.size());
    raise_if_failed(without_gil([&]() -> Status {
      std::vector<LayerVoltages> v;
      LayerCodes codes;
      if (Status st = fe_.evaluate_one(x.row(0).data(), static_cast<std::uint64_t>(sample), v, &codes); !st)
        return st;
      HardwareInstance probed = hw_;  // same draws; only the chosen tile's internal nodes are written out
      probed.layers[layer].tiles[tile].spec.probe_nodes = true;
      FlatNetlist fn;
      NetlistNames names;
      if (Status st = build_netlist(probed, codes, static_cast<std::uint64_t>(sample), fn, names); !st) return st;
      RunResults r;
      if (Status st = simulate(fn, builtin_catalog(), r); !st) return st;
      if (r.analyses.empty()) return Status::fail(ErrorKind::Other, "the circuit has no operating point analysis");
      return tile_voltages(r.analyses[0], t, vr, vc);
    }));
    d["v_row"] = to_array(vr).reshape({R, C});
    d["v_col"] = to_array(vc).reshape({R, C});
    return d;
  }

  py::dict info() const {
    py::dict d;
    d["sizes"] = map_.sizes;
    d["opamps"] = map_.opamps();
    d["mode"] = mode_name(cfg_.mode);
    py::list tiles;
    for (const auto& li : hw_.layers) {
      py::list names;
      for (const auto& t : li.tiles) names.append(py::make_tuple(t.name, t.spec.rows, t.spec.cols));
      tiles.append(names);
    }
    d["tiles"] = tiles;
    d["vhi"] = map_.vhi;
    d["vlo"] = map_.vlo;
    return d;
  }

 private:
  MatrixRf check_images(const ImagesF& images) const {
    MatrixRf x = images_from(images);
    check_pixels(x, net_.inputs(), "images");
    return x;
  }

  // Cell-end voltages of tile t from the operating point: the tile's internal nodes "<tile>#r<i>_<j>" and
  // "<tile>#c<i>_<j>" (per line "<tile>#r<i>" / "<tile>#c<j>" when the line has no wire resistance). A line
  // without any resistance has its cells on the pin; the map needs internal nodes, so that is an Input error.
  static Status tile_voltages(const AnalysisResult& op, const TileInstance& t, std::vector<double>& vr,
                              std::vector<double>& vc) {
    const int R = t.spec.rows, C = t.spec.cols;
    const CrossbarTopology topo(t.spec);
    if (topo.row_line() == CrossbarTopology::Line::Pin || topo.col_line() == CrossbarTopology::Line::Pin)
      return Status::input("the IR-drop map needs wire, driver or sink resistance (rwire, rdriver, rsink > 0)");
    auto voltage = [&](int k, double& out) -> Status {
      char kind;
      int a, b;
      topo.label(k, kind, a, b);
      const std::string node = t.name + "#" + kind + std::to_string(a) + (b >= 0 ? "_" + std::to_string(b) : "");
      const Signal* s = op.find("v(" + node + ")");
      if (!s || s->re.empty()) return Status::fail(ErrorKind::Other, "no voltage for node '" + node + "'");
      out = s->re[0];
      return {};
    };
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) {
        const size_t k = static_cast<size_t>(i) * C + j;
        if (Status st = voltage(topo.row_node(i, j), vr[k]); !st) return st;
        if (Status st = voltage(topo.col_node(i, j), vc[k]); !st) return st;
      }
    return {};
  }

  Mlp net_;
  HardwareConfig cfg_;
  MappedNetwork map_;
  HardwareInstance hw_;
  FastEvaluator fe_;
};

Layers layers_of(const Mlp& net) {
  Layers out;
  for (const auto& l : net.layers) {
    py::array_t<double> w({l.weight.rows(), l.weight.cols()});
    std::copy(l.weight.data(), l.weight.data() + l.weight.size(), w.mutable_data());
    py::array_t<double> b(l.bias.size());
    std::copy(l.bias.data(), l.bias.data() + l.bias.size(), b.mutable_data());
    out.emplace_back(w, b);
  }
  return out;
}

// `anasim nn mc`: accuracy per trial and sweep point (fractions), with the summary statistics per point.
// A labelled test set from NumPy images (checked against the network's inputs) and labels.
Dataset test_set(const ImagesF& images, const std::vector<int>& labels, const Mlp& net) {
  Dataset test;
  test.images = images_from(images);
  test.labels = labels;
  if (static_cast<long>(labels.size()) != test.images.rows())
    raise_if_failed(Status::input("labels and images differ in count"));
  check_pixels(test.images, net.inputs(), "images");
  return test;
}

// `anasim nn energy` over a batch (nn/energy.hpp run_energy): per-image arrays and the summary.
py::dict energy(const Layers& layers, const std::string& config, const Overrides& overrides, const ImagesF& images,
                const std::vector<int>& labels, const ImagesF& calib, bool from_previous, double tstop, bool engine) {
  const Mlp net = mlp_from(layers);
  const HardwareConfig cfg = config_from(config, overrides);
  const Dataset test = test_set(images, labels, net);
  const MatrixRf cal = images_from(calib, cfg.calib_samples);
  check_pixels(cal, net.inputs(), "calibration images");
  if (!(tstop >= 0)) raise_if_failed(Status::input("tstop must be >= 0 (0 = automatic)"));
  TransientOptions opt;
  opt.from_previous = from_previous;
  opt.tstop = tstop;
  opt.engine = engine;
  EnergyReport rep;
  raise_if_failed(without_gil([&] { return run_energy(net, cfg, cal, test, 0, opt, rep); }));
  std::vector<double> latency, energy_j, points;
  std::vector<long> classes;
  std::vector<std::vector<double>> parts(kNumEnergyParts);
  for (const ImageTransient& im : rep.images) {
    latency.push_back(im.settle_s);
    energy_j.push_back(im.energy_j);
    points.push_back(static_cast<double>(im.timepoints));
    classes.push_back(im.cls);
    for (int p = 0; p < kNumEnergyParts; ++p) parts[p].push_back(im.energy_parts_j[p]);
  }
  py::dict by_part, mean_part;
  for (int p = 0; p < kNumEnergyParts; ++p) {
    by_part[energy_part_name(p)] = to_array(parts[p]);
    mean_part[energy_part_name(p)] = rep.energy_parts_mean_j[p];
  }
  py::dict d;
  d["latency"] = to_array(latency);
  d["energy"] = to_array(energy_j);
  d["energy_parts"] = by_part;
  d["classes"] = to_array(std::vector<double>(classes.begin(), classes.end()));
  d["timepoints"] = to_array(points);
  d["accuracy"] = rep.accuracy;
  d["latency_mean"] = rep.latency_mean_s;
  d["latency_p99"] = rep.latency_p99_s;
  d["energy_mean"] = rep.energy_mean_j;
  d["energy_p99"] = rep.energy_p99_j;
  d["energy_breakdown"] = mean_part;
  d["macs"] = rep.macs;
  d["tops"] = rep.tops;
  d["tops_per_w"] = rep.tops_per_w;
  d["sample_times"] = to_array(rep.sample_times_s);
  d["accuracy_at"] = to_array(rep.accuracy_at);
  d["shortest_sample_time"] = rep.shortest_sample_time_s;
  d["seconds"] = rep.seconds;
  return d;
}

// Compensated programming's report (program: compensated), one dict per layer; empty with program: ideal.
py::list program_list(const std::vector<LayerProgram>& program) {
  py::list out;
  for (const LayerProgram& p : program) {
    py::dict d;
    d["residual"] = p.residual;
    d["residual_out"] = p.residual_out;
    d["scale_factor"] = p.scale_factor;
    d["port_solves"] = p.iterations;
    d["seconds"] = p.seconds;
    out.append(d);
  }
  return out;
}

py::dict monte_carlo(const Layers& layers, const std::string& config, const Overrides& overrides,
                     const ImagesF& images, const std::vector<int>& labels, const ImagesF& calib, int trials,
                     unsigned long long seed, const std::string& sweep) {
  const Mlp net = mlp_from(layers);
  const HardwareConfig cfg = config_from(config, overrides);
  const Dataset test = test_set(images, labels, net);
  const MatrixRf cal = images_from(calib);  // whole: a sweep may raise calib_samples
  check_pixels(cal, net.inputs(), "calibration images");
  McOptions opt;
  opt.trials = trials;
  opt.seed = seed;
  if (trials < 1) raise_if_failed(Status::input("trials must be at least 1"));
  if (!sweep.empty()) raise_if_failed(parse_mc_sweep(sweep, cfg, opt));
  McReport rep;
  raise_if_failed(without_gil([&] { return run_mc(net, cfg, cal, test, opt, rep); }));
  const py::ssize_t np = static_cast<py::ssize_t>(rep.points.size());
  py::array_t<double> acc({np, static_cast<py::ssize_t>(trials)});
  std::vector<std::string> values;
  std::vector<double> mean, std, min, p5;
  py::list program;  // per point: the compensated targets' report (before every trial's draw)
  for (py::ssize_t p = 0; p < np; ++p) {
    const McPoint& pt = rep.points[p];
    program.append(program_list(pt.program));
    std::copy(pt.accuracy.begin(), pt.accuracy.end(), acc.mutable_data() + p * trials);
    values.push_back(pt.value);
    mean.push_back(pt.mean);
    std.push_back(pt.std);
    min.push_back(pt.min);
    p5.push_back(pt.p5);
  }
  py::dict d;
  d["accuracy"] = acc;
  d["param"] = opt.sweep_param;
  d["values"] = values;
  d["mean"] = to_array(mean);
  d["std"] = to_array(std);
  d["min"] = to_array(min);
  d["p5"] = to_array(p5);
  d["program"] = program;
  d["digital_accuracy"] = rep.digital_accuracy;
  d["samples"] = rep.samples;
  d["seconds"] = rep.seconds;
  return d;
}

}  // namespace

void bind_networks(py::module_& m) {
  m.def(
      "load_mnist",
      [](const std::string& split, const std::string& data_dir, const std::string& dataset) {
        DatasetKind kind;
        raise_if_failed(parse_dataset_kind(dataset, kind));
        if (split != "train" && split != "test") raise_if_failed(Status::input("split must be 'train' or 'test'"));
        Dataset ds;
        std::string dir;
        raise_if_failed(without_gil([&]() -> Status {
          if (Status st = find_data_dir(kind, data_dir, split == "train", dir); !st) return st;
          return load_split(dir, split == "train" ? Split::Train : Split::Test, ds);
        }));
        return py::make_tuple(images_to_array(std::move(ds.images), ds.rows, ds.cols), vec_array<int>(ds.labels), dir);
      },
      py::arg("split"), py::arg("data_dir"), py::arg("dataset"),
      "(images float32 N x rows x cols in [0, 1], labels int32, directory) of one split, looked up as the "
      "command line does: data_dir, else $ANASIM_DATA, else the default places (../shared/mnist, ...).");
  m.def(
      "read_idx_images",
      [](const std::string& path) {
        IdxImages im;
        raise_if_failed(without_gil([&] { return read_idx_images(path, im); }));
        py::array_t<float> a({im.count, im.rows, im.cols});
        std::copy(im.pixels.begin(), im.pixels.end(), a.mutable_data());
        return a;
      },
      py::arg("path"), "IDX image file (plain or gzip) as float32 count x rows x cols in [0, 1].");
  m.def(
      "read_idx_labels",
      [](const std::string& path) {
        std::vector<std::uint8_t> v;
        raise_if_failed(without_gil([&] { return read_idx_labels(path, v); }));
        return vec_array<int>(v);
      },
      py::arg("path"), "IDX label file (plain or gzip) as int32.");
  m.def(
      "load_model",
      [](const std::string& path) {
        Mlp net;
        raise_if_failed(without_gil([&] { return load_model(path, net); }));
        return layers_of(net);
      },
      py::arg("path"), "anasim-mlp-1 model file as a list of (weight outputs x inputs, bias) float64 arrays.");
  m.def(
      "save_model",
      [](const std::string& path, const Layers& layers, const std::string& created_by) {
        const Mlp net = mlp_from(layers);
        ModelInfo info;
        info.created_by = created_by;
        raise_if_failed(without_gil([&] { return save_model(path, net, info); }));
      },
      py::arg("path"), py::arg("layers"), py::arg("created_by") = "anasim Python module");
  m.def("hardware_params", [] {
    py::list out;
    for (const auto& s : hardware_params()) out.append(py::make_tuple(s.name, s.unit, s.def, s.description));
    return out;
  }, "The hardware: table as (name, unit, default, description) tuples.");
  py::class_<Accelerator>(m, "Accelerator",
                          "A network mapped onto hardware (trial 0 of the config's seed), ready to evaluate.")
      .def(py::init<const Layers&, const std::string&, const Overrides&, const ImagesF&>(), py::arg("layers"),
           py::arg("config"), py::arg("overrides"), py::arg("calib"))
      .def("evaluate", &Accelerator::evaluate, py::arg("images"), py::arg("outputs"))
      .def("probe", &Accelerator::probe, py::arg("image"), py::arg("sample"))
      .def("crossbar", &Accelerator::crossbar, py::arg("layer"), py::arg("tile"), py::arg("image"),
           py::arg("sample"), py::arg("ir_drop"))
      .def("info", &Accelerator::info);
  m.def("energy", &energy, py::arg("layers"), py::arg("config"), py::arg("overrides"), py::arg("images"),
        py::arg("labels"), py::arg("calib"), py::arg("from_previous"), py::arg("tstop"), py::arg("engine"),
        "`anasim nn energy`: per-image settling time, energy, energy by component and class; the summary.");
  m.def("monte_carlo", &monte_carlo, py::arg("layers"), py::arg("config"), py::arg("overrides"), py::arg("images"),
        py::arg("labels"), py::arg("calib"), py::arg("trials"), py::arg("seed"), py::arg("sweep"),
        "`anasim nn mc`: per-trial accuracies (sweep points x trials) and per-point statistics.");
}

}  // namespace anasim::py_bind
