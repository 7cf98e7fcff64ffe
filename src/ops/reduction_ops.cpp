#include "ops/registry.h"

namespace inplace {

void register_reduction_ops(Registry& r) { (void)r; }

}  // namespace inplace
