// Resistive crossbar (see crossbar.hpp): parameter table, conductance loading (inline, CSV, HDF5),
// programming non-idealities, O(R*C) expansion into internal nodes, and SPICE export.
#include "devices/crossbar.hpp"
#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include "devices/random.hpp"
#include "devices/registry.hpp"
#include "engine/hdf5_module.hpp"
#include "engine/isolated_read.hpp"
#include "engine/parse.hpp"

namespace anasim {

// ---- programming ---------------------------------------------------------------------------------

Status validate_crossbar(const CrossbarSpec& s, std::string* param) {
  auto bad = [&](const char* p, std::string msg) {
    if (param) *param = p;
    return Status::input(std::move(msg));
  };
  if (param) param->clear();
  if (s.rows < 1) return bad("rows", fmt::format("crossbar needs at least one row, got {}", s.rows));
  if (s.cols < 1) return bad("cols", fmt::format("crossbar needs at least one column, got {}", s.cols));
  const size_t n = static_cast<size_t>(s.rows) * static_cast<size_t>(s.cols);
  if (s.g.size() != n)
    return bad("g", fmt::format("crossbar of {} x {} needs {} conductances, got {}", s.rows, s.cols, n, s.g.size()));
  for (size_t k = 0; k < n; ++k)
    if (!(s.g[k] >= 0) || !std::isfinite(s.g[k]))
      return bad("g", fmt::format("conductance of cell ({}, {}) is {} S; conductances must be finite and >= 0 "
                                  "(map signed weights onto a differential pair of crossbars)",
                                  k / s.cols, k % s.cols, s.g[k]));
  struct NonNeg { const char* name; double v; };
  for (const NonNeg& p : {NonNeg{"rwire_row", s.rwire_row}, NonNeg{"rwire_col", s.rwire_col},
                          NonNeg{"rdriver", s.rdriver}, NonNeg{"rsink", s.rsink}, NonNeg{"cwire", s.cwire},
                          NonNeg{"gmin", s.gmin}, NonNeg{"sigma_rel", s.sigma_rel}, NonNeg{"sigma_abs", s.sigma_abs}})
    if (!(p.v >= 0) || !std::isfinite(p.v))
      return bad(p.name, fmt::format("crossbar parameter {} must be finite and >= 0, got {}", p.name, p.v));
  if (!(s.gmax >= s.gmin)) return bad("gmax", fmt::format("crossbar gmax {} S is below gmin {} S", s.gmax, s.gmin));
  if (s.levels == 1 || s.levels < 0)
    return bad("levels", fmt::format("crossbar levels must be 0 (analog) or >= 2, got {}", s.levels));
  if (s.levels >= 2 && !std::isfinite(s.gmax))
    return bad("gmax", "crossbar with quantization levels needs a finite gmax");
  if (!(s.stuck_on >= 0 && s.stuck_on <= 1)) return bad("stuck_on", "crossbar stuck_on must lie in [0, 1]");
  if (!(s.stuck_off >= 0 && s.stuck_off <= 1)) return bad("stuck_off", "crossbar stuck_off must lie in [0, 1]");
  if (s.stuck_on + s.stuck_off > 1)
    return bad("stuck_off", fmt::format("crossbar stuck_on + stuck_off = {} exceeds 1", s.stuck_on + s.stuck_off));
  if (s.stuck_on > 0 && !std::isfinite(s.gmax)) return bad("gmax", "crossbar with stuck_on cells needs a finite gmax");
  return {};
}

std::vector<double> program_crossbar(const CrossbarSpec& s) {
  const size_t n = s.g.size();
  std::vector<double> g(n);
  const double step = s.levels >= 2 ? (s.gmax - s.gmin) / (s.levels - 1) : 0.0;
  const bool stuck = s.stuck_on > 0 || s.stuck_off > 0;
  auto clip = [&](double v) { return std::min(std::max(v, s.gmin), s.gmax); };
  for (size_t k = 0; k < n; ++k) {
    if (stuck) {
      const double u = rnd::uniform(s.seed, rnd::kStuck, k);
      if (u < s.stuck_on) { g[k] = s.gmax; continue; }
      if (u < s.stuck_on + s.stuck_off) { g[k] = s.gmin; continue; }
    }
    double v = clip(s.g[k]);
    if (step > 0) v = s.gmin + std::round((v - s.gmin) / step) * step;
    if (s.sigma_rel > 0) v *= 1.0 + s.sigma_rel * rnd::normal(s.seed, rnd::kProgramRel, k);
    if (s.sigma_abs > 0) v += s.sigma_abs * rnd::normal(s.seed, rnd::kProgramAbs, k);
    g[k] = clip(v);
  }
  return g;
}

// ---- conductance files ---------------------------------------------------------------------------

Status read_conductances_hdf5(const std::string& path, const std::string& dataset, int& rows, int& cols,
                              std::vector<double>& g) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Status::input(fmt::format("cannot open HDF5 file '{}': no such file", path));
  Wire reply;
  Status st = read_isolated(path, "libhdf5", [&](Wire& w) {
    using Read = void(const std::string&, const std::string&, int&, int&, std::vector<double>&, Status*);
    Status s = hdf5::call<Read>("anasim_hdf5_read_matrix", path, dataset, rows, cols, g);
    w.put(rows);
    w.put(cols);
    w.put(g);
    return s;
  }, reply);
  // The reader's own errors name the file in the message; those of the isolation (a crash, the time limit) are
  // located at it, and the crossbar quotes messages only.
  if (!st && st.errors[0].loc.src)
    st.errors[0].message = fmt::format("HDF5 file '{}': {}", path, st.errors[0].message);
  if (!st) return st;
  if (!reply.get(rows) || !reply.get(cols) || !reply.get(g))
    return Status::fail(ErrorKind::Other, fmt::format("HDF5 file '{}': internal error: the reader's reply does not "
                                                      "decode", path));
  return st;
}

Status read_conductances_csv(const std::string& path, int& rows, int& cols, std::vector<double>& g) {
  std::ifstream f(path);
  if (!f) return Status::input(fmt::format("cannot open CSV file '{}'", path));
  g.clear();
  rows = cols = 0;
  std::string line;
  for (int lineno = 1; std::getline(f, line); ++lineno) {
    if (size_t h = line.find('#'); h != std::string::npos) line.resize(h);
    int count = 0;
    const char* p = line.c_str();
    const char* end = p + line.size();
    while (true) {
      while (p < end && (*p == ',' || *p == ';' || std::isspace(static_cast<unsigned char>(*p)))) ++p;
      if (p >= end) break;
      char* q = nullptr;
      const double v = std::strtod(p, &q);
      if (q == p)
        return Status::input(fmt::format("{}:{}: expected a number, got '{}'", path, lineno,
                                         std::string(p, std::min<size_t>(end - p, 20))));
      g.push_back(v);
      ++count;
      p = q;
    }
    if (count == 0) continue;
    if (cols != 0 && count != cols)
      return Status::input(fmt::format("{}:{}: row has {} values, previous rows have {}", path, lineno, count, cols));
    cols = count;
    ++rows;
  }
  if (rows == 0) return Status::input(fmt::format("CSV file '{}' holds no values", path));
  return {};
}

// ---- elimination order ---------------------------------------------------------------------------

namespace {
// Blocks of at most this many nodes are not cut further (their fronts are small dense matrices anyway).
constexpr size_t kDissectionLeaf = 32;

// Orders the cell nodes v[lo, hi) (codes 2 * (i * cols + j) + kind, kind 0 = row node, 1 = column node) for
// nested dissection, in place: the first part, the second part, then their separator. A cut between cell rows
// at row m removes the column nodes of row m (the row nodes of row m then connect only along their row and go
// with the first part); a cut at column m removes the row nodes of column m likewise.
void dissect(std::vector<int>& v, size_t lo, size_t hi, int cols) {
  if (hi - lo <= kDissectionLeaf) return;
  int i0 = INT_MAX, i1 = -1, j0 = INT_MAX, j1 = -1;
  for (size_t k = lo; k < hi; ++k) {
    const int cell = v[k] / 2, i = cell / cols, j = cell % cols;
    i0 = std::min(i0, i);
    i1 = std::max(i1, i);
    j0 = std::min(j0, j);
    j1 = std::max(j1, j);
  }
  const bool cut_rows = i1 - i0 >= j1 - j0;
  const int m = cut_rows ? (i0 + i1 + 1) / 2 : (j0 + j1 + 1) / 2;
  const int sep_kind = cut_rows ? 1 : 0;
  auto line = [&](int code) { return cut_rows ? code / 2 / cols : code / 2 % cols; };
  auto begin = v.begin() + lo, end = v.begin() + hi;
  auto sep = std::partition(begin, end, [&](int code) { return !(code % 2 == sep_kind && line(code) == m); });
  auto second = std::partition(begin, sep, [&](int code) { return line(code) <= m; });
  if (second == begin || second == sep) return;  // nothing to separate
  dissect(v, lo, second - v.begin(), cols);
  dissect(v, second - v.begin(), sep - v.begin(), cols);
}
}  // namespace

std::vector<int> CrossbarTopology::elimination_order() const {
  if (row_line_ != Line::PerCell || col_line_ != Line::PerCell) return {};
  std::vector<int> v(2 * static_cast<size_t>(rows_) * cols_);
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<int>(k);
  dissect(v, 0, v.size(), cols_);
  for (int& code : v) {
    const int cell = code / 2;
    code = code % 2 == 0 ? row_node(cell / cols_, cell % cols_) : col_node(cell / cols_, cell % cols_);
  }
  return v;
}

// ---- device --------------------------------------------------------------------------------------

namespace {

void append_int(std::string& s, int v) {
  char buf[16];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

}  // namespace

Crossbar::Crossbar(std::string name, SourceLoc loc, const CrossbarSpec& spec, std::vector<NodeId> pins)
    : Device(std::move(name), std::move(loc)), spec_(spec), topo_(spec), nodes_(std::move(pins)) {
  spec_.seed = rnd::effective_seed(spec_.seed, this->name());
  g_ = program_crossbar(spec_);
}

void Crossbar::allocate(Allocator& a) {
  const bool vis = spec_.probe_nodes;
  std::string s;  // one reused suffix buffer: no allocation per node beyond the allocator's own
  nodes_.resize(topo_.pins());
  nodes_.reserve(topo_.nodes());
  for (int k = topo_.pins(); k < topo_.nodes(); ++k) {
    char kind;
    int x, y;
    topo_.label(k, kind, x, y);
    s.clear();
    s += kind;
    append_int(s, x);
    if (y >= 0) {
      s += '_';
      append_int(s, y);
    }
    nodes_.push_back(a.add_internal_node(*this, s, vis));
  }
  build_elements();
  if (!caps_.empty()) {
    const int first = a.add_states(static_cast<int>(caps_.size()));
    for (size_t k = 0; k < caps_.size(); ++k) caps_[k].state = first + static_cast<int>(k);
  }
}

void Crossbar::build_elements() {
  const int R = spec_.rows, C = spec_.cols;
  links_.clear();
  caps_.clear();
  const bool row_cell = topo_.row_line() == CrossbarTopology::Line::PerCell;
  const bool col_cell = topo_.col_line() == CrossbarTopology::Line::PerCell;
  links_.reserve(static_cast<size_t>(R) * C * (1 + row_cell + col_cell) + R + C);
  topo_.for_each_element(spec_, g_, [&](const CrossbarElement& e) {
    switch (e.kind) {
      case CrossbarElement::Kind::Cell: links_.push_back({nodes_[e.a], nodes_[e.b], e.value, {}}); break;
      case CrossbarElement::Kind::RowWire:
      case CrossbarElement::Kind::ColWire: links_.push_back({nodes_[e.a], nodes_[e.b], 1.0 / e.value, {}}); break;
      default:
        if (!nodes_[e.a].is_ground()) caps_.push_back({nodes_[e.a], e.value, {}, 0, 0, 0});
    }
  });
}

void Crossbar::declare(PatternBuilder& p) {
  for (Link& l : links_) l.y.declare(p, p.unknown(l.a), p.unknown(l.b));
  for (Cap& c : caps_) {
    c.u = p.unknown(c.n);
    p.entry(c.u, c.u, &c.diag);
    c.rhs = p.rhs(c.u);
  }
}

void Crossbar::load(LoadContext& ctx) {
  for (const Link& l : links_) l.y.stamp(ctx.A, l.g);
  for (const Cap& c : caps_) {
    const double v = ctx.v(c.u);
    const double i = ctx.ddt(c.state, c.c * v);
    if (!ctx.transient()) continue;
    const double geq = ctx.ag0 * c.c;
    ctx.A[c.diag] += geq;
    ctx.b[c.rhs] -= i - geq * v;
  }
}

void Crossbar::load_ac(AcLoadContext& ctx) {
  for (const Link& l : links_) l.y.stamp(ctx.A, std::complex<double>(l.g));
  for (const Cap& c : caps_) ctx.A[c.diag] += std::complex<double>(0.0, ctx.omega * c.c);
}

void Crossbar::update_states(LoadContext& ctx) {
  for (const Cap& c : caps_) ctx.q[c.state] = c.c * ctx.v(c.u);
}

void Crossbar::init_uic(LoadContext& ctx) {
  for (const Cap& c : caps_) ctx.q[c.state] = c.c * ctx.v(c.u);
}

void Crossbar::elimination_order(std::vector<NodeId>& out) const {
  for (int k : topo_.elimination_order()) out.push_back(nodes_[k]);
}

void Crossbar::dc_paths(std::vector<NodePair>& out) const {
  out.reserve(out.size() + links_.size());
  for (const Link& l : links_) out.emplace_back(l.a, l.b);
}

std::unique_ptr<Crossbar> make_crossbar(const std::string& name, const CrossbarSpec& spec,
                                        const std::vector<NodeId>& pins, Status& st, const SourceLoc& loc) {
  if (Status v = validate_crossbar(spec); !v) {
    for (Diag& d : v.errors) {
      d.message = fmt::format("crossbar '{}': {}", name, d.message);
      d.loc = loc;
    }
    st.merge(v);
    return nullptr;
  }
  const size_t want = static_cast<size_t>(spec.rows) + spec.cols;
  if (pins.size() != want) {
    st.merge(Status::input(fmt::format("crossbar '{}' has {} rows and {} columns and needs {} nodes ({} row inputs, "
                                       "then {} column outputs), got {}",
                                       name, spec.rows, spec.cols, want, spec.rows, spec.cols, pins.size()),
                           loc));
    return nullptr;
  }
  return std::make_unique<Crossbar>(name, loc, spec, pins);
}

// ---- SPICE export --------------------------------------------------------------------------------

std::string crossbar_spice(const std::string& name, const CrossbarSpec& s, const std::vector<double>& g,
                           const std::vector<std::string>& pins) {
  const int R = s.rows, C = s.cols;
  const CrossbarTopology topo(s);
  auto node = [&](int k) {
    if (k < topo.pins()) return pins[k];
    char kind;
    int x, y;
    topo.label(k, kind, x, y);
    return y >= 0 ? fmt::format("{}_{}{}_{}", name, kind, x, y) : fmt::format("{}_{}{}", name, kind, x);
  };
  std::string out = fmt::format("* crossbar {}: {} x {} cells, rows driven at column 0, columns read at row {}", name,
                                R, C, R - 1);
  auto line = [&out](auto&&... args) {
    out += '\n';
    fmt::format_to(std::back_inserter(out), std::forward<decltype(args)>(args)...);
  };
  topo.for_each_element(s, g, [&](const CrossbarElement& e) {
    using K = CrossbarElement::Kind;
    switch (e.kind) {
      case K::Cell: line("r.{}.c{}_{} {} {} {}", name, e.i, e.j, node(e.a), node(e.b), 1.0 / e.value); break;
      case K::RowWire: line("r.{}.wr{}_{} {} {} {}", name, e.i, e.j, node(e.a), node(e.b), e.value); break;
      case K::ColWire: line("r.{}.wc{}_{} {} {} {}", name, e.i, e.j, node(e.a), node(e.b), e.value); break;
      default: {
        const std::string n = node(e.a);
        if (n != "0") line("c.{}.{}{}_{} {} 0 {}", name, e.kind == K::RowCap ? "cr" : "cc", e.i, e.j, n, e.value);
      }
    }
  });
  return out;
}

// ---- device type ---------------------------------------------------------------------------------

const ParamTable& crossbar_params() {
  using S = CrossbarSpec;
  using F = CrossbarSource;
  using P = ParamDecl;
  static const ParamTable t = {
      P("rows").def(0).range(0, 1e9).doc("number of rows R (0 = from the conductance matrix)").bind<&S::rows>(),
      P("cols").def(0).range(0, 1e9).doc("number of columns C (0 = from the conductance matrix)").bind<&S::cols>(),
      P("g").unit("S").kind(ParamKind::List).range(0, kInf).doc("target conductances, R*C values row-major")
          .bind<&S::g>(),
      P("g_file").kind(ParamKind::Text).doc("HDF5 file with the conductance matrix").bind<&F::g_file>(),
      P("g_dataset").kind(ParamKind::Text).doc("dataset path in g_file, e.g. /layer0/g (R x C)")
          .bind<&F::g_dataset>(),
      P("g_csv").kind(ParamKind::Text).doc("CSV file with the conductance matrix (one row per line)")
          .bind<&F::g_csv>(),
      P("rwire_row").unit("ohm").def(0).range(0, kInf).doc("row wire resistance per segment").bind<&S::rwire_row>(),
      P("rwire_col").unit("ohm").def(0).range(0, kInf).doc("column wire resistance per segment")
          .bind<&S::rwire_col>(),
      P("rdriver").unit("ohm").def(0).range(0, kInf).doc("row driver output resistance").bind<&S::rdriver>(),
      P("rsink").unit("ohm").def(0).range(0, kInf).doc("column sink input resistance").bind<&S::rsink>(),
      P("cwire").unit("F").def(0).range(0, kInf).doc("wire capacitance per segment to ground").bind<&S::cwire>(),
      P("gmin").unit("S").def(0).range(0, kInf).doc("lowest programmable conductance (stuck-off value)")
          .bind<&S::gmin>(),
      P("gmax").unit("S").def(kInf).range(0, kInf).doc("highest programmable conductance (stuck-on value)")
          .bind<&S::gmax>(),
      P("levels").def(0).range(0, 1e9).doc("conductance levels in [gmin, gmax] (0 = analog)").bind<&S::levels>(),
      P("sigma_rel").def(0).range(0, kInf).doc("relative programming variation (std)").bind<&S::sigma_rel>(),
      P("sigma_abs").unit("S").def(0).range(0, kInf).doc("absolute programming variation (std)")
          .bind<&S::sigma_abs>(),
      P("stuck_on").def(0).range(0, 1).doc("fraction of cells stuck at gmax").bind<&S::stuck_on>(),
      P("stuck_off").def(0).range(0, 1).doc("fraction of cells stuck at gmin").bind<&S::stuck_off>(),
      P("seed").def(0).range(0, 9007199254740992.0).doc("seed of variation and stuck cells (0 = from the instance name)")
          .bind<&S::seed>(),
      P("probe_nodes").kind(ParamKind::Flag).def(0).range(0, 1).doc("write the internal nodes to the outputs")
          .bind<&S::probe_nodes>(),
  };
  return t;
}

namespace {

// The spec of a netlist crossbar: parameters, conductances loaded from the given source, shape checks.
Status spec_from_flat(const FlatDevice& fd, CrossbarSpec& s) {
  const ParamValues& p = fd.params;
  const std::string what = fmt::format("crossbar '{}'", fd.name);
  auto has = [&](const char* name) { return p.has(p.index_of(name)); };
  auto fail = [&](const char* name, std::string msg) {
    const int idx = p.index_of(name);
    return Status::input(fmt::format("{}: {}", what, msg), idx >= 0 && p.loc(idx).valid() ? p.loc(idx) : fd.loc);
  };
  CrossbarSource in;
  if (Status st = apply_params(p, s, what.c_str()); !st) return st;
  if (Status st = apply_params(p, in, what.c_str()); !st) return st;

  const int sources = has("g") + has("g_file") + has("g_csv");
  if (sources != 1)
    return fail(sources ? (has("g_csv") ? "g_csv" : "g_file") : "g",
                sources ? "give the conductances once: g (inline list), g_file + g_dataset (HDF5) or g_csv"
                        : "needs conductances: g (inline list, row-major), g_file + g_dataset (HDF5) or g_csv (CSV)");
  if (has("g_dataset") && !has("g_file")) return fail("g_dataset", "g_dataset needs g_file (the HDF5 file)");
  int frows = 0, fcols = 0;  // shape from the file (0 = unknown)
  const char* src = "g";
  if (has("g_file")) {
    src = "g_file";
    if (!has("g_dataset")) return fail(src, "g_file needs g_dataset (the dataset path, e.g. /layer0/g)");
    const std::string path = detail::resolve_include(p.loc(p.index_of(src)).file(), in.g_file);
    if (Status st = read_conductances_hdf5(path, in.g_dataset, frows, fcols, s.g); !st)
      return fail(src, st.errors[0].message);
  } else if (has("g_csv")) {
    src = "g_csv";
    const std::string path = detail::resolve_include(p.loc(p.index_of(src)).file(), in.g_csv);
    if (Status st = read_conductances_csv(path, frows, fcols, s.g); !st) return fail(src, st.errors[0].message);
  }
  const long n = static_cast<long>(s.g.size());
  int rows = s.rows, cols = s.cols;
  if (frows > 0) {
    if (has("rows") && rows != frows)
      return fail("rows", fmt::format("rows = {}, but the conductance matrix has {} rows", rows, frows));
    if (has("cols") && cols != fcols)
      return fail("cols", fmt::format("cols = {}, but the conductance matrix has {} columns", cols, fcols));
    rows = frows;
    cols = fcols;
  } else {
    if (rows == 0 && cols == 0)
      return fail(src, fmt::format("the {} conductances form no matrix shape: give rows and cols", n));
    if (rows == 0 && n % cols == 0) rows = static_cast<int>(n / cols);
    if (cols == 0 && n % rows == 0) cols = static_cast<int>(n / rows);
    if (static_cast<long>(rows) * cols != n)
      return fail(src, fmt::format("{} conductances do not fill {} rows x {} columns", n, rows, cols));
  }
  s.rows = rows;
  s.cols = cols;
  std::string bad;
  if (Status st = validate_crossbar(s, &bad); !st)
    return fail(bad.empty() || p.index_of(bad) < 0 || (bad == "g" && std::string(src) != "g") ? src : bad.c_str(),
                st.errors[0].message);
  const size_t want = static_cast<size_t>(rows) + cols;
  if (fd.nodes.size() != want)
    return Status::input(fmt::format("crossbar '{}' has {} rows and {} columns and needs {} nodes ({} row inputs, "
                                     "then {} column outputs), got {}",
                                     fd.name, rows, cols, want, rows, cols, fd.nodes.size()),
                         fd.loc);
  return {};
}

class CrossbarType : public DeviceType {
 public:
  CrossbarType() {
    key = "crossbar";
    long_name = "crossbar";
    description = "R x C array of programmable conductances with wire resistance/capacitance (YAML only)";
    pins = {"row...", "col..."};
    variadic_pins = true;
    create_reads_files = true;  // the conductance data set (g_file)
    params = crossbar_params();
  }
  std::unique_ptr<Device> create(const FlatDevice& fd, Status& st) const override {
    CrossbarSpec s;
    if (Status e = spec_from_flat(fd, s); !e) {
      st.merge(e);
      return nullptr;
    }
    return std::make_unique<Crossbar>(fd.name, fd.loc, s, fd.nodes);
  }
  std::string spice_line(const FlatDevice& fd, const std::vector<std::string>& pins) const override {
    CrossbarSpec s;
    if (Status e = spec_from_flat(fd, s); !e)
      return fmt::format("* crossbar {} not exported: {}", fd.name, e.errors[0].message);
    s.seed = rnd::effective_seed(s.seed, fd.name);  // as the device does
    return crossbar_spice(fd.name, s, program_crossbar(s), pins);
  }
};

}  // namespace

FlatDevice crossbar_flat_device(const std::string& name, const CrossbarSpec& s, const std::vector<NodeId>& pins) {
  FlatDevice fd;
  fd.name = name;
  fd.type = builtin_catalog().find("crossbar");
  fd.nodes = pins;
  fd.params = read_params(fd.type->params, s);  // every CrossbarSpec line given
  return fd;
}

std::unique_ptr<DeviceType> make_crossbar_type() { return std::make_unique<CrossbarType>(); }

}  // namespace anasim
