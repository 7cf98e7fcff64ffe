// The arguments and shape rules of aten.index / index_put, the one-dim index ops (index_select,
// index_copy, index_add, index_fill), masked_scatter and the embeddings, as their declarations
// and kernels read them.
#pragma once
#include "ops/advanced_index.h"
#include "ops/index_args.h"
#include "ops/registry.h"

namespace inplace::indexing {

// index / index_put: self's advanced index from aten's Tensor?[] (masks expanded).
AdvancedIndex plan_index(const Tensor& self, const Value& indices, const char* op);
// index_put's values must broadcast to the indexed result.
void check_put(const AdvancedIndex& ai, const Tensor& values, const char* op);

// The one-dim index ops see a 0-d self as shape [1], as torch does.
inline Tensor as_1d(const Tensor& t) {
  return t.dim() == 0 ? t.unsqueeze(0) : t;
}
// The index plan of `index` along `dim` of self (as_1d).
AdvancedIndex plan_dim(const Tensor& self, int64_t dim, const Tensor& index, const char* op);
// index_copy / index_add: source must fill the indexed region exactly.
void check_source(const Tensor& self, const AdvancedIndex& ai, const Tensor& source,
                  const char* op);
enum class DimOp { kCopy, kAdd, kFill };
// index_copy / index_add / index_fill (self, dim, index, source-or-value, ...): result metas.
std::vector<Tensor> dim_infer(const Args& a, DimOp kind, const char* op);
// index_select(self, dim, index): the plan (its shape rule checks a 0-d self's single index).
AdvancedIndex index_select_plan(const Args& a);

// masked_scatter(self, mask, source): the result's shape (self and mask broadcast).
Shape masked_scatter_shape(const Args& a);

// The embeddings' tables and plans: embedding(weight, indices, ...),
// embedding_functional(input, weight, padding_idx, max_norm, ...) and
// fused_embedding(input, weight).
// Where each reads its table and its indices.
struct EmbeddingOperands {
  int weight, indices;
};
inline constexpr EmbeddingOperands kEmbedding{0, 1};            // embedding
inline constexpr EmbeddingOperands kEmbeddingFunctional{1, 0};  // embedding_functional, fused_
AdvancedIndex embedding_plan(const Args& a);
AdvancedIndex embedding_functional_plan(const Args& a);
AdvancedIndex fused_embedding_plan(const Args& a);

}  // namespace inplace::indexing
