// OpenBLAS is loaded on first use (kernels/cpu/blas_loader.h): the names tried, the error that
// names them when none loads, and a product of more rows than the GEMV takes going through it.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kernels/cpu/blas_loader.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/matrix.h"
#include "test_util.h"

namespace inplace::cpu {
using namespace inplace::testing;
namespace {

TEST(BlasLoader, AMissingLibraryIsAnErrorNamingEveryNameTried) {
  try {
    load_blas({"/nonexistent/libopenblas.so.0", "libinplace-no-such-blas.so"});
    ADD_FAILURE() << "a missing library must not load";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_TRUE(mentions(e.what(), {"cannot load OpenBLAS", "/nonexistent/libopenblas.so.0",
                                    "libinplace-no-such-blas.so", "INPLACE_OPENBLAS"}));
  }
}

TEST(BlasLoader, ALibraryWithoutCblasIsRefusedByName) {
  EXPECT_TRUE(mentions(error_of([] { load_blas({"libm.so.6"}); }),
                       {"libm.so.6", "has no symbol cblas_sgemm"}));
}

TEST(BlasLoader, TheEnvironmentsLibraryIsTriedFirstThenTheUsualNames) {
  const char* old = std::getenv("INPLACE_OPENBLAS");
  const std::string saved = old ? old : "";
  setenv("INPLACE_OPENBLAS", "/opt/my/libopenblas.so", 1);
  std::vector<std::string> names = blas_library_names();
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "/opt/my/libopenblas.so");
  EXPECT_EQ(names[1], "libopenblas.so.0");
  unsetenv("INPLACE_OPENBLAS");
  EXPECT_EQ(blas_library_names()[0], "libopenblas.so.0");
  if (old) setenv("INPLACE_OPENBLAS", saved.c_str(), 1);
}

TEST(BlasLoader, LoadsTheInstalledLibraryForAProductOfManyRows) {
  const Blas b = load_blas(blas_library_names());
  EXPECT_NE(b.sgemm, nullptr);
  // 6 rows: more than the GEMV takes, so OpenBLAS computes it (and is loaded by then).
  const int64_t m = kGemvMaxRows + 2, k = 3, n = 2;
  Tensor a = iota({m, k}), w = iota({k, n}), c = Tensor::empty({m, n}, DType::kFloat32);
  matmul(a, w, c);
  EXPECT_TRUE(blas_loaded());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t l = 0; l < k; ++l) want += double(i * k + l) * double(l * n + j);
      EXPECT_EQ(c.at(i * n + j), want);
    }
}

}  // namespace
}  // namespace inplace::cpu
