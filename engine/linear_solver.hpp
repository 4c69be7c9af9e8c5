// Which sparse LU factors the MNA matrix (.options solver=..., YAML options: solver: ...); see sparse_lu.hpp.
#pragma once

namespace anasim {

// Auto: on a large real system, conjugate gradients on its nodal core where that is symmetric and diagonally
// dominant (engine/nodal_pcg.hpp); else KLU, unless the matrix is large and its factors fill in (sparse_lu.hpp
// says when). Klu: KLU (with the two-half split on large matrices); Umfpack: UMFPACK on a METIS nested-dissection
// ordering; Pcg: conjugate gradients at any size where they apply, else as Auto.
enum class LinearSolver { Auto, Klu, Umfpack, Pcg };

}  // namespace anasim
