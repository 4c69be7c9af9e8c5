// Monte Carlo tolerances (engine/montecarlo.cpp, elaborate Variation): statistics match the tolerances,
// the same seed gives identical numbers whatever the thread count, and the nominal run ignores tolerances.
#include <doctest/doctest.h>
#include <cmath>
#include "devices/registry.hpp"
#include "engine/elaborate.hpp"
#include "engine/montecarlo.hpp"
#include "engine/parse.hpp"
#include "engine/simulate.hpp"
#include "tests/test_support.hpp"

using namespace anasim;

namespace {
const char* kDivider = R"(title: divider
devices:
  - {name: v1, type: v, nodes: [in, 0], dc: 1}
  - {name: r1, type: r, nodes: [in, out], r: 10k, tol: 1%}
  - {name: r2, type: r, nodes: [out, 0], r: {value: 10k, tol: 1%, dist: uniform}}
  - {name: e1, type: e, nodes: [o2, 0, out, 0], gain: {value: 2, tol: 2m}}
analyses:
  - {type: op}
)";

const McMeasurement& find(const McResults& r, const std::string& name) {
  for (const auto& m : r.measurements)
    if (m.name == name) return m;
  FAIL("no measurement " << name);
  return r.measurements.front();
}
}  // namespace

TEST_CASE("montecarlo: spread matches the tolerances, seeds reproduce, threads do not matter") {
  ParsedNetlist pn;
  REQUIRE(parse_yaml_string(kDivider, "div.yaml", builtin_catalog(), pn).ok());
  McResults a, b, c;
  REQUIRE(run_monte_carlo(pn, builtin_catalog(), 4000, 7, a).ok());
  // v(out) = r2 / (r1 + r2): d/dr = +-1/4 relative; r1 gauss sigma 1%, r2 uniform +-1% (sigma 1%/sqrt 3)
  const double s_out = 0.25 * std::sqrt(1e-4 + 1e-4 / 3);
  const McMeasurement& out = find(a, "op/v(out)");
  CHECK(out.mean == doctest::Approx(0.5).epsilon(1e-3));
  CHECK(out.std == doctest::Approx(s_out).epsilon(0.05));  // 4000 draws: std of the std ~1.1%
  // v(o2) = gain * v(out), gain sigma 2e-3 absolute
  const double s_o2 = std::sqrt(4 * s_out * s_out + 0.25 * 4e-6);
  CHECK(find(a, "op/v(o2)").std == doctest::Approx(s_o2).epsilon(0.05));
  CHECK(out.values.size() == 4000u);
  CHECK(out.min >= 0.5 - 6 * s_out);
  CHECK(out.max <= 0.5 + 6 * s_out);

  REQUIRE(run_monte_carlo(pn, builtin_catalog(), 4000, 7, b).ok());
  {
    test_support::OmpThreads one(1);
    REQUIRE(run_monte_carlo(pn, builtin_catalog(), 4000, 7, c).ok());
  }
  CHECK(find(b, "op/v(out)").values == out.values);
  CHECK(find(c, "op/v(out)").values == out.values);

  McResults d;
  REQUIRE(run_monte_carlo(pn, builtin_catalog(), 100, 8, d).ok());
  CHECK(find(d, "op/v(out)").values[0] != out.values[0]);
}

TEST_CASE("montecarlo: the nominal run ignores tolerances; bad tolerances are located errors") {
  ParsedNetlist pn;
  REQUIRE(parse_yaml_string(kDivider, "div.yaml", builtin_catalog(), pn).ok());
  FlatNetlist fn;
  REQUIRE(elaborate(pn, builtin_catalog(), fn).ok());
  RunResults r;
  REQUIRE(simulate(fn, builtin_catalog(), r).ok());
  CHECK(r.analyses[0].find("v(out)")->re[0] == doctest::Approx(0.5).epsilon(1e-12));

  ParsedNetlist bad;
  REQUIRE(parse_yaml_string("devices:\n  - {name: v1, type: v, nodes: [a, 0], dc: 1}\n"
                            "  - {name: r1, type: r, nodes: [a, 0], r: {value: 1k, tol: -1%}}\n"
                            "analyses:\n  - {type: op}\n",
                            "bad.yaml", builtin_catalog(), bad).ok());
  FlatNetlist fb;
  Status st = elaborate(bad, builtin_catalog(), fb);
  REQUIRE_FALSE(st.ok());
  CHECK(st.errors[0].loc.line == 3);
  CHECK(st.errors[0].message.find("tolerance must be >= 0") != std::string::npos);

  ParsedNetlist huge;  // a draw outside the parameter's range is reported, not silently clipped
  REQUIRE(parse_yaml_string("devices:\n  - {name: v1, type: v, nodes: [a, 0], dc: 1}\n"
                            "  - {name: r1, type: r, nodes: [a, 0], r: {value: 1k, tol: 300%}}\n"
                            "analyses:\n  - {type: op}\n",
                            "huge.yaml", builtin_catalog(), huge).ok());
  McResults m;
  Status sm = run_monte_carlo(huge, builtin_catalog(), 50, 1, m);
  REQUIRE_FALSE(sm.ok());
  CHECK(sm.errors[0].message.find("outside its range") != std::string::npos);
}
