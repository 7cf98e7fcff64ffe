// The backends this build has, registered into the kernel table when it is built. The one file
// that names them: the backend layer below only declares register_builtin_backends, and a static
// link keeps every backend because KernelTable::get() reaches them through this call.
#include "backend/kernel_table.h"
#include "kernels/cpu/registration.h"
#ifdef INPLACE_WITH_CUDA
#include "kernels/cuda/registration.h"
#endif

namespace inplace {

void register_builtin_backends(KernelTable& table) {
  register_cpu_backend(table);
#ifdef INPLACE_WITH_CUDA
  register_cuda_backend(table);
#endif
}

}  // namespace inplace
