// The indexing op family's registration pieces and the argument helpers they share.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ops/registry.h"

namespace inplace::indexing {

// A "Tensor" argument; a Python number becomes a 0-dim tensor of `number_dtype` (or of the
// number's own default dtype when none is given).
Tensor tensor_arg(const Value& v, const char* op, std::optional<DType> number_dtype = {});
// aten's Tensor?[]: None -> undefined, ints and lists -> int64 tensors.
std::vector<Tensor> index_list(const Value& v, const char* op);
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
