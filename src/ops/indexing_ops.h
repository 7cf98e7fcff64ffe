// The indexing op family's registration pieces (the argument helpers they share with the
// kernels: ops/index_args.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ops/index_args.h"
#include "ops/registry.h"

namespace inplace::indexing {

// Registers a mutating op whose eager writes self directly (no copy through the twin);
// `functional` names the out-of-place twin for the functionalization pass.
void add_mutating(Registry& r, const std::string& schema, const std::string& functional,
                  EagerFn eager);
// Registers an op whose result shape depends on data (nonzero, masked_select).
void add_dynamic(Registry& r, const std::string& schema, EagerFn eager);

void register_getitem_ops(Registry& r);       // getitem, setitem
void register_index_ops(Registry& r);         // index, index_put, index_select/copy/add/fill
void register_mask_ops(Registry& r);          // nonzero, masked_select, masked_scatter, embedding
void register_scatter_ops(Registry& r);       // gather, scatter*, scatter_add, scatter_reduce
void register_view_scatter_ops(Registry& r);  // slice/select/diagonal/as_strided_scatter

}  // namespace inplace::indexing
