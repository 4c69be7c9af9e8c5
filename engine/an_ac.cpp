// .ac driver: operating point, then the complex small-signal system at each frequency (dec/oct/lin).
#include <chrono>
#include <cmath>
#include <complex>
#include <fmt/format.h>
#include "engine/analyses.hpp"
#include "engine/newton.hpp"

namespace anasim {

namespace {
std::vector<double> frequencies(const Analysis& a) {
  std::vector<double> f;
  if (a.variation == "lin") {
    if (a.points == 1) return {a.fstart};
    for (int k = 0; k < a.points; ++k) f.push_back(a.fstart + (a.fstop - a.fstart) * k / (a.points - 1));
    return f;
  }
  const double per = a.variation == "dec" ? 10.0 : 2.0;
  const double ratio = std::pow(per, 1.0 / a.points);
  const long n = static_cast<long>(std::floor(std::log(a.fstop / a.fstart) / std::log(ratio) + 1e-9)) + 1;
  for (long k = 0; k < n; ++k) f.push_back(a.fstart * std::pow(ratio, static_cast<double>(k)));
  return f;
}
}  // namespace

Status run_ac(Circuit& c, const FlatNetlist& fn, const Analysis& a, const std::vector<int>& out, AnalysisResult& res) {
  using cplx = std::complex<double>;
  auto t0 = std::chrono::steady_clock::now();
  NewtonSolver s(c, fn.options);
  Status st = s.operating_point();
  if (!st) {
    st.errors[0].message = "ac operating point: " + st.errors[0].message;
    return st;
  }
  s.load();  // linearise every device at the converged operating point
  res.kind = "ac";
  res.sweep_name = "frequency";
  res.sweep_unit = "Hz";
  for (int u : out) res.signals.push_back({c.unknowns()[u].name, c.unknowns()[u].is_node ? "V" : "A", {}, {}});
  SparseLU<cplx> lu;
  lu.set_solver(fn.options.solver);
  lu.analyze(c.n(), c.Ap().data(), c.Ai().data());
  std::vector<cplx> A(c.nnz() + 1), b(c.n() + 1);
  AcLoadContext ctx;
  for (double f : frequencies(a)) {
    std::fill(A.begin(), A.end(), cplx(0));
    std::fill(b.begin(), b.end(), cplx(0));
    ctx.A = A.data();
    ctx.b = b.data();
    ctx.omega = 2 * M_PI * f;
    for (const auto& d : c.devices()) d->load_ac(ctx);
    if (!lu.factor(A.data()))
      return Status::numerical(fmt::format("ac analysis at {} Hz: singular matrix at {}", f, c.describe(lu.singular_unknown())));
    lu.solve(b.data());
    res.sweep.push_back(f);
    for (size_t k = 0; k < out.size(); ++k) {
      res.signals[k].re.push_back(b[out[k]].real());
      res.signals[k].im.push_back(b[out[k]].imag());
    }
  }
  res.stats = s.stats();
  res.stats.factorizations += lu.factorizations();
  res.stats.refactorizations += lu.refactorizations();
  res.stats.solves += lu.solves();
  res.stats.timepoints = static_cast<long>(res.sweep.size());
  res.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {};
}

}  // namespace anasim
