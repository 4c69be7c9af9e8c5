// .meas / .measure (ngspice syntax) evaluated on the result table of a tran, ac or dc analysis, with ngspice's
// algorithms (src/frontend/com_measure2.c): crossings interpolated linearly between points, AVG by the
// trapezoidal rule over the points in the window, INTEG/RMS by Simpson's rules where steps are equal.
#pragma once
#include <string>
#include <vector>
#include "engine/expr.hpp"
#include "engine/netlist.hpp"
#include "engine/results.hpp"

namespace anasim {

// Runs the requests whose analysis is a.kind ("tran", "ac", "dc") on `a` and appends one MeasureResult per
// request to a.measures (a failed measurement is a result with its error, as ngspice goes on after one). The
// numbers of a request (VAL=, TD=, FROM=, ...) are evaluated in `scope`; an error there is a located Status.
Status run_measures(const std::vector<MeasureSpec>& specs, const Scope& scope, AnalysisResult& a);

// The node voltages and branch currents the requests read ("v(out)" for vdb(out), v(a) and v(b) for v(a,b),
// ground left out), for a .save list that must keep them (ngspice saves them too).
std::vector<std::string> measure_signals(const std::vector<MeasureSpec>& specs);

}  // namespace anasim
