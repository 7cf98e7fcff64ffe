// Static metadata of node values, best effort: tensors as Tensor::meta (shape, dtype, strides
// and offset, so view-or-copy decisions can be made), lists and tuples of them, and numbers
// when known. A node whose value can't be worked out without data has no entry.
#pragma once
#include <map>
#include <optional>
#include <unordered_map>

#include "ops/registry.h"
#include "passes/pass.h"

namespace inplace {

class MetaTable {
 public:
  const Value* find(const Node* n) const;
  const Tensor* tensor(const Node* n) const;  // null unless a known tensor
  void set(const Node* n, Value v) { values_[n] = std::move(v); }
  // Removes and returns n's entry (nullopt when it has none).
  std::optional<Value> take(const Node* n);
  bool has(const Node* n) const { return values_.count(n) != 0; }
  // `v` with every node reference replaced by its meta; false if one is unknown.
  bool substitute(const Value& v, Value* out) const;

 private:
  std::map<const Node*, Value> values_;
};

// The meta of a placeholder: node meta, else options.input_metas, else its default value.
std::optional<Value> placeholder_meta(const Node& n, const PassOptions& options);
// The meta of `node` from the metas of the nodes it reads; nullopt when unknown.
std::optional<Value> infer_node_meta(const Graph& graph, const Node& node, const MetaTable& table,
                                     const PassOptions& options);
MetaTable infer_metas(const Graph& graph, const PassOptions& options);
// Records shape and dtype of every tensor-valued node in Node::meta where it is missing.
void annotate_metas(Graph& graph, const MetaTable& table);

// The metas of a graph kept between passes (PassContext::meta_cache), keyed by node: a refresh
// infers again only the nodes a pass rewrote and the nodes that read them. A node's entry is
// kept while its stamp (kind, target, name, arguments with the nodes they name, and a
// placeholder's meta or a constant's shape) is unchanged and the meta of none of its inputs
// changed; a pass that changes what the stamp cannot see (a constant replaced under the same
// target) calls invalidate().
class MetaCache {
 public:
  // The metas of every node of `graph`, as infer_metas gives them. The table is the cache's: a
  // pass may add entries for nodes it makes (they are inferred again at the next refresh).
  MetaTable& refresh(const Graph& graph, const PassOptions& options);
  // n (and so every node that reads it) is inferred again at the next refresh.
  void invalidate(const Node* n) { stamps_.erase(n); }
  // Nodes inferred since the cache was made (tests, timing).
  int64_t inferred() const { return inferred_; }

 private:
  MetaTable table_;
  std::unordered_map<const Node*, uint64_t> stamps_;
  int64_t inferred_ = 0;
};

// ctx's cache, made at the first call, refreshed for `graph`: what a pass reads instead of
// infer_metas.
MetaTable& cached_metas(const Graph& graph, PassContext& ctx);

// Whether a rewrite may make `op` (a registered name, "fused_addmm") on `args` (positional, every
// one of its schema's; nodes stand for their metas): the op's shape rule accepts them and the
// engine's backend runs it (PassOptions::kernel_supports, when set).
bool backend_runs(const MetaTable& metas, const std::string& op, const std::vector<Value>& args,
                  const PassOptions& options);

}  // namespace inplace
