// Fill-reducing orderings for UMFPACK on a crossbar deck's MNA matrix (issue 17): `anasim_ordering_study DECK`
// reads a deck of R, V (dc) and E elements as bench/gen_crossbar.py writes it, assembles its MNA matrix (one
// unknown per node and per V/E branch) and factors it once per ordering, printing CPU seconds of ordering,
// UMFPACK symbolic and numeric analysis, and UMFPACK's fill (L+U entries), flops and peak memory. Run it with
// OMP_NUM_THREADS=1 (anasim factors with one BLAS thread).
#include <sys/resource.h>
#include <amd.h>
#include <cholmod.h>
#include <klu.h>
#include <umfpack.h>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

double cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec + 1e-6 * (r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

// The MNA matrix in compressed columns (size n, Ap size n+1) and its right-hand side.
struct Mna {
  int n = 0;
  std::vector<int> Ap, Ai;
  std::vector<double> Ax, b;
};

// Assembles the deck's R, V and E lines (anything else is skipped); false if the file cannot be read.
bool read_deck(const char* path, Mna& m) {
  std::ifstream in(path);
  if (!in) return false;
  std::unordered_map<std::string, int> id;
  auto node = [&](const std::string& s) {
    if (s == "0") return -1;
    return id.emplace(s, static_cast<int>(id.size())).first->second;
  };
  struct Branch {
    int p, m, cp, cm;
    double gain, value;
  };
  std::vector<Branch> br;
  std::vector<std::array<int, 2>> res;
  std::vector<double> g;
  std::string line;
  std::getline(in, line);  // title
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string name, a, b, c, d;
    if (!(ss >> name >> a >> b) || name[0] == '*' || name[0] == '.') continue;
    if (name[0] == 'r') {
      double r = 0;
      ss >> r;
      res.push_back({node(a), node(b)});
      g.push_back(1.0 / r);
    } else if (name[0] == 'v') {
      double v = 0;
      ss >> c >> v;  // "dc" value
      br.push_back({node(a), node(b), -1, -1, 0.0, v});
    } else if (name[0] == 'e') {
      double gain = 0;
      ss >> c >> d >> gain;
      br.push_back({node(a), node(b), node(c), node(d), gain, 0.0});
    }
  }
  const int nodes = static_cast<int>(id.size());
  m.n = nodes + static_cast<int>(br.size());
  std::vector<int> ti, tj;
  std::vector<double> tx;
  auto add = [&](int r, int c, double v) {
    if (r < 0 || c < 0) return;
    ti.push_back(r);
    tj.push_back(c);
    tx.push_back(v);
  };
  for (size_t k = 0; k < res.size(); ++k) {
    const auto [a, b] = res[k];
    add(a, a, g[k]), add(b, b, g[k]), add(a, b, -g[k]), add(b, a, -g[k]);
  }
  m.b.assign(m.n, 0.0);
  for (size_t k = 0; k < br.size(); ++k) {
    const int j = nodes + static_cast<int>(k);
    const Branch& x = br[k];
    add(x.p, j, 1), add(x.m, j, -1), add(j, x.p, 1), add(j, x.m, -1);
    add(j, x.cp, -x.gain), add(j, x.cm, x.gain);
    m.b[j] = x.value;
  }
  m.Ap.resize(m.n + 1);
  m.Ai.resize(tx.size());
  m.Ax.resize(tx.size());
  umfpack_di_triplet_to_col(m.n, m.n, static_cast<int>(tx.size()), ti.data(), tj.data(), tx.data(), m.Ap.data(),
                            m.Ai.data(), m.Ax.data(), nullptr);
  return true;
}

// UMFPACK's symmetric strategy on the given column order (nullptr: UMFPACK's own `ordering`); prints one row.
void factor(const Mna& m, const char* name, double order_s, const int* order, int ordering = UMFPACK_ORDERING_GIVEN,
            int strategy = UMFPACK_STRATEGY_SYMMETRIC, bool singletons = true) {
  double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
  umfpack_di_defaults(control);
  control[UMFPACK_STRATEGY] = strategy;
  control[UMFPACK_ORDERING] = ordering;
  control[UMFPACK_SINGLETONS] = singletons;
  void *symbolic = nullptr, *numeric = nullptr;
  const double t0 = cpu_seconds();
  if (umfpack_di_qsymbolic(m.n, m.n, m.Ap.data(), m.Ai.data(), m.Ax.data(), order, &symbolic, control, info) != 0) {
    std::printf("%-40s symbolic analysis failed\n", name);
    return;
  }
  const double t1 = cpu_seconds();
  umfpack_di_numeric(m.Ap.data(), m.Ai.data(), m.Ax.data(), symbolic, &numeric, control, info);
  const double t2 = cpu_seconds();
  std::printf("%-40s %8.3f %8.3f %8.3f %8.3f  %9.3g %9.3g %7.0f  %s\n", name, order_s, t1 - t0, t2 - t1,
              order_s + t2 - t0, info[UMFPACK_LNZ] + info[UMFPACK_UNZ], info[UMFPACK_FLOPS],
              info[UMFPACK_PEAK_MEMORY] * info[UMFPACK_SIZE_OF_UNIT] / 1e6,
              info[UMFPACK_STRATEGY_USED] == UMFPACK_STRATEGY_SYMMETRIC ? "symmetric" : "unsymmetric");
  umfpack_di_free_numeric(&numeric);
  umfpack_di_free_symbolic(&symbolic);
}

// Times order(perm) and factors on the result.
void given(const Mna& m, const char* name, const std::function<void(int*)>& order) {
  std::vector<int> perm(m.n);
  const double t0 = cpu_seconds();
  order(perm.data());
  factor(m, name, cpu_seconds() - t0, perm.data());
}

}  // namespace

int main(int argc, char** argv) {
  Mna m;
  if (argc != 2 || !read_deck(argv[1], m)) {
    std::fprintf(stderr, "usage: anasim_ordering_study DECK (R, V and E lines, as bench/gen_crossbar.py writes)\n");
    return 2;
  }
  std::printf("%d unknowns, %d entries\n", m.n, m.Ap[m.n]);
  std::printf("%-40s %8s %8s %8s %8s  %9s %9s %7s\n", "ordering", "order", "symbolic", "numeric", "sum [s]", "L+U",
              "flops", "peak MB");
  given(m, "AMD on A+A' (anasim's auto choice)", [&](int* p) {
    double control[AMD_CONTROL], info[AMD_INFO];
    amd_defaults(control);
    amd_order(m.n, m.Ap.data(), m.Ai.data(), p, control, info);
  });
  // CHOLMOD's orderings of the symmetric pattern A + A^T
  cholmod_common cc;
  cholmod_start(&cc);
  cholmod_sparse a{};
  a.nrow = a.ncol = m.n;
  a.nzmax = m.Ap[m.n];
  a.p = const_cast<int*>(m.Ap.data());
  a.i = const_cast<int*>(m.Ai.data());
  a.x = const_cast<double*>(m.Ax.data());
  a.itype = CHOLMOD_INT;
  a.xtype = CHOLMOD_REAL;
  a.dtype = CHOLMOD_DOUBLE;
  a.sorted = a.packed = 1;
  cholmod_sparse* at = cholmod_transpose(&a, 0, &cc);
  cholmod_sparse* s = cholmod_add(&a, at, nullptr, nullptr, 0, 0, &cc);
  s->stype = 1;
  given(m, "METIS nested dissection (cholmod_metis)", [&](int* p) { cholmod_metis(s, nullptr, 0, 1, p, &cc); });
  for (int small : {200, 1000}) {
    cc.method[0].nd_small = small;
    cc.method[0].nd_camd = 1;
    const std::string name = "CHOLMOD nesdis + CAMD, nd_small " + std::to_string(small);
    std::vector<int> cp(m.n), cm(m.n);
    given(m, name.c_str(), [&](int* p) { cholmod_nested_dissection(s, nullptr, 0, p, cp.data(), cm.data(), &cc); });
  }
  cholmod_free_sparse(&s, &cc);
  cholmod_free_sparse(&at, &cc);
  cholmod_finish(&cc);
  // UMFPACK's own choices: with singletons removed its symmetric strategy turns unsymmetric (COLAMD); without
  // them, AMD or METIS on A + A^T
  factor(m, "UMFPACK default (singletons: COLAMD)", 0, nullptr, UMFPACK_ORDERING_AMD, UMFPACK_STRATEGY_AUTO);
  factor(m, "UMFPACK symmetric AMD, no singletons", 0, nullptr, UMFPACK_ORDERING_AMD, UMFPACK_STRATEGY_SYMMETRIC,
         false);
  factor(m, "UMFPACK symmetric METIS, no singletons", 0, nullptr, UMFPACK_ORDERING_METIS, UMFPACK_STRATEGY_SYMMETRIC,
         false);
  // KLU (BTF + AMD), anasim's solver below auto's threshold
  klu_common kc;
  klu_defaults(&kc);
  const double t0 = cpu_seconds();
  klu_symbolic* ks = klu_analyze(m.n, const_cast<int*>(m.Ap.data()), const_cast<int*>(m.Ai.data()), &kc);
  const double t1 = cpu_seconds();
  klu_numeric* kn = klu_factor(const_cast<int*>(m.Ap.data()), const_cast<int*>(m.Ai.data()),
                               const_cast<double*>(m.Ax.data()), ks, &kc);
  const double t2 = cpu_seconds();
  if (kn)
    std::printf("%-40s %8s %8.3f %8.3f %8.3f  %9.3g\n", "KLU (BTF + AMD)", "", t1 - t0, t2 - t1, t2 - t0,
                static_cast<double>(kn->lnz + kn->unz));
  klu_free_numeric(&kn, &kc);
  klu_free_symbolic(&ks, &kc);
  return 0;
}
