// The port reduction's factorization with CHOLMOD (see port_reduction.hpp, PortFactor): built into the module
// libanasim_cholmod.so (engine/module.hpp), which exports anasim_cholmod_new_port_factor.
#include <algorithm>
#include <string>
#include <vector>
#include <cholmod.h>
#include "engine/module.hpp"
#include "nn/port_reduction.hpp"

namespace anasim::nn::fast {

namespace {

cholmod_sparse wrap(int n, const std::vector<int>& p, const std::vector<int>& i, const std::vector<double>& x) {
  cholmod_sparse A{};
  A.nrow = A.ncol = static_cast<size_t>(n);
  A.nzmax = i.size();
  A.p = const_cast<int*>(p.data());
  A.i = const_cast<int*>(i.data());
  A.x = const_cast<double*>(x.data());
  A.stype = -1;
  A.itype = CHOLMOD_INT;
  A.xtype = CHOLMOD_REAL;
  A.dtype = CHOLMOD_DOUBLE;
  A.sorted = 1;
  A.packed = 1;
  return A;
}

class CholmodPortFactor final : public PortFactor {
 public:
  CholmodPortFactor() { cholmod_start(&cc_); }
  ~CholmodPortFactor() override {
    if (L_) cholmod_free_factor(&L_, &cc_);
    cholmod_finish(&cc_);
  }
  CholmodPortFactor(const CholmodPortFactor&) = delete;
  CholmodPortFactor& operator=(const CholmodPortFactor&) = delete;

  int factor(int n, int m, const std::vector<int>& Ap, const std::vector<int>& Ai, const std::vector<double>& Ax,
             double* Lpp, bool& reused, std::string& error) override {
    const int n_int = n - m;
    reused = L_ && Ap == ap_ && Ai == ai_;
    if (!reused) {
      if (L_) cholmod_free_factor(&L_, &cc_);
      ap_ = Ap;
      ai_ = Ai;
      // Interior ordering (postordered), then the ports last in their own order.
      std::vector<int> ii;
      std::vector<double> xi;
      std::vector<int> pcol(n_int + 1);
      for (int j = 0; j < n_int; ++j) {
        pcol[j] = static_cast<int>(ii.size());
        for (int k = Ap[j]; k < Ap[j + 1]; ++k)
          if (Ai[k] < n_int) {
            ii.push_back(Ai[k]);
            xi.push_back(Ax[k]);
          }
      }
      pcol[n_int] = static_cast<int>(ii.size());
      cholmod_sparse Aint = wrap(n_int, pcol, ii, xi);
      cc_.supernodal = CHOLMOD_SUPERNODAL;
      cc_.nmethods = 1;
      cc_.method[0].ordering = n_int > 2000 ? CHOLMOD_METIS : CHOLMOD_AMD;
      cc_.postorder = 1;
      // METIS draws from GKlib's random generator, whose state is shared by every thread: two blocks ordered at
      // once (fast_prepare factorizes blocks in parallel) would race on it and the orderings, hence the rounding of
      // Y, would change from run to run and with the thread count. One ordering at a time keeps them deterministic.
      cholmod_factor* Li = nullptr;
#pragma omp critical(anasim_cholmod_analyze)
      Li = cholmod_analyze(&Aint, &cc_);
      if (!Li) {
        error = "CHOLMOD could not order a crossbar block";
        return kNumerical;
      }
      std::vector<int> perm(n);
      const int* P = static_cast<const int*>(Li->Perm);
      for (int i = 0; i < n_int; ++i) perm[i] = P[i];
      for (int p = 0; p < m; ++p) perm[n_int + p] = n_int + p;
      cholmod_free_factor(&Li, &cc_);
      cc_.nmethods = 1;
      cc_.method[0].ordering = CHOLMOD_GIVEN;
      cc_.postorder = 0;
      cholmod_sparse A = wrap(n, Ap, Ai, Ax);
      // Relaxed supernode amalgamation: at CHOLMOD's defaults (4/16/48 columns, 0.8/0.1/0.05 zeros) a shipped
      // network's 57,696-node block has ~8,900 supernodes of 6 columns and the factorization runs at 1.8 GFLOP/s,
      // its BLAS calls' overhead; 16/48/128 and 0.8/0.2/0.05 halve the supernodes and take ~30% less time
      // (measured: a trial's port reduction with sigma_g 5%, 0.54 -> 0.38 s CPU); more amalgamation was slower.
      cc_.nrelax[0] = 16;
      cc_.nrelax[1] = 48;
      cc_.nrelax[2] = 128;
      cc_.zrelax[0] = 0.8;
      cc_.zrelax[1] = 0.2;
      cc_.zrelax[2] = 0.05;
      L_ = cholmod_analyze_p(&A, perm.data(), nullptr, 0, &cc_);
      if (!L_) {
        error = "CHOLMOD analysis of a crossbar block failed";
        return kNumerical;
      }
    }
    cholmod_sparse A = wrap(n, Ap, Ai, Ax);
    const bool fok = cholmod_factorize(&A, L_, &cc_);
    if (!fok || cc_.status != CHOLMOD_OK) {
      error = "CHOLMOD factorization of a crossbar block failed (status " + std::to_string(cc_.status) +
              ", column " + std::to_string(L_->minor) + ")";
      return kNumerical;
    }
    const int* Lperm = static_cast<const int*>(L_->Perm);
    for (int p = 0; p < m; ++p)
      if (Lperm[n_int + p] != n_int + p) {
        error = "CHOLMOD moved a port out of the trailing block";
        return kOther;
      }
    if (!L_->is_super) {
      error = "CHOLMOD did not make a supernodal factor";
      return kOther;
    }
    // Trailing m x m block of the supernodal L.
    const int* super = static_cast<const int*>(L_->super);
    const int* lpi = static_cast<const int*>(L_->pi);
    const int* lpx = static_cast<const int*>(L_->px);
    const int* ls = static_cast<const int*>(L_->s);
    const double* lx = static_cast<const double*>(L_->x);
    for (size_t s = 0; s < L_->nsuper; ++s) {
      const int k1 = super[s], k2 = super[s + 1];
      if (k2 <= n_int) continue;
      const int psi = lpi[s], nsrow = lpi[s + 1] - psi, psx = lpx[s];
      for (int k = std::max(k1, n_int); k < k2; ++k)
        for (int r = 0; r < nsrow; ++r) {
          const int row = ls[psi + r];
          if (row >= k)
            Lpp[static_cast<size_t>(k - n_int) * m + (row - n_int)] =
                lx[psx + static_cast<size_t>(k - k1) * nsrow + r];
        }
    }
    return kOk;
  }

 private:
  cholmod_common cc_;
  cholmod_factor* L_ = nullptr;
  std::vector<int> ap_, ai_;  // pattern of the analysed matrix (lower-triangular CSC)
};

}  // namespace

}  // namespace anasim::nn::fast

ANASIM_MODULE_EXPORT int anasim_module_abi() { return anasim::module::kModuleAbi; }
ANASIM_MODULE_EXPORT anasim::nn::fast::PortFactor* anasim_cholmod_new_port_factor() {
  return new anasim::nn::fast::CholmodPortFactor();
}
