// CompiledLU (see compiled_lu.hpp): the symbolic elimination with a fixed pivot order, the gather and the
// row-by-row numeric elimination, and the two triangular solves.
#include "engine/compiled_lu.hpp"
#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <type_traits>

namespace anasim {

namespace {
template <class T>
bool finite(T x) {
  if constexpr (std::is_same_v<T, double>) return std::isfinite(x);
  else return std::isfinite(x.real()) && std::isfinite(x.imag());
}
}  // namespace

template <class T>
void CompiledLU<T>::clear() {
  *this = CompiledLU();
}

template <class T>
bool CompiledLU<T>::same_order(int n, const int* P, const int* Q) const {
  return n_ == n && n > 0 && std::equal(P_.begin(), P_.end(), P) && std::equal(Q_.begin(), Q_.end(), Q);
}

template <class T>
bool CompiledLU<T>::compile(int n, const int* Ap, const int* Ai, const int* P, const int* Q, long max_pairs) {
  clear();
  if (n <= 0) return false;
  std::vector<int> pinv(n), qinv(n);
  for (int k = 0; k < n; ++k) {
    pinv[P[k]] = k;
    qinv[Q[k]] = k;
  }
  // M's pattern by rows (the diagonal always present: the pivot KLU chose is an entry of A).
  std::vector<std::vector<int>> rows(n);
  for (int c = 0; c < n; ++c)
    for (int p = Ap[c]; p < Ap[c + 1]; ++p) rows[pinv[Ai[p]]].push_back(qinv[c]);
  // Symbolic elimination, row by row: row i of L + U is row i of M plus, for each k < i in it (ascending, found
  // through a min-heap as they appear), the columns of U's row k.
  std::vector<std::vector<int>> urow(n);  // U's row k right of the pivot, ascending
  std::vector<int> stamp(n, -1);
  std::vector<int> row;
  std::priority_queue<int, std::vector<int>, std::greater<int>> left;
  long pairs = 0;
  row_start_.assign(1, 0);
  for (int i = 0; i < n; ++i) {
    row.clear();
    auto add = [&](int j) {
      if (stamp[j] == i) return;
      stamp[j] = i;
      row.push_back(j);
      if (j < i) left.push(j);
    };
    add(i);
    for (int j : rows[i]) add(j);
    while (!left.empty()) {
      const int k = left.top();
      left.pop();
      pairs += static_cast<long>(urow[k].size());
      for (int j : urow[k]) add(j);
    }
    if (pairs > max_pairs) {
      clear();
      return false;
    }
    std::sort(row.begin(), row.end());
    for (int j : row)
      if (j > i) urow[i].push_back(j);
    col_.insert(col_.end(), row.begin(), row.end());
    row_start_.push_back(static_cast<int>(col_.size()));
  }
  // Slots: the pivot's, A's entries', and each elimination's destinations (pos: column -> slot in row i).
  diag_.resize(n);
  for (int i = 0; i < n; ++i)
    diag_[i] = static_cast<int>(std::lower_bound(col_.begin() + row_start_[i], col_.begin() + row_start_[i + 1], i) -
                                col_.begin());
  a_slot_.resize(Ap[n]);
  std::vector<int> pos(n, -1);
  for (int c = 0; c < n; ++c)
    for (int p = Ap[c]; p < Ap[c + 1]; ++p) {
      const int i = pinv[Ai[p]], j = qinv[c];
      a_slot_[p] = static_cast<int>(
          std::lower_bound(col_.begin() + row_start_[i], col_.begin() + row_start_[i + 1], j) - col_.begin());
    }
  // The slots no entry of A lands on (fill), zeroed before each gather; where two entries of A share a slot (a
  // pattern with duplicates) every slot is zeroed and the entries added.
  std::vector<char> hit(col_.size(), 0);
  bool duplicates = false;
  for (int s : a_slot_) {
    duplicates = duplicates || hit[s];
    hit[s] = 1;
  }
  add_ = duplicates;
  for (size_t s = 0; s < hit.size(); ++s)
    if (add_ || !hit[s]) zero_.push_back(static_cast<int>(s));
  dst_.reserve(pairs);
  for (int i = 0; i < n; ++i) {
    for (int s = row_start_[i]; s < row_start_[i + 1]; ++s) pos[col_[s]] = s;
    for (int s = row_start_[i]; s < diag_[i]; ++s) {
      const int k = col_[s];
      for (int t = diag_[k] + 1; t < row_start_[k + 1]; ++t) dst_.push_back(pos[col_[t]]);
    }
  }
  n_ = n;
  P_.assign(P, P + n);
  Q_.assign(Q, Q + n);
  v_.assign(col_.size(), T(0));
  w_.assign(n, T(0));
  inv_.assign(n, T(0));
  return true;
}

template <class T>
bool CompiledLU<T>::refactor(const T* Ax) {
  T* v = v_.data();
  for (int s : zero_) v[s] = T(0);
  const size_t nnz = a_slot_.size();
  if (add_)
    for (size_t p = 0; p < nnz; ++p) v[a_slot_[p]] += Ax[p];
  else
    for (size_t p = 0; p < nnz; ++p) v[a_slot_[p]] = Ax[p];
  const int* d = dst_.data();
  const int* col = col_.data();
  T* inv = inv_.data();
  // Row i's eliminations use the reciprocal pivots of the rows before it: a multiplication in the dependency
  // chain from row to row instead of a division (each ~4 against ~13 cycles of latency).
  for (int i = 0; i < n_; ++i) {
    for (int s = row_start_[i]; s < diag_[i]; ++s) {
      const int k = col[s];
      const T l = v[s] * inv[k];
      v[s] = l;
      const T* u = v + diag_[k] + 1;
      const int nu = row_start_[k + 1] - diag_[k] - 1;
      for (int t = 0; t < nu; ++t) v[d[t]] -= l * u[t];
      d += nu;
    }
    const T u = v[diag_[i]];
    if (!(std::abs(u) > 0) || !finite(u)) return false;
    inv[i] = T(1) / u;
  }
  return true;
}

template <class T>
void CompiledLU<T>::solve(T* b) const {
  T* w = w_.data();
  const T* v = v_.data();
  const int* col = col_.data();
  for (int k = 0; k < n_; ++k) w[k] = b[P_[k]];
  for (int i = 0; i < n_; ++i) {
    T x = w[i];
    for (int s = row_start_[i]; s < diag_[i]; ++s) x -= v[s] * w[col[s]];
    w[i] = x;
  }
  for (int i = n_ - 1; i >= 0; --i) {
    T x = w[i];
    for (int s = diag_[i] + 1; s < row_start_[i + 1]; ++s) x -= v[s] * w[col[s]];
    w[i] = x * inv_[i];
  }
  for (int k = 0; k < n_; ++k) b[Q_[k]] = w[k];
}

template <class T>
double CompiledLU<T>::bytes() const {
  return 4.0 * (P_.size() + Q_.size() + row_start_.size() + col_.size() + diag_.size() + a_slot_.size() +
                zero_.size() + dst_.size()) +
         static_cast<double>(sizeof(T)) * (v_.size() + w_.size() + inv_.size());
}

template class CompiledLU<double>;
template class CompiledLU<std::complex<double>>;

}  // namespace anasim
