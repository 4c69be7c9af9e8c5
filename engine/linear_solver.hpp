// Which sparse LU factors the MNA matrix (.options solver=..., YAML options: solver: ...); see sparse_lu.hpp.
#pragma once

namespace anasim {

// Auto: KLU, unless the matrix is large and its factors fill in (sparse_lu.hpp says when); Klu: KLU (with the
// two-half split on large matrices); Umfpack: UMFPACK on a METIS nested-dissection ordering.
enum class LinearSolver { Auto, Klu, Umfpack };

}  // namespace anasim
