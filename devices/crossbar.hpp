// Resistive crossbar: an R x C array of programmable conductances with wire, driver and sink resistances
// and wire capacitance, expanded into internal nodes in O(R*C). YAML type "crossbar"; also built directly
// from a CrossbarSpec (make_crossbar) by the neural-network layer.
//
// Topology. Pins: R row inputs, then C column outputs. Cell (i, j), i = 0..R-1, j = 0..C-1, is a conductance
// g(i,j) between row node r(i,j) and column node c(i,j). Rows are driven from the j = 0 end, columns are read
// out at the i = R-1 end (inputs on the left, outputs at the bottom); the far ends are open:
//
//   row pin i --[rdriver + rwire_row]-- r(i,0) --[rwire_row]-- r(i,1) -- ... --[rwire_row]-- r(i,C-1)
//   col pin j --[rsink + rwire_col]-- c(R-1,j) --[rwire_col]-- c(R-2,j) -- ... --[rwire_col]-- c(0,j)
//
// So every line has one segment per cell: the segment from the driver (sink) to the first cell, and one
// between each pair of adjacent cells. Each segment carries cwire to ground, lumped at its cell end: r(i,j)
// and c(i,j) each get exactly one cwire. Zero-resistance links are merged, not stamped:
//   rwire > 0                     one internal node per cell and line ("<inst>#r<i>_<j>", "<inst>#c<i>_<j>");
//   rwire = 0, rdriver/rsink > 0  one internal node per line ("<inst>#r<i>", "<inst>#c<j>") carrying all C
//                                 (R) cells and the line's total capacitance;
//   rwire = 0, rdriver/rsink = 0  the cells connect to the pin itself (its capacitance too).
// Internal nodes are hidden from the outputs unless probe_nodes is set.
//
// Programming (program_crossbar), per cell, deterministic for a seed:
//   1. stuck cells: with probability stuck_on the cell is gmax, else with probability stuck_off it is gmin;
//      stuck cells skip steps 2-4;
//   2. the target is clipped to [gmin, gmax];
//   3. levels >= 2: rounded to the nearest of `levels` equally spaced values gmin .. gmax;
//   4. variation: g * (1 + sigma_rel * n1) + sigma_abs * n2 (n1, n2 standard normal), clipped to [gmin, gmax]
//      again (a cell cannot be programmed outside its conductance window).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include "engine/elaborate.hpp"
#include "engine/stamps.hpp"

namespace anasim {

struct CrossbarSpec {
  int rows = 0;                 // R: row (input) lines
  int cols = 0;                 // C: column (output) lines
  std::vector<double> g;        // size R*C, row-major: g[i*C + j] = target conductance of cell (i, j) [S], >= 0
  double rwire_row = 0.0;       // [ohm] per row-wire segment
  double rwire_col = 0.0;       // [ohm] per column-wire segment
  double rdriver = 0.0;         // [ohm] row driver output resistance (in series with the first row segment)
  double rsink = 0.0;           // [ohm] column sink input resistance (in series with the first column segment)
  double cwire = 0.0;           // [F] per wire segment, to ground
  double gmin = 0.0;            // [S] lower end of the programmable range (and stuck-off value)
  double gmax = kInf;           // [S] upper end (and stuck-on value); must be finite with levels or stuck_on
  int levels = 0;               // 0 = analog; >= 2 = equally spaced levels in [gmin, gmax]
  double sigma_rel = 0.0;       // relative programming variation (std of g_prog / g - 1)
  double sigma_abs = 0.0;       // [S] absolute programming variation (std)
  double stuck_on = 0.0;        // fraction of cells stuck at gmax, 0..1
  double stuck_off = 0.0;       // fraction of cells stuck at gmin, 0..1 (stuck_on + stuck_off <= 1)
  std::uint64_t seed = 0;       // seed of variation and stuck cells; 0 = derived from the instance name by the
                                // device (program_crossbar itself uses the value as is)
  bool probe_nodes = false;     // write internal nodes to the outputs
};

// Where a netlist crossbar's conductances come from when not inline (`g`): the crossbar device's other lines.
struct CrossbarSource {
  std::string g_file;           // HDF5 file with the R x C conductance matrix [S], relative to the netlist
  std::string g_dataset;        // dataset path in g_file, e.g. /layer0/g
  std::string g_csv;            // CSV file with the matrix (one row per line)
};

// The crossbar device's parameter table: lines bound to CrossbarSpec and to CrossbarSource.
const ParamTable& crossbar_params();

// ---- topology: the one enumeration of a tile's elements ------------------------------------------
// The MNA device, the SPICE export and the NN port reduction (nn/port_reduction.cpp) all walk it.

// One element of a tile (see the file comment), on tile-local nodes.
struct CrossbarElement {
  enum class Kind { Cell, RowWire, ColWire, RowCap, ColCap };
  Kind kind;
  int i, j;      // Cell: the cell. Wires: the segment ending at cell (i, j) (RowWire j = 0 and ColWire i = R-1 are
                 // the driver and sink segments). Capacitors: the cell whose node carries it ((i, 0) and (0, j)
                 // for a per-line or pin node carrying the whole line's capacitance).
  int a, b;      // tile-local nodes (CrossbarTopology); b = -1 (ground) for capacitors
  double value;  // Cell: conductance [S] (> 0); wires: resistance [ohm] (> 0); capacitors: capacitance [F] (> 0)
};

// Tile-local node numbers: row pins 0 .. R-1, column pins R .. R+C-1, then the internal row-line nodes
// (per cell: R*C, cell (i, j) at i*C + j; per line: R), then the internal column-line nodes (per cell: R*C;
// per line: C). Each consumer maps these numbers to its own nodes (NodeId, node names, port-network indices).
class CrossbarTopology {
 public:
  enum class Line { Pin, PerLine, PerCell };  // where a line's cells connect (see the file comment)
  explicit CrossbarTopology(const CrossbarSpec& s)
      : rows_(s.rows), cols_(s.cols),
        row_line_(s.rwire_row > 0 ? Line::PerCell : s.rdriver > 0 ? Line::PerLine : Line::Pin),
        col_line_(s.rwire_col > 0 ? Line::PerCell : s.rsink > 0 ? Line::PerLine : Line::Pin) {}
  Line row_line() const { return row_line_; }
  Line col_line() const { return col_line_; }
  int pins() const { return rows_ + cols_; }
  int row_internal() const { return count(row_line_, rows_); }  // internal row-line nodes
  int col_internal() const { return count(col_line_, cols_); }  // internal column-line nodes
  int nodes() const { return pins() + row_internal() + col_internal(); }
  // Node of the row (column) end of cell (i, j).
  int row_node(int i, int j) const {
    switch (row_line_) {
      case Line::PerCell: return pins() + i * cols_ + j;
      case Line::PerLine: return pins() + i;
      default: return i;
    }
  }
  int col_node(int i, int j) const {
    const int base = pins() + row_internal();
    switch (col_line_) {
      case Line::PerCell: return base + i * cols_ + j;
      case Line::PerLine: return base + j;
      default: return rows_ + j;
    }
  }
  // The internal nodes in a fill-reducing elimination order (nested dissection of the grid of cells: a column
  // of row nodes, or a row of column nodes, separates the cells on either side; the cut goes across the longer
  // side, halves first, separator last, down to small blocks). Empty unless both lines have a node per cell.
  std::vector<int> elimination_order() const;
  // Label of internal node k (pins() <= k < nodes()): kind 'r' or 'c' and indices (i, j) per cell, or (line, -1)
  // per line; the device names it "<inst>#<kind><x>[_<y>]", the SPICE export "<inst>_<kind><x>[_<y>]".
  void label(int k, char& kind, int& x, int& y) const {
    k -= pins();
    const bool row = k < row_internal();
    if (!row) k -= row_internal();
    kind = row ? 'r' : 'c';
    if ((row ? row_line_ : col_line_) == Line::PerCell) {
      x = k / cols_;
      y = k % cols_;
    } else {
      x = k;
      y = -1;
    }
  }

  // Calls f(const CrossbarElement&) for every element of a tile with spec s and programmed conductances g (size
  // R*C): the cells with g > 0 (row-major), then per row the driver segment and the wire segments from the driver
  // on, then per column the sink segment and the segments from the sink on, then (cwire > 0) the capacitors of
  // the row nodes (row-major) and of the column nodes (per cell row-major, else per column).
  template <class F>
  void for_each_element(const CrossbarSpec& s, const std::vector<double>& g, F&& f) const {
    using K = CrossbarElement::Kind;
    const int R = rows_, C = cols_;
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) {
        const double gij = g[static_cast<size_t>(i) * C + j];
        if (gij > 0) f(CrossbarElement{K::Cell, i, j, row_node(i, j), col_node(i, j), gij});
      }
    for (int i = 0; i < R && row_line_ != Line::Pin; ++i) {
      f(CrossbarElement{K::RowWire, i, 0, i, row_node(i, 0), s.rdriver + s.rwire_row});
      if (row_line_ == Line::PerCell)
        for (int j = 1; j < C; ++j)
          f(CrossbarElement{K::RowWire, i, j, row_node(i, j - 1), row_node(i, j), s.rwire_row});
    }
    for (int j = 0; j < C && col_line_ != Line::Pin; ++j) {
      f(CrossbarElement{K::ColWire, R - 1, j, R + j, col_node(R - 1, j), s.rsink + s.rwire_col});
      if (col_line_ == Line::PerCell)
        for (int i = R - 2; i >= 0; --i)
          f(CrossbarElement{K::ColWire, i, j, col_node(i + 1, j), col_node(i, j), s.rwire_col});
    }
    if (!(s.cwire > 0)) return;
    for (int i = 0; i < R; ++i) {
      if (row_line_ == Line::PerCell)
        for (int j = 0; j < C; ++j) f(CrossbarElement{K::RowCap, i, j, row_node(i, j), -1, s.cwire});
      else
        f(CrossbarElement{K::RowCap, i, 0, row_node(i, 0), -1, C * s.cwire});
    }
    if (col_line_ == Line::PerCell) {
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) f(CrossbarElement{K::ColCap, i, j, col_node(i, j), -1, s.cwire});
    } else {
      for (int j = 0; j < C; ++j) f(CrossbarElement{K::ColCap, 0, j, col_node(0, j), -1, R * s.cwire});
    }
  }

 private:
  int count(Line l, int lines) const { return l == Line::PerCell ? rows_ * cols_ : l == Line::PerLine ? lines : 0; }
  int rows_, cols_;
  Line row_line_, col_line_;
};

// Checks sizes and ranges. On error, *param (if given) names the offending parameter ("" if none).
Status validate_crossbar(const CrossbarSpec& s, std::string* param = nullptr);

// Programmed conductances, size R*C row-major [S] (see the file comment). The spec must be valid.
std::vector<double> program_crossbar(const CrossbarSpec& s);

// Reads a conductance matrix [S]: an HDF5 dataset (2-D R x C, or 1-D of R*C values read row-major) or a CSV
// file (one row per line; ',', ';' or white space between values; '#' starts a comment). rows/cols come back
// as the matrix shape (0 for a 1-D dataset). Errors name the file (and line). The HDF5 file is read in a child
// process (engine/isolated_read.hpp), so a file that crashes or hangs libhdf5 is an error too.
Status read_conductances_hdf5(const std::string& path, const std::string& dataset, int& rows, int& cols,
                              std::vector<double>& g);
Status read_conductances_csv(const std::string& path, int& rows, int& cols, std::vector<double>& g);

class Crossbar : public Device {
 public:
  // pins: R row nodes then C column nodes. `spec` must be valid; conductances are programmed here (seed 0 is
  // replaced by one derived from the name, see rnd::effective_seed; spec().seed is the seed used).
  Crossbar(std::string name, SourceLoc loc, const CrossbarSpec& spec, std::vector<NodeId> pins);
  const CrossbarSpec& spec() const { return spec_; }
  const std::vector<double>& conductances() const { return g_; }  // programmed, size R*C row-major [S]

  void allocate(Allocator& a) override;
  void declare(PatternBuilder& p) override;
  void load(LoadContext& ctx) override;
  void load_ac(AcLoadContext& ctx) override;
  void update_states(LoadContext& ctx) override;
  void init_uic(LoadContext& ctx) override;
  void dc_paths(std::vector<NodePair>& out) const override;
  void elimination_order(std::vector<NodeId>& out) const override;

 private:
  struct Link {  // conductance between two nodes
    NodeId a, b;
    double g;    // [S]
    AdmittanceStamp y;
  };
  struct Cap {   // capacitance from a node to ground
    NodeId n;
    double c;    // [F]
    UnknownIndex u;
    Offset diag = 0, rhs = 0;
    int state = 0;
  };
  void build_elements();

  CrossbarSpec spec_;
  std::vector<double> g_;        // programmed conductances, size R*C [S]
  CrossbarTopology topo_;
  std::vector<NodeId> nodes_;    // per tile-local node (CrossbarTopology): the pins, then the internal nodes
  std::vector<Link> links_;      // cells and wire segments with nonzero conductance
  std::vector<Cap> caps_;        // wire capacitances (merged per node), empty when cwire = 0
};

// Builds a crossbar device without a netlist. pins: R row nodes then C column nodes. Returns nullptr and
// fills st on an invalid spec.
std::unique_ptr<Crossbar> make_crossbar(const std::string& name, const CrossbarSpec& spec,
                                        const std::vector<NodeId>& pins, Status& st, const SourceLoc& loc = {});

// A FlatDevice of type "crossbar" carrying the spec inline (g as a list parameter), for netlists assembled
// in code (simulate, export_spice). pins: R rows then C columns.
FlatDevice crossbar_flat_device(const std::string& name, const CrossbarSpec& spec, const std::vector<NodeId>& pins);

// The crossbar as explicit ngspice elements, one per line: cells "r.<inst>.c<i>_<j>", wire segments
// "r.<inst>.wr<i>_<j>" / "r.<inst>.wc<i>_<j>", capacitors "c.<inst>.cr<i>_<j>" / "c.<inst>.cc<i>_<j>",
// internal nodes "<inst>_r<i>_<j>" / "<inst>_c<i>_<j>" (per line: "<inst>_r<i>" / "<inst>_c<j>").
// g: programmed conductances (size R*C); pin_names: R rows then C columns.
std::string crossbar_spice(const std::string& name, const CrossbarSpec& spec, const std::vector<double>& g,
                           const std::vector<std::string>& pin_names);

}  // namespace anasim
