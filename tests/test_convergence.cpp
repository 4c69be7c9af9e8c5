// Convergence where ngspice converges (issue 14): Schmitt triggers built from level-1 op-amps with positive
// feedback, which need the operating-point strategy's second pass without tanh step limiting (engine/newton.cpp).
#include <doctest/doctest.h>
#include <cmath>
#include <string>
#include <fmt/format.h>
#include "circuit_helpers.hpp"
#include "ngspice_helpers.hpp"

using namespace anasim;

namespace {

// Schmitt trigger from one level-1 op-amp (part `model` of devices/opamp.cpp, rails +-15 V) with positive
// feedback through 100k / 10k, swept over -5..5 V in 10 mV steps.
// Inverting: vin at the inverting input, p = out * 10k / 110k; the output falls from its high limit vhi when
// vin passes vhi / 11 + vos. Non-inverting: vin through 10k to p, p through 100k to out; from the low limit vlo
// it rises when p + vos = (10 vin + vlo) / 11 + vos passes 0, i.e. vin > -(vlo + 11 vos) / 10.
std::string schmitt(const std::string& model, bool inverting) {
  const std::string net = inverting ? "  - {name: r1, type: r, nodes: [out, p], r: 100k}\n"
                                      "  - {name: r2, type: r, nodes: [p, 0], r: 10k}\n"
                                      "  - {name: u1, type: opamp, nodes: [p, in, out], model: MODEL, level: 1}\n"
                                    : "  - {name: r1, type: r, nodes: [in, p], r: 10k}\n"
                                      "  - {name: r2, type: r, nodes: [p, out], r: 100k}\n"
                                      "  - {name: u1, type: opamp, nodes: [p, 0, out], model: MODEL, level: 1}\n";
  std::string text = "title: Schmitt trigger\ndevices:\n  - {name: vin, type: v, nodes: [in, 0], dc: 0}\n" + net +
                     "analyses:\n  - {type: dc, source: vin, start: -5, stop: 5, step: 0.01}\n";
  text.replace(text.find("MODEL"), 5, model);
  return text;
}

struct Part {
  const char* name;
  double vos, vhi, vlo, rout;  // [V] input offset, output limits (rails -+ headroom), [ohm] output resistance
};                              // (the part table of devices/opamp.cpp)
constexpr Part kParts[] = {{"opa1611", 100e-6, 15 - 0.6, -15 + 0.6, 40}, {"lm358", 3e-3, 15 - 1.5, -15 + 0.005, 50}};

}  // namespace

TEST_CASE("convergence: Schmitt triggers of level-1 op-amps switch where ngspice does") {
  for (const Part& part : kParts) {
    for (bool inverting : {true, false}) {
      const std::string name = part.name;
      CAPTURE(name);
      CAPTURE(inverting);
      const FlatNetlist fn = test::elaborate_yaml(schmitt(part.name, inverting));
      const RunResults r = test::simulate_flat(fn);
      const AnalysisResult& dc = r.analyses.at(0);
      REQUIRE(dc.rows() == 1001);
      const Signal& out = test::signal(r, 0, "v(out)");
      // Output limits under the 110k feedback divider's load (to ground when inverting, to vin ~ 1.5 V at the
      // non-inverting threshold: a shift below 1 mV there).
      const double load = 110e3 / (110e3 + part.rout);
      const double vhi = part.vhi * load, vlo = part.vlo * load;
      const double threshold = inverting ? vhi / 11 + part.vos : -(vlo + 11 * part.vos) / 10;
      const double before = inverting ? vhi : vlo, after = inverting ? vlo : vhi;
      // The output sits at one limit up to the threshold and at the other after it.
      for (int k = 0; k < dc.rows(); ++k) {
        CAPTURE(dc.sweep[k]);
        CHECK(std::fabs(out.re[k] - (dc.sweep[k] < threshold ? before : after)) < 0.02);
      }
      if (test::ngspice_available()) {
        const auto dir = test::scratch_dir(fmt::format("schmitt_{}_{}", part.name, inverting ? "inv" : "noninv"));
        const auto deck = dir / "schmitt.cir";
        REQUIRE(export_spice(fn, deck.string()).ok());
        const std::vector<RawPlot> plots = test::run_ngspice(deck);
        const RawPlot* ng = nullptr;
        for (const RawPlot& p : plots)
          if (p.plotname.rfind("DC transfer", 0) == 0) ng = &p;
        REQUIRE(ng != nullptr);
        // Every point, relative to |ngspice| plus 1 uV / 1 pA (ngspice's sweep value 0 is -6e-14): both
        // simulators converge to reltol = 1e-3.
        const test::Comparison cmp = test::compare_points(dc, *ng, 1e-6, 1e-12);
        INFO("worst " << cmp.worst_name);
        CHECK(cmp.compared >= 3);
        CHECK(cmp.worst < 1e-3);
      } else {
        MESSAGE("ngspice not on PATH: the cross-check of the Schmitt triggers is skipped");
      }
    }
  }
}

TEST_CASE("convergence: a Schmitt trigger's operating point beyond its threshold, from rest") {
  // vin = 5 V at the inverting input: the only solution has the output at the low limit; Newton from rest
  // starts on the high tail (the input offset is positive), where step limiting kept it.
  std::string text = schmitt("lm358", true);
  text.replace(text.find("dc: 0}"), 6, "dc: 5}");
  text.replace(text.find("{type: dc"), std::string::npos, "{type: op}\n");
  const RunResults r = test::simulate_flat(test::elaborate_yaml(text));
  CHECK(test::op_value(r, 0, "v(out)") == doctest::Approx(-15 + 0.005).epsilon(1e-3));
}
