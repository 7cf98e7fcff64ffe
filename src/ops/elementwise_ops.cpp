#include "ops/registry.h"

namespace inplace {

void register_elementwise_ops(Registry& r) { (void)r; }

}  // namespace inplace
