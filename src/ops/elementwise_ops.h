// Shared by the elementwise op family (ops/elementwise_*.cpp): the argument decoding every backend
// reads (ops/elementwise_args.h) and the per-family registration lists that
// register_elementwise_ops calls.
#pragma once
#include "ops/elementwise_args.h"
#include "ops/registry.h"

namespace inplace::elementwise {

void register_arith_ops(Registry& r);
void register_unary_ops(Registry& r);
void register_compare_ops(Registry& r);
void register_select_ops(Registry& r);
void register_copy_ops(Registry& r);

}  // namespace inplace::elementwise
