#include "ops/registry.h"

namespace inplace {

void register_matrix_ops(Registry& r) { (void)r; }

}  // namespace inplace
