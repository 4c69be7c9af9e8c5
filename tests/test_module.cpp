// Tests for engine/module.hpp: the optional back-ends (UMFPACK, CHOLMOD, Open MPI) are modules loaded on first use,
// not libraries of the executable, and a missing module is an error that names it and every place looked.
#include <doctest/doctest.h>
#include <complex>
#include <string>
#include <fmt/format.h>
#include "engine/module.hpp"
#include "engine/multifrontal_lu.hpp"
#include "nn_test_support.hpp"

using namespace anasim;

TEST_CASE("module: the executable does not link UMFPACK, CHOLMOD, OpenBLAS or Open MPI") {
  int rc = 0;
  const std::string needed = nn_test::shell(fmt::format("readelf -d '{}'", ANASIM_BINARY), rc);
  REQUIRE(rc == 0);
  CHECK(needed.find("libklu") != std::string::npos);  // (the listing is the dynamic section)
  for (const char* lib : {"libumfpack", "libcholmod", "libopenblas", "libblas", "liblapack", "libmpi"}) {
    INFO(lib);
    CHECK(needed.find(lib) == std::string::npos);
  }
}

TEST_CASE("module: a missing module is an error naming it and every path tried") {
  std::string error;
  CHECK(module::symbol("no_such_module", "anything", &error) == nullptr);
  CHECK(error.find("libanasim_no_such_module.so") != std::string::npos);
  CHECK(error.find("ANASIM_MODULE_DIR") != std::string::npos);
  error.clear();
  CHECK(module::symbol("umfpack", "no_such_function", &error) == nullptr);
  CHECK(error.find("no function no_such_function") != std::string::npos);
}

TEST_CASE("module: UMFPACK's factorization from its module solves a system, real and complex") {
  // [4 1 0; 1 4 1; 0 1 4] x = b, CSC
  const int Ap[] = {0, 2, 5, 7}, Ai[] = {0, 1, 0, 1, 2, 1, 2};
  const double Ax[] = {4, 1, 1, 4, 1, 1, 4};
  std::string error;
  auto lu = make_umfpack_lu<double>(&error);
  REQUIRE_MESSAGE(lu, error);
  REQUIRE(lu->analyze(3, Ap, Ai, nullptr));
  REQUIRE(lu->factor(Ax));
  double b[] = {5, 6, 5};  // x = 1, 1, 1
  lu->solve(b);
  for (double v : b) CHECK(v == doctest::Approx(1.0).epsilon(1e-14));
  auto twin = lu->sibling();  // shares the analysis
  REQUIRE(twin->analyzed());
  REQUIRE(twin->factor(Ax));
  CHECK(twin->factorizations() == 1);
  using C = std::complex<double>;
  auto z = make_umfpack_lu<C>(&error);
  REQUIRE_MESSAGE(z, error);
  const C Az[] = {{4, 1}, 1, 1, {4, 1}, 1, 1, {4, 1}};
  REQUIRE(z->analyze(3, Ap, Ai, nullptr));
  REQUIRE(z->factor(Az));
  C bz[] = {Az[0] + 1.0, Az[3] + 2.0, Az[6] + 1.0};  // x = 1, 1, 1
  z->solve(bz);
  for (C v : bz) CHECK(std::abs(v - 1.0) < 1e-14);
}
