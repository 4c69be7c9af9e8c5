// DAC and ADC tests: exact transfer curves (in circuits and through the C++ functions), INL/DNL as given,
// random INL/DNL and noise statistics, seeding, output/input resistance, probes, errors.
#include <doctest/doctest.h>
#include <cmath>
#include "devices/adc.hpp"
#include "devices/dac.hpp"
#include "devices/random.hpp"
#include "engine/circuit.hpp"
#include "tests/ngspice_helpers.hpp"

using namespace anasim;
using namespace anasim::test;

namespace {

RunResults run_yaml(const std::string& y) { return simulate_flat(elaborate_yaml(y)); }

double op(const RunResults& r, const std::string& name) {
  const Signal* s = r.analyses.at(0).find(name);
  INFO(name);
  REQUIRE(s != nullptr);
  return s->re.at(0);
}

Diag error_of(const std::string& y) {
  ParsedNetlist pn;
  FlatNetlist fn;
  Status st = parse_yaml_string(y, "bad.yaml", builtin_catalog(), pn);
  if (st) st = elaborate(pn, builtin_catalog(), fn);
  Circuit c;
  if (st) st = c.build(fn, builtin_catalog());
  REQUIRE(!st.ok());
  return st.errors[0];
}

}  // namespace

TEST_CASE("dac: every code of a 5-bit DAC gives vmin + code * lsb") {
  const int bits = 5, n = 1 << bits;
  std::string y = "devices:\n";
  for (int k = 0; k < n; ++k)
    y += fmt::format("  - {{name: d{0}, type: dac, nodes: [o{0}, ref], bits: {1}, vmin: -0.4, vmax: 0.8, code: {0}}}\n",
                     k, bits);
  y += "  - {name: vref, type: v, nodes: [ref, 0], dc: 0.25}\nanalyses: [{type: op}]\n";
  const RunResults r = run_yaml(y);
  const double lsb = 1.2 / (n - 1);
  for (int k = 0; k < n; ++k) {
    CHECK(op(r, fmt::format("v(o{})", k)) == doctest::Approx(0.25 - 0.4 + k * lsb).epsilon(1e-14));
    CHECK(op(r, fmt::format("code(d{})", k)) == k);
  }
}

TEST_CASE("dac: value is quantized to the nearest code and clipped") {
  DacSpec s;
  s.bits = 3;
  s.vmin = 0;
  s.vmax = 0.7;  // lsb 0.1
  CHECK(dac_quantize(s, 0.0) == 0);
  CHECK(dac_quantize(s, 0.149) == 1);
  CHECK(dac_quantize(s, 0.151) == 2);
  CHECK(dac_quantize(s, 0.66) == 7);
  CHECK(dac_quantize(s, 5.0) == 7);
  CHECK(dac_quantize(s, -1.0) == 0);
  CHECK(dac_quantize(s, std::nan("")) == 0);
  const RunResults r = run_yaml(
      "devices:\n  - {name: d1, type: dac, nodes: [o, 0], bits: 3, vmax: 0.7, value: 0.33}\n"
      "  - {name: d2, type: dac, nodes: [p, 0], bits: 3, vmax: 0.7, value: 9}\nanalyses: [{type: op}]\n");
  CHECK(op(r, "code(d1)") == 3);
  CHECK(op(r, "v(o)") == doctest::Approx(0.3).epsilon(1e-14));
  CHECK(op(r, "code(d2)") == 7);
  CHECK(op(r, "v(p)") == doctest::Approx(0.7).epsilon(1e-14));
}

TEST_CASE("dac: INL and DNL lists appear in the transfer curve as given") {
  DacSpec s;
  s.bits = 3;
  s.vmin = 0;
  s.vmax = 0.7;
  s.inl = {0, 0.1, -0.2, 0.3, 0, -0.1, 0.25, 0};
  const double lsb = dac_lsb(s);
  for (int k = 0; k < 8; ++k) CHECK((dac_output(s, k) - k * lsb) / lsb == doctest::Approx(s.inl[k]).epsilon(1e-12));
  s.inl.clear();
  s.dnl = {0.1, -0.2, 0.05, 0, 0.3, -0.1, 0.2};
  for (int m = 0; m < 7; ++m)
    CHECK((dac_output(s, m + 1) - dac_output(s, m)) / lsb - 1 == doctest::Approx(s.dnl[m]).epsilon(1e-12));
  // In a netlist, through a loaded output resistance: v = vd * rl / (rl + rout).
  const RunResults r = run_yaml(
      "devices:\n  - {name: d1, type: dac, nodes: [o, 0], bits: 3, vmax: 0.7, code: 5, rout: 1k, "
      "dnl: [0.1, -0.2, 0.05, 0, 0.3, -0.1, 0.2], energy_per_conversion: 3p}\n"
      "  - {name: rl, type: r, nodes: [o, 0], r: 3k}\nanalyses: [{type: op}]\n");
  CHECK(op(r, "v(o)") == doctest::Approx(dac_output(s, 5) * 0.75).epsilon(1e-13));
  CHECK(op(r, "energy(d1)") == 3e-12);
}

TEST_CASE("dac: random INL/DNL and output noise follow their sigmas; same seed, same output") {
  DacSpec s;
  s.bits = 12;
  s.vmax = 4.095;  // lsb 1 mV
  s.seed = 3;
  SUBCASE("random INL") {
    s.inl_sigma = 0.4;
    double m = 0, m2 = 0;
    const int n = 1 << s.bits;
    for (int k = 0; k < n; ++k) {
      const double e = (dac_output(s, k) - k * dac_lsb(s)) / dac_lsb(s);
      m += e;
      m2 += e * e;
    }
    m /= n;
    const double sd = std::sqrt(m2 / n - m * m);
    CHECK(std::fabs(m) < 4 * 0.4 / std::sqrt(n));
    CHECK(std::fabs(sd / 0.4 - 1) < 0.05);
  }
  SUBCASE("random DNL") {
    s.dnl_sigma = 0.2;
    const int n = 1 << s.bits;
    double prev = dac_output(s, 0), m = 0, m2 = 0;
    for (int k = 1; k < n; ++k) {
      const double v = dac_output(s, k), d = (v - prev) / dac_lsb(s) - 1;
      prev = v;
      m += d;
      m2 += d * d;
    }
    m /= n - 1;
    const double sd = std::sqrt(m2 / (n - 1) - m * m);
    CHECK(std::fabs(m) < 4 * 0.2 / std::sqrt(n - 1));
    CHECK(std::fabs(sd / 0.2 - 1) < 0.05);
  }
  SUBCASE("output noise: one draw per instance, std over seeds") {
    s.noise = 2e-3;
    const int n = 4000;
    double m = 0, m2 = 0;
    for (int seed = 1; seed <= n; ++seed) {
      s.seed = seed;
      const double e = dac_noise(s);
      m += e;
      m2 += e * e;
    }
    m /= n;
    const double sd = std::sqrt(m2 / n - m * m);
    MESSAGE("DAC noise 2 mV over " << n << " seeds: mean " << m << " V, std " << sd << " V");
    CHECK(std::fabs(m) < 4 * s.noise / std::sqrt(n));
    CHECK(std::fabs(sd / s.noise - 1) < 0.05);
    // In circuits: same seed, same voltage; another seed, another one.
    const std::string y = "devices:\n  - {name: d1, type: dac, nodes: [o, 0], bits: 8, code: 100, noise: 1m, seed: SEED}\n"
                          "analyses: [{type: op}]\n";
    auto with = [&](int seed) {
      std::string t = y;
      t.replace(t.find("SEED"), 4, std::to_string(seed));
      return op(run_yaml(t), "v(o)");
    };
    CHECK(with(5) == with(5));
    CHECK(with(5) != with(6));
    CHECK(std::fabs(with(5) - 100.0 / 255) < 6e-3);
  }
}

TEST_CASE("adc: transfer curve over a dc sweep is exact, with clipping, offset and gain error") {
  const RunResults r = run_yaml(
      "devices:\n  - {name: vin, type: v, nodes: [in, 0], dc: 0}\n"
      "  - {name: vb, type: v, nodes: [b, 0], dc: 0}\n"
      "  - {name: adc1, type: adc, nodes: [in, 0], bits: 4, vmin: 0, vmax: 1.5}\n"
      "  - {name: adc2, type: adc, nodes: [in, b, 0], bits: 4, vmin: 0, vmax: 1.5, offset: 0.05, gain_error: -0.02, "
      "energy: 1p}\n"
      "analyses: [{type: dc, source: vin, start: -0.3, stop: 1.8, step: 0.0123}]\n");
  const AnalysisResult& a = r.analyses.at(0);
  const Signal* c1 = a.find("code(adc1)");
  const Signal* c2 = a.find("code(adc2.0)");
  const Signal* c3 = a.find("code(adc2.1)");
  const Signal* e = a.find("energy(adc2)");
  REQUIRE(c1);
  REQUIRE(c2);
  REQUIRE(c3);
  REQUIRE(e);
  const double lsb = 0.1;
  int distinct = 0;
  for (int p = 0; p < a.rows(); ++p) {
    const double v = a.find("v(in)")->re[p];
    auto ideal = [&](double x) { return std::min(15.0, std::max(0.0, std::round(x / lsb))); };
    CHECK(c1->re[p] == ideal(v));
    CHECK(c2->re[p] == ideal(v * 0.98 + 0.05));
    CHECK(c3->re[p] == ideal(0.05));
    CHECK(e->re[p] == 2e-12);
    distinct += p > 0 && c1->re[p] != c1->re[p - 1];
  }
  CHECK(distinct == 15);  // every code from 0 to 15 is reached, and clipping holds the ends
  CHECK(c1->re.front() == 0);
  CHECK(c1->re.back() == 15);
}

TEST_CASE("adc: DAC -> ADC round trip returns every code") {
  DacSpec d;
  d.bits = 8;
  d.vmin = -1;
  d.vmax = 1.55;
  AdcSpec a;
  a.bits = 8;
  a.vmin = -1;
  a.vmax = 1.55;
  for (long k = 0; k <= dac_max_code(d); ++k) REQUIRE(adc_convert(a, dac_output(d, k), 0, 0) == k);
}

TEST_CASE("adc: comparator noise statistics, seeding, and input resistance") {
  SUBCASE("noise std in codes over many samples") {
    AdcSpec a;
    a.bits = 10;
    a.vmin = 0;
    a.vmax = 1.023;  // lsb 1 mV
    a.noise = 8e-3;  // 8 LSB
    a.seed = 11;
    const int n = 20000;
    double m = 0, m2 = 0;
    for (int s = 0; s < n; ++s) {
      const double c = static_cast<double>(adc_convert(a, 0.5, s, 0)) - 500;
      m += c;
      m2 += c * c;
    }
    m /= n;
    const double sd = std::sqrt(m2 / n - m * m);
    const double expect = std::sqrt(64.0 + 1.0 / 12);  // noise plus quantization
    MESSAGE("ADC noise 8 LSB over " << n << " samples: mean " << m << " LSB, std " << sd << " LSB");
    CHECK(std::fabs(m) < 4 * 8 / std::sqrt(n));
    CHECK(std::fabs(sd / expect - 1) < 0.03);
  }
  SUBCASE("same seed, same codes in a transient; another seed, other codes") {
    const std::string y =
        "devices:\n  - {name: vin, type: v, nodes: [in, 0], sin: [0.5, 0.3, 1meg]}\n"
        "  - {name: adc, type: adc, nodes: [in, 0], bits: 8, noise: 5m, seed: SEED}\n"
        "analyses: [{type: tran, tstep: 10n, tstop: 2u}]\n";
    auto codes = [&](int seed) {
      std::string t = y;
      t.replace(t.find("SEED"), 4, std::to_string(seed));
      return run_yaml(t).analyses.at(0).find("code(adc)")->re;
    };
    const auto a = codes(1), b = codes(1), c = codes(2);
    CHECK(a.size() > 100);
    CHECK(a == b);
    CHECK(a != c);
  }
  SUBCASE("rin loads the source; rin = 0 is infinite") {
    const RunResults r = run_yaml(
        "devices:\n  - {name: v1, type: v, nodes: [s, 0], dc: 1}\n"
        "  - {name: r1, type: r, nodes: [s, a], r: 1meg}\n  - {name: r2, type: r, nodes: [s, b], r: 1meg}\n"
        "  - {name: adc1, type: adc, nodes: [a, 0], rin: 3meg}\n"
        "  - {name: adc2, type: adc, nodes: [b, 0], rin: 0}\n"
        "  - {name: r3, type: r, nodes: [b, 0], r: 1e15}\n"
        "analyses: [{type: op}]\n");
    CHECK(op(r, "v(a)") == doctest::Approx(0.75).epsilon(1e-12));
    CHECK(op(r, "v(b)") == doctest::Approx(1.0).epsilon(1e-8));
    CHECK(op(r, "code(adc1)") == 191);  // 0.75 * 255 = 191.25
    CHECK(op(r, "code(adc2)") == 255);
  }
}

TEST_CASE("dac/adc: netlist errors are located") {
  Diag d = error_of("devices:\n  - {name: a1, type: adc, nodes: [x], bits: 4}\n  - {name: r, type: r, nodes: [x, 0], r: 1}\n");
  CHECK(d.message.find("needs the sampled input nodes followed by the reference node") != std::string::npos);
  CHECK(d.loc.line == 2);
  d = error_of("devices:\n  - {name: d1, type: dac, nodes: [x, 0], bits: 3, code: 8}\n");
  CHECK(d.message.find("code 8 exceeds the largest 3-bit code 7") != std::string::npos);
  d = error_of("devices:\n  - {name: d1, type: dac, nodes: [x, 0], bits: 2, inl: [0, 1, 2]}\n");
  CHECK(d.message.find("4 values for 2 bits, got 3") != std::string::npos);
  CHECK(d.loc.line == 2);
  d = error_of("devices:\n  - {name: d1, type: dac, nodes: [x, 0], code: 1, value: 0.5}\n");
  CHECK(d.message.find("either code or value") != std::string::npos);
  d = error_of("devices:\n  - {name: d1, type: dac, nodes: [x, 0], vmin: 1, vmax: 1}\n");
  CHECK(d.message.find("vmin < vmax") != std::string::npos);
}

TEST_CASE("adc: static INL moves the code thresholds by inl[k] LSB (adc_convert, as the NN layer uses it)") {
  AdcSpec s;
  s.bits = 3;
  s.vmin = 0;
  s.vmax = 7;  // 1 V per LSB
  std::vector<double> inl(8, 0.0);
  inl[3] = 0.3;   // threshold 2|3 at 2.8 V instead of 2.5 V
  inl[4] = -0.4;  // threshold 3|4 at 3.1 V instead of 3.5 V
  for (double v : {-1.0, 0.2, 1.49, 2.51, 3.49, 5.5, 9.0})
    CHECK(adc_convert(s, v, 0, 0, inl.data()) == adc_convert(s, v, 0, 0) + (v > 2.5 && v < 2.8 ? -1 : 0) +
                                                      (v >= 3.1 && v < 3.5 ? 1 : 0));
  CHECK(adc_convert(s, 2.79, 0, 0, inl.data()) == 2);
  CHECK(adc_convert(s, 2.8, 0, 0, inl.data()) == 3);
  CHECK(adc_convert(s, 3.09, 0, 0, inl.data()) == 3);
  CHECK(adc_convert(s, 3.1, 0, 0, inl.data()) == 4);
  CHECK(adc_convert(s, 1e9, 0, 0, inl.data()) == 7);
  CHECK(adc_convert(s, -1e9, 0, 0, inl.data()) == 0);
}

TEST_CASE("dac: dac_voltage is what the device drives (output plus its noise draw)") {
  DacSpec s;
  s.bits = 4;
  s.noise = 1e-3;
  s.inl_sigma = 0.2;
  s.seed = 5;
  Dac d("d1", SourceLoc{}, s, 9, NodeId(1), NodeId(0));
  DacSpec used = d.spec();
  CHECK(d.voltage() == dac_voltage(used, 9));
  CHECK(dac_voltage(used, 9) == dac_output(used, 9) + dac_noise(used));
}
