// Static metadata of node values, best effort: tensors as Tensor::meta (shape, dtype, strides
// and offset, so view-or-copy decisions can be made), lists and tuples of them, and numbers
// when known. A node whose value can't be worked out without data has no entry.
#pragma once
#include <map>
#include <optional>

#include "ops/registry.h"
#include "passes/pass.h"

namespace inplace {

class MetaTable {
 public:
  const Value* find(const Node* n) const;
  const Tensor* tensor(const Node* n) const;  // null unless a known tensor
  void set(const Node* n, Value v) { values_[n] = std::move(v); }
  bool has(const Node* n) const { return values_.count(n) != 0; }
  // `v` with every node reference replaced by its meta; false if one is unknown.
  bool substitute(const Value& v, Value* out) const;

 private:
  std::map<const Node*, Value> values_;
};

// The meta of a placeholder: node meta, else options.input_metas, else its default value.
std::optional<Value> placeholder_meta(const Node& n, const PassOptions& options);
// The meta of `node` from the metas of the nodes it reads; nullopt when unknown.
std::optional<Value> infer_node_meta(const Graph& graph, const Node& node,
                                     const MetaTable& table, const PassOptions& options);
MetaTable infer_metas(const Graph& graph, const PassOptions& options);
// Records shape and dtype of every tensor-valued node in Node::meta where it is missing.
void annotate_metas(Graph& graph, const MetaTable& table);

}  // namespace inplace
