// Reader for SPICE raw files as written by ngspice (`write` in a .control block, or `ngspice -b -r`),
// in both the ASCII and the binary flavour. Used to cross-check anasim against ngspice.
#pragma once
#include <string>
#include <vector>
#include "engine/types.hpp"

namespace anasim {

// One plot (one analysis) of a raw file. Variable 0 is the plot's scale ("time", "frequency",
// "v(v-sweep)", ...); ngspice 39 names node voltages "v(node)" and branch currents "i(dev)".
struct RawPlot {
  std::string title;                    // "Title:" line, as written
  std::string plotname;                 // "Operating Point", "DC transfer characteristic", "Transient Analysis", "AC Analysis"
  bool complex = false;                 // "Flags: complex"
  std::vector<std::string> names;       // size nvars; lower-cased names: "time", "v(out)", "i(v1)", "v(x1.n1)"
  std::vector<std::string> types;       // size nvars; "time", "voltage", "current", "frequency" (extra "grid=3" dropped)
  std::vector<std::vector<double>> re;  // size nvars x npoints: real parts (the values, for a real plot)
  std::vector<std::vector<double>> im;  // size nvars x npoints if complex, else empty
  int points() const { return re.empty() ? 0 : static_cast<int>(re[0].size()); }
  // Index of the variable called NAME (case-insensitive), or -1. Also accepts the other spelling of the
  // same quantity: "out" for "v(out)" and "v1#branch" for "i(v1)", in either direction.
  int find(const std::string& name) const;
};

// Reads every plot of the raw file PATH (in file order) into PLOTS (replacing its contents).
// Fails with ErrorKind::Other if the file cannot be read, ErrorKind::Input if it is malformed or truncated.
Status read_spice_raw(const std::string& path, std::vector<RawPlot>& plots);

}  // namespace anasim
