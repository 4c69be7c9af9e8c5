// Crossbar device tests: exact I = G^T v without wires, agreement with ngspice on the exported deck with wire
// resistance/capacitance, programming statistics (quantization, variation, stuck cells), conductance files,
// errors, the C++ API, the element enumerator (CrossbarTopology) and the shipped examples (data/examples/) against
// ngspice.
#include <doctest/doctest.h>
#include <chrono>
#include <cmath>
#include <fstream>
#include <set>
#include <H5Cpp.h>
#include "devices/crossbar.hpp"
#include "devices/random.hpp"
#include "engine/circuit.hpp"
#include "tests/ngspice_helpers.hpp"

using namespace anasim;
using namespace anasim::test;
namespace fs = std::filesystem;

namespace {

// Reproducible test conductances in [lo, hi] [S].
std::vector<double> test_conductances(int n, std::uint64_t seed, double lo = 1e-6, double hi = 100e-6) {
  std::vector<double> g(n);
  for (int k = 0; k < n; ++k) g[k] = lo + (hi - lo) * rnd::uniform(seed, 99, k);
  return g;
}

// A crossbar driven by row sources vr<i> (voltages vin); column j ends in a 0 V source vc<j> (an ideal TIA
// input) when `sink(j)`, else in a 1 kohm resistor to ground.
template <class Sink>
std::string crossbar_yaml(int R, int C, const std::vector<double>& g, const std::vector<double>& vin,
                          const std::string& xb_params, Sink sink, const std::string& analyses = "[{type: op}]") {
  std::string y = "title: crossbar test\ndevices:\n";
  for (int i = 0; i < R; ++i) y += fmt::format("  - {{name: vr{0}, type: v, nodes: [row{0}, 0], dc: {1}}}\n", i, vin[i]);
  std::string nodes;
  for (int i = 0; i < R; ++i) nodes += fmt::format("row{}, ", i);
  for (int j = 0; j < C; ++j) nodes += fmt::format("col{}{}", j, j + 1 < C ? ", " : "");
  y += fmt::format("  - {{name: xb, type: crossbar, nodes: [{}], rows: {}, cols: {}, g: [{}]{}{}}}\n", nodes, R, C,
                   fmt::join(g, ", "), xb_params.empty() ? "" : ", ", xb_params);
  for (int j = 0; j < C; ++j) {
    if (sink(j)) y += fmt::format("  - {{name: vc{0}, type: v, nodes: [col{0}, 0], dc: 0}}\n", j);
    else y += fmt::format("  - {{name: rl{0}, type: r, nodes: [col{0}, 0], r: 1k}}\n", j);
  }
  y += "analyses: " + analyses + "\n";
  return y;
}

std::vector<double> test_inputs(int R) {
  std::vector<double> v(R);
  for (int i = 0; i < R; ++i) v[i] = 0.05 + 0.45 * rnd::uniform(7, 98, i);
  return v;
}

}  // namespace

TEST_CASE("crossbar: without wire resistance the column currents are G^T v (1e-12)") {
  const int R = 12, C = 7;
  const auto g = test_conductances(R * C, 1);
  const auto v = test_inputs(R);
  const FlatNetlist fn = elaborate_yaml(crossbar_yaml(R, C, g, v, "", [](int) { return true; }));
  const RunResults r = simulate_flat(fn);
  CHECK(r.unknowns == R + C + R + C);  // row and column nodes plus the source branches: no internal nodes
  for (int j = 0; j < C; ++j) {
    long double ref = 0;
    for (int i = 0; i < R; ++i) ref += static_cast<long double>(g[i * C + j]) * v[i];
    const double got = r.analyses[0].find(fmt::format("i(vc{})", j))->re[0];
    CHECK(std::fabs(got - static_cast<double>(ref)) <= 1e-12 * std::fabs(static_cast<double>(ref)));
  }
}

TEST_CASE("crossbar: 32 x 16 with wire resistance matches ngspice at every node (1e-6)") {
  if (!ngspice_available()) {
    FAIL_CHECK("ngspice is not on PATH");
    return;
  }
  const fs::path dir = scratch_dir("xbar_xc");
  const int R = 32, C = 16;
  const auto g = test_conductances(R * C, 2);
  const auto v = test_inputs(R);
  auto half = [](int j) { return j % 2 == 0; };  // even columns into 0 V sinks, odd ones into 1 kohm

  SUBCASE("per-cell wire nodes") {
    const FlatNetlist fn =
        elaborate_yaml(crossbar_yaml(R, C, g, v, "rwire_row: 2.5, rwire_col: 1.5, rdriver: 20, rsink: 10, probe_nodes: 1", half));
    RunResults r;
    const auto cmp = crosscheck_flat(fn, dir, "xbar32x16", &r);
    CHECK(r.unknowns == R + C + 2 * R * C + R + C / 2);
    REQUIRE(cmp.size() == 1);
    CHECK(cmp[0].missing.empty());
    CHECK(cmp[0].compared == R + C + 2 * R * C + R + C / 2);
    MESSAGE("32x16 crossbar with wires vs ngspice: " << cmp[0].compared << " signals, worst relative error "
                                                     << cmp[0].worst << " (" << cmp[0].worst_name << ")");
    CHECK(cmp[0].worst <= 1e-6);
  }
  SUBCASE("one node per line (rwire = 0, rdriver/rsink > 0) and wire capacitance") {
    const FlatNetlist fn =
        elaborate_yaml(crossbar_yaml(R, C, g, v, "rdriver: 50, rsink: 30, cwire: 1f, probe_nodes: 1", half));
    RunResults r;
    const auto cmp = crosscheck_flat(fn, dir, "xbar_line", &r);
    CHECK(r.unknowns == R + C + R + C + R + C / 2);
    CHECK(cmp[0].missing.empty());
    CHECK(cmp[0].worst <= 1e-6);
  }
  SUBCASE("transient settling with wire capacitance") {
    const int r8 = 8, c4 = 4;
    std::string y = crossbar_yaml(r8, c4, test_conductances(r8 * c4, 3), test_inputs(r8),
                                  "rwire_row: 5, rwire_col: 5, rdriver: 1k, rsink: 500, cwire: 20f, probe_nodes: 1", half,
                                  "[{type: tran, tstep: 5p, tstop: 1n}]");
    // Step the first row input: 0 -> 0.4 V in 50 ps.
    const std::string from = "{name: vr0, type: v, nodes: [row0, 0], dc: ";
    const size_t at = y.find(from);
    REQUIRE(at != std::string::npos);
    y.replace(at, y.find('}', at) - at + 1, "{name: vr0, type: v, nodes: [row0, 0], pulse: [0, 0.4, 20p, 50p, 50p, 1, 2]}");
    const FlatNetlist fn = elaborate_yaml(y);
    const auto cmp = crosscheck_flat(fn, dir, "xbar_tran");
    REQUIRE(cmp.size() == 1);
    CHECK(cmp[0].missing.empty());
    MESSAGE("8x4 crossbar transient vs ngspice: worst error " << cmp[0].worst << " of the waveform range ("
                                                              << cmp[0].worst_name << ")");
    CHECK(cmp[0].worst <= 1e-3);
  }
  fs::remove_all(dir);
}

TEST_CASE("crossbar: quantization to levels") {
  CrossbarSpec s;
  s.rows = 64;
  s.cols = 64;
  s.gmin = 1e-6;
  s.gmax = 101e-6;
  s.levels = 11;  // step 10 uS
  s.g = test_conductances(s.rows * s.cols, 4, 0.0, 120e-6);  // also below gmin and above gmax
  const std::vector<double> q = program_crossbar(s);
  const double step = (s.gmax - s.gmin) / (s.levels - 1);
  for (size_t k = 0; k < q.size(); ++k) {
    const double level = (q[k] - s.gmin) / step;
    REQUIRE(std::fabs(level - std::round(level)) < 1e-9);
    REQUIRE(q[k] >= s.gmin);
    REQUIRE(q[k] <= s.gmax * (1 + 1e-15));
    const double clipped = std::min(std::max(s.g[k], s.gmin), s.gmax);
    REQUIRE(std::fabs(q[k] - clipped) <= 0.5 * step * (1 + 1e-12));
  }
  // Targets on the grid are kept.
  for (size_t k = 0; k < s.g.size(); ++k) s.g[k] = s.gmin + step * static_cast<double>(k % s.levels);
  const std::vector<double> same = program_crossbar(s);
  for (size_t k = 0; k < s.g.size(); ++k) REQUIRE(std::fabs(same[k] - s.g[k]) <= 1e-18);
}

TEST_CASE("crossbar: programming variation and stuck cells match their parameters") {
  CrossbarSpec s;
  s.rows = 256;
  s.cols = 256;
  const int n = s.rows * s.cols;
  const double g0 = 50e-6;
  s.g.assign(n, g0);
  s.seed = 12345;

  SUBCASE("relative variation") {
    s.sigma_rel = 0.05;
    const auto g = program_crossbar(s);
    double m = 0, m2 = 0;
    for (double x : g) {
      const double e = x / g0 - 1;
      m += e;
      m2 += e * e;
    }
    m /= n;
    const double sd = std::sqrt(m2 / n - m * m);
    MESSAGE("sigma_rel 0.05 over " << n << " cells: mean rel. error " << m << ", std " << sd);
    CHECK(std::fabs(m) < 4 * s.sigma_rel / std::sqrt(n));
    CHECK(std::fabs(sd / s.sigma_rel - 1) < 0.02);  // std of the std estimate ~ 0.28 %
  }
  SUBCASE("absolute variation") {
    s.sigma_abs = 2e-6;
    const auto g = program_crossbar(s);
    double m = 0, m2 = 0;
    for (double x : g) {
      m += x - g0;
      m2 += (x - g0) * (x - g0);
    }
    m /= n;
    const double sd = std::sqrt(m2 / n - m * m);
    CHECK(std::fabs(m) < 4 * s.sigma_abs / std::sqrt(n));
    CHECK(std::fabs(sd / s.sigma_abs - 1) < 0.02);
  }
  SUBCASE("stuck-on and stuck-off fractions (binomial)") {
    s.gmin = 1e-6;
    s.gmax = 100e-6;
    s.stuck_on = 0.02;
    s.stuck_off = 0.05;
    s.sigma_rel = 0.01;
    const auto g = program_crossbar(s);
    int on = 0, off = 0;
    for (double x : g) {
      on += x == s.gmax;
      off += x == s.gmin;
    }
    const auto within = [n](int count, double p) { return std::fabs(count - n * p) < 4 * std::sqrt(n * p * (1 - p)); };
    MESSAGE("stuck_on 0.02 -> " << on << " of " << n << ", stuck_off 0.05 -> " << off);
    CHECK(within(on, s.stuck_on));
    CHECK(within(off, s.stuck_off));
  }
  SUBCASE("same seed, same conductances; another seed, others") {
    s.sigma_rel = 0.1;
    s.stuck_off = 0.1;
    const auto a = program_crossbar(s), b = program_crossbar(s);
    CHECK(a == b);
    s.seed = 54321;
    const auto c = program_crossbar(s);
    int differ = 0;
    for (int k = 0; k < n; ++k) differ += a[k] != c[k];
    CHECK(differ > n / 2);
  }
}

TEST_CASE("crossbar: seed 0 derives the seed from the instance name; netlist and export agree") {
  const int R = 4, C = 3;
  const auto g = test_conductances(R * C, 5);
  const auto v = test_inputs(R);
  const std::string y = crossbar_yaml(R, C, g, v, "sigma_rel: 0.1", [](int) { return true; });
  const FlatNetlist fn = elaborate_yaml(y);
  Circuit c1, c2;
  REQUIRE(c1.build(fn, builtin_catalog()).ok());
  REQUIRE(c2.build(fn, builtin_catalog()).ok());
  const auto* x1 = dynamic_cast<const Crossbar*>(c1.find_device("xb"));
  const auto* x2 = dynamic_cast<const Crossbar*>(c2.find_device("xb"));
  REQUIRE(x1);
  REQUIRE(x2);
  CHECK(x1->conductances() == x2->conductances());  // same run-to-run
  CHECK(x1->spec().seed == rnd::effective_seed(0, "xb"));
  CHECK(x1->conductances() != g);
  // A second instance with the default seed draws differently.
  std::string y2 = y;
  y2.replace(y2.find("name: xb"), 8, "name: xc");
  const FlatNetlist fn2 = elaborate_yaml(y2);
  Circuit c3;
  REQUIRE(c3.build(fn2, builtin_catalog()).ok());
  CHECK(dynamic_cast<const Crossbar*>(c3.find_device("xc"))->conductances() != x1->conductances());
  // The export writes the programmed values.
  const std::string deck = spice_deck(fn);
  const double g00 = x1->conductances()[0];
  CHECK(deck.find(fmt::format("r.xb.c0_0 row0 col0 {}", 1.0 / g00)) != std::string::npos);
}

TEST_CASE("crossbar: conductances from HDF5 and CSV files") {
  const fs::path dir = scratch_dir("xbar_files");
  const int R = 3, C = 5;
  const auto g = test_conductances(R * C, 6);
  {
    H5::H5File f((dir / "w.h5").string(), H5F_ACC_TRUNC);
    H5::Group grp = f.createGroup("/layer0");
    hsize_t dims[2] = {R, C};
    H5::DataSet ds = f.createDataSet("/layer0/g", H5::PredType::NATIVE_DOUBLE, H5::DataSpace(2, dims));
    ds.write(g.data(), H5::PredType::NATIVE_DOUBLE);
    hsize_t flat[1] = {R * C};
    f.createDataSet("/flat", H5::PredType::NATIVE_FLOAT, H5::DataSpace(1, flat))
        .write(std::vector<float>(g.begin(), g.end()).data(), H5::PredType::NATIVE_FLOAT);
  }
  {
    std::ofstream f(dir / "w.csv");
    f << "# conductances\n";
    for (int i = 0; i < R; ++i) {
      for (int j = 0; j < C; ++j) f << fmt::format("{}{}", j ? ", " : "", g[i * C + j]);
      f << "\n\n";
    }
  }
  auto build = [&](const std::string& source, Circuit& c) {
    const std::string y = fmt::format(
        "devices:\n"
        "  - {{name: xb, type: crossbar, nodes: [a, b, c, o1, o2, o3, o4, o5], {}}}\n"
        "  - {{name: v1, type: v, nodes: [a, 0], dc: 1}}\n"
        "  - {{name: v2, type: v, nodes: [b, 0], dc: 1}}\n"
        "  - {{name: v3, type: v, nodes: [c, 0], dc: 1}}\n"
        "  - {{name: r1, type: r, nodes: [o1, 0], r: 1}}\n  - {{name: r2, type: r, nodes: [o2, 0], r: 1}}\n"
        "  - {{name: r3, type: r, nodes: [o3, 0], r: 1}}\n  - {{name: r4, type: r, nodes: [o4, 0], r: 1}}\n"
        "  - {{name: r5, type: r, nodes: [o5, 0], r: 1}}\n",
        source);
    const FlatNetlist fn = elaborate_yaml(y, (dir / "net.yaml").string());  // file names relative to the netlist
    const Status st = c.build(fn, builtin_catalog());
    INFO(st.to_string());
    REQUIRE(st.ok());
    return dynamic_cast<const Crossbar*>(c.find_device("xb"))->conductances();
  };
  Circuit c1, c2, c3;
  CHECK(build("g_file: w.h5, g_dataset: /layer0/g", c1) == g);
  CHECK(build("g_csv: w.csv", c2) == g);
  const auto f = build("g_file: \"w.h5\", g_dataset: /flat, rows: 3", c3);  // 1-D float dataset
  for (int k = 0; k < R * C; ++k) CHECK(f[k] == static_cast<double>(static_cast<float>(g[k])));
  fs::remove_all(dir);
}

TEST_CASE("crossbar: netlist errors are located") {
  auto error_of = [](const std::string& y) {
    ParsedNetlist pn;
    FlatNetlist fn;
    Status st = parse_yaml_string(y, "bad.yaml", builtin_catalog(), pn);
    if (st) st = elaborate(pn, builtin_catalog(), fn);
    Circuit c;
    if (st) st = c.build(fn, builtin_catalog());
    REQUIRE(!st.ok());
    return st.errors[0];
  };
  const std::string head = "devices:\n  - {name: v1, type: v, nodes: [a, 0], dc: 1}\n";
  Diag d = error_of(head + "  - {name: xb, type: crossbar, nodes: [a, b, c], rows: 2, cols: 2, g: [1u, 2u, 3u, 4u]}\n");
  CHECK(d.message.find("needs 4 nodes (2 row inputs, then 2 column outputs), got 3") != std::string::npos);
  CHECK(d.loc.line == 3);
  d = error_of(head + "  - {name: xb, type: crossbar, nodes: [a, b], rows: 1, cols: 1}\n");
  CHECK(d.message.find("needs conductances") != std::string::npos);
  d = error_of(head + "  - {name: xb, type: crossbar, nodes: [a, b], g: [1u], g_csv: x.csv}\n");
  CHECK(d.message.find("give the conductances once") != std::string::npos);
  d = error_of(head + "  - {name: xb, type: crossbar, nodes: [a, b], rows: 1, g: [-1u]}\n");
  CHECK(d.message.find("must be finite and >= 0") != std::string::npos);
  d = error_of(head + "  - {name: xb, type: crossbar, nodes: [a, b], rows: 1, g: [1u], levels: 8}\n");
  CHECK(d.message.find("finite gmax") != std::string::npos);
  d = error_of(head + "  - {name: xb, type: crossbar, nodes: [a, b], g_csv: missing.csv}\n");
  CHECK(d.message.find("cannot open CSV file") != std::string::npos);
  CHECK(d.loc.line == 3);
  CHECK(d.loc.col > 40);  // at the file name
  d = error_of(head + "  - {name: xb, type: crossbar, nodes: [a, b], g_file: missing.h5, g_dataset: /g}\n");
  CHECK(d.message.find("no such file") != std::string::npos);
  d = error_of(head + "  - {name: xb, type: crossbar, nodes: [a, b], rows: 1.5, g: [1u]}\n");
  CHECK(d.message.find("must be an integer") != std::string::npos);
}

TEST_CASE("crossbar: C++ API builds the device and its netlist form from a spec") {
  CrossbarSpec s;
  s.rows = 3;
  s.cols = 2;
  s.g = test_conductances(6, 8);
  s.sigma_rel = 0.05;
  s.seed = 77;
  Status st;
  CHECK(make_crossbar("xb", s, {NodeId(1), NodeId(2)}, st) == nullptr);
  CHECK(st.errors.at(0).message.find("needs 5 nodes") != std::string::npos);
  st = Status{};
  auto dev = make_crossbar("xb", s, {NodeId(1), NodeId(2), NodeId(3), NodeId(4), NodeId(5)}, st);
  REQUIRE(dev);
  CHECK(dev->conductances() == program_crossbar(s));
  const FlatDevice fd = crossbar_flat_device("xb", s, {NodeId(1), NodeId(2), NodeId(3), NodeId(4), NodeId(5)});
  Status st2;
  auto from_flat = fd.type->create(fd, st2);
  REQUIRE(from_flat);
  CHECK(dynamic_cast<Crossbar*>(from_flat.get())->conductances() == dev->conductances());
  CrossbarSpec bad = s;
  bad.stuck_on = 0.1;  // gmax infinite
  std::string param;
  CHECK(!validate_crossbar(bad, &param).ok());
  CHECK(param == "gmax");
}

namespace {
// A netlist-free R x C crossbar with 1 ohm wire segments, rows driven by sources vr<i> (test_inputs), columns
// into 0 V sinks vc<j>, and one .op: FlatDevices of the built-in types, as the NN layer assembles them.
FlatNetlist wired_crossbar(int R, int C, CrossbarSpec& s) {
  s.rows = R;
  s.cols = C;
  s.g = test_conductances(R * C, 9);
  s.rwire_row = s.rwire_col = 1.0;
  FlatNetlist fn;
  fn.node_names = {"0"};
  std::vector<NodeId> pins;
  for (int k = 0; k < R + C; ++k) {
    fn.node_names.push_back(k < R ? fmt::format("row{}", k) : fmt::format("col{}", k - R));
    pins.push_back(NodeId(k + 1));
  }
  fn.devices.push_back(crossbar_flat_device("xb", s, pins));
  auto source = [&](const std::string& name, int node, double v) {
    FlatDevice fd;
    fd.name = name;
    fd.type = builtin_catalog().find("v");
    fd.nodes = {NodeId(node), NodeId(0)};
    fd.params = default_params(fd.type->params);
    const int dc = fd.params.index_of("dc");
    fd.params.value[dc] = v;
    fd.params.given[dc] = 1;
    fn.devices.push_back(std::move(fd));
  };
  const auto v = test_inputs(R);
  for (int i = 0; i < R; ++i) source(fmt::format("vr{}", i), i + 1, v[i]);
  for (int j = 0; j < C; ++j) source(fmt::format("vc{}", j), R + j + 1, 0.0);
  fn.analyses.push_back(Analysis{});  // .op
  return fn;
}
}  // namespace

TEST_CASE("crossbar: 256 x 256 with wires builds in O(R*C); 64 x 64 solves with IR drop") {
  {
    CrossbarSpec s;
    const FlatNetlist fn = wired_crossbar(256, 256, s);
    const auto t0 = std::chrono::steady_clock::now();
    Circuit c;
    const Status st = c.build(fn, builtin_catalog());
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(st.to_string());
    REQUIRE(st.ok());
    CHECK(c.n() == 256 + 256 + 2 * 256 * 256 + 256 + 256);
    MESSAGE("256x256 crossbar with wires: " << c.n() << " unknowns, " << c.nnz() << " nonzeros, circuit built in "
                                            << secs << " s");
  }
  CrossbarSpec s;
  const int R = 64, C = 64;
  const RunResults r = simulate_flat(wired_crossbar(R, C, s));
  const auto v = test_inputs(R);
  for (int j = 0; j < C; ++j) {  // IR drop: every column current below the ideal G^T v
    double ideal = 0;
    for (int i = 0; i < R; ++i) ideal += s.g[i * C + j] * v[i];
    const double got = r.analyses[0].find(fmt::format("i(vc{})", j))->re[0];
    CHECK(got < ideal);
    CHECK(got > 0.5 * ideal);
  }
}

TEST_CASE("crossbar: examples run and match ngspice on the exported deck") {
  if (!ngspice_available()) {
    FAIL_CHECK("ngspice is not on PATH");
    return;
  }
  const fs::path dir = scratch_dir("xbar_examples");
  for (const std::string ex : {"crossbar_tia.yaml", "dac_crossbar_adc.yaml"}) {
    INFO(ex);
    const FlatNetlist fn = elaborate_file((fs::path(ANASIM_SOURCE_DIR) / "data" / "examples" / ex).string());
    RunResults r;
    const auto cmp = crosscheck_flat(fn, dir, fs::path(ex).stem().string(), &r);
    REQUIRE(cmp.size() == 1);
    CHECK(cmp[0].missing.empty());
    CHECK(cmp[0].compared >= 10);
    MESSAGE(ex << " vs ngspice: " << cmp[0].compared << " signals, worst relative error " << cmp[0].worst);
    CHECK(cmp[0].worst <= 1e-6);
  }
  fs::remove_all(dir);
}

namespace {
// Entries of L (below the diagonal) of a symbolic elimination of the graph of a tile's wires and cells in order
// `order` (tile-local nodes; the others are eliminated first, in node order).
long elimination_fill(const CrossbarTopology& t, const CrossbarSpec& s, const std::vector<int>& order) {
  std::vector<std::set<int>> adj(t.nodes());
  t.for_each_element(s, s.g, [&](const CrossbarElement& e) {
    if (e.b < 0) return;
    adj[e.a].insert(e.b);
    adj[e.b].insert(e.a);
  });
  std::vector<int> seq, pos(t.nodes(), -1);
  for (int k : order) pos[k] = 1;
  for (int k = 0; k < t.nodes(); ++k)
    if (pos[k] < 0) seq.push_back(k);
  seq.insert(seq.end(), order.begin(), order.end());
  for (size_t k = 0; k < seq.size(); ++k) pos[seq[k]] = static_cast<int>(k);
  long fill = 0;
  for (int u : seq) {
    std::vector<int> later;
    for (int v : adj[u])
      if (pos[v] > pos[u]) later.push_back(v);
    fill += static_cast<long>(later.size());
    for (int a : later)
      for (int b : later)
        if (a != b) adj[a].insert(b);
  }
  return fill;
}
}  // namespace

TEST_CASE("crossbar: the elimination order is a nested dissection of the internal nodes") {
  CrossbarSpec s;
  s.rows = 64;
  s.cols = 48;
  s.g = test_conductances(s.rows * s.cols, 5);
  s.rwire_row = s.rwire_col = 1.0;
  const CrossbarTopology t(s);
  const std::vector<int> order = t.elimination_order();
  // a permutation of the internal nodes
  REQUIRE(order.size() == static_cast<size_t>(t.nodes() - t.pins()));
  std::vector<int> seen(t.nodes(), 0);
  for (int k : order) {
    REQUIRE(k >= t.pins());
    REQUIRE(k < t.nodes());
    CHECK(seen[k]++ == 0);
  }
  // the last separator: the column nodes of the middle row (the longer side is cut)
  std::set<int> last(order.end() - s.cols, order.end()), middle;
  for (int j = 0; j < s.cols; ++j) middle.insert(t.col_node(s.rows / 2, j));
  CHECK(last == middle);
  // far less fill than the natural order (row nodes then column nodes, row-major)
  std::vector<int> natural(order.size());
  for (size_t k = 0; k < natural.size(); ++k) natural[k] = t.pins() + static_cast<int>(k);
  const long nd = elimination_fill(t, s, order), nat = elimination_fill(t, s, natural);
  MESSAGE("fill of L: nested dissection " << nd << ", natural order " << nat);
  CHECK(nd < nat / 2);
  // no order without a node per cell on both lines
  s.rwire_col = 0;
  CHECK(CrossbarTopology(s).elimination_order().empty());
}

TEST_CASE("crossbar: the element enumerator covers every node once per line mode; the SPICE export walks it") {
  struct Mode { double rwire_row, rdriver, rwire_col, rsink; int row_int, col_int; };
  const int R = 3, C = 4;
  // (per cell, per cell), (per line, per line), (pin, pin), (per cell, pin)
  for (const Mode& m : {Mode{2, 10, 3, 10, R * C, R * C}, Mode{0, 10, 0, 10, R, C}, Mode{0, 0, 0, 0, 0, 0},
                        Mode{2, 0, 0, 0, R * C, 0}}) {
    CrossbarSpec s;
    s.rows = R;
    s.cols = C;
    s.g = test_conductances(R * C, 3);
    s.g[5] = 0;  // an empty cell has no element
    s.rwire_row = m.rwire_row;
    s.rdriver = m.rdriver;
    s.rwire_col = m.rwire_col;
    s.rsink = m.rsink;
    s.cwire = 1e-15;
    const CrossbarTopology t(s);
    CHECK(t.row_internal() == m.row_int);
    CHECK(t.col_internal() == m.col_int);
    CHECK(t.nodes() == R + C + m.row_int + m.col_int);
    int cells = 0, wires = 0, caps = 0;
    double gsum = 0, cap = 0;
    std::vector<int> touched(t.nodes(), 0);
    t.for_each_element(s, s.g, [&](const CrossbarElement& e) {
      REQUIRE(e.a >= 0);
      REQUIRE(e.a < t.nodes());
      REQUIRE(e.b < t.nodes());
      CHECK(e.value > 0);
      ++touched[e.a];
      if (e.b >= 0) ++touched[e.b];
      switch (e.kind) {
        case CrossbarElement::Kind::Cell:
          ++cells;
          gsum += e.value;
          CHECK(e.a == t.row_node(e.i, e.j));
          CHECK(e.b == t.col_node(e.i, e.j));
          break;
        case CrossbarElement::Kind::RowWire:
        case CrossbarElement::Kind::ColWire: ++wires; break;
        default:
          ++caps;
          cap += e.value;
          CHECK(e.b == -1);
      }
    });
    double gwant = 0;
    for (double g : s.g) gwant += g;
    CHECK(cells == R * C - 1);
    CHECK(gsum == doctest::Approx(gwant));
    const int row_wires = m.row_int == R * C ? R * C : m.row_int == R ? R : 0;
    const int col_wires = m.col_int == R * C ? R * C : m.col_int == C ? C : 0;
    CHECK(wires == row_wires + col_wires);
    CHECK(cap == doctest::Approx(2 * R * C * s.cwire));  // every segment's cwire, on rows and columns
    for (int k = t.pins(); k < t.nodes(); ++k) CHECK(touched[k] > 0);  // no internal node is left floating
    // The export has one element line per enumerated element (pins named, none grounded here).
    std::vector<std::string> pins;
    for (int i = 0; i < R; ++i) pins.push_back(fmt::format("r{}", i));
    for (int j = 0; j < C; ++j) pins.push_back(fmt::format("c{}", j));
    const std::string deck = crossbar_spice("xb", s, s.g, pins);
    int lines_r = 0, lines_c = 0;
    std::istringstream in(deck);
    for (std::string line; std::getline(in, line);) {
      lines_r += line.rfind("r.xb.", 0) == 0;
      lines_c += line.rfind("c.xb.", 0) == 0;
    }
    CHECK(lines_r == cells + wires);
    CHECK(lines_c == caps);
  }
}
