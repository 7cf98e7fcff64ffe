#include "kernels/cpu/blas_loader.h"

#include <cblas.h>  // only to check the table's types against OpenBLAS's own declarations
#include <dlfcn.h>

#include <type_traits>

#include <cstdlib>
#include <mutex>

#include "core/error.h"

namespace inplace::cpu {

namespace {

static_assert(int{kBlasRowMajor} == int{CblasRowMajor} && int{kBlasNoTrans} == int{CblasNoTrans} &&
              int{kBlasTrans} == int{CblasTrans});
static_assert(sizeof(blasint) == sizeof(int), "an OpenBLAS with 32-bit integers");
static_assert(sizeof(CBLAS_TRANSPOSE) == sizeof(BlasTranspose) &&
              sizeof(CBLAS_ORDER) == sizeof(BlasLayout));

std::mutex g_mutex;
int g_threads = 0;              // 0: OpenBLAS's own default; guarded by g_mutex
const Blas* g_table = nullptr;  // set once loaded; guarded by g_mutex

template <typename F>
F symbol(void* library, const std::string& name, const char* symbol_name) {
  void* p = dlsym(library, symbol_name);
  IP_CHECK(p != nullptr, kUnsupported, "[blas] ", name, " has no symbol ", symbol_name,
           " (not OpenBLAS?)");
  return reinterpret_cast<F>(p);
}

}  // namespace

std::vector<std::string> blas_library_names() {
  std::vector<std::string> names;
  if (const char* env = std::getenv("INPLACE_OPENBLAS"); env != nullptr && *env != '\0')
    names.emplace_back(env);
  names.emplace_back("libopenblas.so.0");
  names.emplace_back("libopenblas.so");
#ifdef INPLACE_OPENBLAS_LIBRARY
  names.emplace_back(INPLACE_OPENBLAS_LIBRARY);
#endif
  return names;
}

Blas load_blas(const std::vector<std::string>& names) {
  std::string tried, reason;
  for (const std::string& name : names) {
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      tried += (tried.empty() ? "" : ", ") + name;
      const char* e = dlerror();
      reason = e != nullptr ? e : "unknown reason";
      continue;
    }
    Blas b;
    b.sgemm = symbol<decltype(b.sgemm)>(h, name, "cblas_sgemm");
    b.dgemm = symbol<decltype(b.dgemm)>(h, name, "cblas_dgemm");
    b.set_num_threads = symbol<decltype(b.set_num_threads)>(h, name, "openblas_set_num_threads");
    return b;
  }
  IP_FAIL(kUnsupported, "[blas] cannot load OpenBLAS (tried ", tried, "; last error: ", reason,
          "); float32/float64 matrix products of more than 4 rows need it: install OpenBLAS "
          "(Debian: libopenblas0) or name the library in INPLACE_OPENBLAS");
}

const Blas& blas() {
  static const Blas table = [] {
    Blas b = load_blas(blas_library_names());
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_threads > 0) b.set_num_threads(g_threads);
    g_table = &table;  // its address, filled when this returns (g_table is read after that)
    return b;
  }();
  return table;
}

bool blas_loaded() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_table != nullptr;
}

void set_blas_threads(int threads) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_threads = threads;
  if (g_table != nullptr) g_table->set_num_threads(threads);
}

}  // namespace inplace::cpu
