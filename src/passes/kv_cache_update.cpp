// kv_cache_update (an engine pass): rewrites a KV-cache write into kv_cache_update. Only the
// write that produces a mutated input's final value is rewritten, and only when that input is
// a static 4-D tensor written along dim 2 with step 1: a functional slice_scatter the program
// does not assign back never takes this path. The mutation's kind becomes kKvCacheUpdate.
#include "core/value.h"
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"

namespace inplace {

namespace {

struct Match {
  Value update, start, index;
};

bool int_value(const Value& v, int64_t* out) {
  if (v.kind != Value::Kind::kInt) return false;
  *out = v.i;
  return true;
}

const Tensor* tensor_of(const Value& v, const std::map<const Node*, Value>& env) {
  if (!v.is_node()) return v.is_tensor() ? &v.tensor : nullptr;
  auto it = env.find(v.node);
  if (it != env.end() && it->second.is_tensor()) return &it->second.tensor;
  // A value broadcast to a slice at a runtime position has no static meta; the value it
  // expands has the same shape whenever the write is not empty.
  std::string overload;
  std::string name = Registry::get().canonical_name(v.node->target, &overload);
  if ((name == "expand_as" || name == "type_as") && !v.node->args.empty())
    return tensor_of(v.node->args[0], env);
  return nullptr;
}

bool match(const Node* n, const Node* cache, const Shape& cshape,
           const std::map<const Node*, Value>& env, Match* m) {
  if (!n->is_call() || n->args.empty() || !n->args[0].is_node() || n->args[0].node != cache)
    return false;
  std::string overload;
  std::string name = Registry::get().canonical_name(n->target, &overload);
  const int64_t s_max = cshape[2];
  auto dim_is_2 = [](const Value& v) {
    int64_t d;
    return int_value(v, &d) && (d == 2 || d == -2);
  };
  auto fits = [&](const Tensor* u) {
    return u && u->dim() == 4 && u->size(0) == cshape[0] && u->size(1) == cshape[1] &&
           u->size(3) == cshape[3];
  };
  if (name == "slice_scatter" && n->args.size() >= 6) {
    const Tensor* u = tensor_of(n->args[1], env);
    int64_t step;
    if (!dim_is_2(n->args[2]) || !int_value(n->args[5], &step) || step != 1 || !fits(u))
      return false;
    const Value& start = n->args[3];
    int64_t s, e;
    if (start.is_none()) {
      m->start = Value::integer(0);
    } else if (int_value(start, &s)) {
      if (s < 0) s += s_max;  // Python slice bounds wrap once
      if (int_value(n->args[4], &e)) {
        if (e < 0) e += s_max;
        if (e - s != u->size(2)) return false;
      }
      m->start = Value::integer(s);
    } else if (start.is_node()) {
      m->start = start;  // a runtime position, checked by the kernel on every call
    } else {
      return false;
    }
    m->update = n->args[1];
    return true;
  }
  if (name == "index_copy" && n->args.size() >= 4) {
    const Tensor* idx = tensor_of(n->args[2], env);
    const Tensor* u = tensor_of(n->args[3], env);
    if (!dim_is_2(n->args[1]) || !idx || idx->dim() != 1) return false;
    // An update with no static meta here (it follows a value at a runtime extent, such as
    // attention over the filled prefix in an earlier layer) is checked by kv_cache_update's own
    // shape rule when the engine is planned, as index_copy would check it.
    if (u && (!fits(u) || idx->size(0) != u->size(2))) return false;
    m->update = n->args[3];
    m->index = n->args[2];
    return true;
  }
  if (name == "index_put" && n->args.size() >= 4) {
    const Value& ind = n->args[1];
    if (n->args[3].kind != Value::Kind::kBool || n->args[3].b || !ind.is_sequence() ||
        ind.items.size() != 3 || !ind.items[0].is_none() || !ind.items[1].is_none())
      return false;
    const Tensor* idx = tensor_of(ind.items[2], env);
    const Tensor* u = tensor_of(n->args[2], env);
    if (!idx || idx->dim() != 1 || !is_integral(idx->dtype(), false) || !fits(u) ||
        u->size(2) != idx->size(0))
      return false;
    m->update = n->args[2];
    m->index = ind.items[2];
    return true;
  }
  return false;
}

// `_to_copy(x, dtype=D)` with nothing else: the functionalizer's write-back of a cache whose new
// value's dtype it could not see (a value behind a runtime extent). The ops matched above give
// their self's dtype, so when D is the cache's own dtype the cast is an identity.
const Node* same_dtype_cast_source(const Node* n, DType cache_dtype) {
  if (!n->is_call() || n->args.size() != 1 || !n->args[0].is_node() || n->kwargs.size() != 1)
    return nullptr;
  std::string overload;
  if (Registry::get().canonical_name(n->target, &overload) != "_to_copy") return nullptr;
  const auto& [key, v] = n->kwargs[0];
  if (key != "dtype" || v.kind != Value::Kind::kDType || v.dtype != cache_dtype) return nullptr;
  return n->args[0].node;
}

class KvCacheUpdatePass : public Pass {
 public:
  std::string name() const override { return "kv_cache_update"; }
  void run(Graph& g, PassContext& ctx) override {
    // Shapes of every value, from metadata (placeholders: their meta or options.input_metas;
    // lifted buffers: their constant's): nothing runs.
    MetaTable& metas = cached_metas(g, ctx);
    std::map<const Node*, Value> env;
    for (Node* n : g.nodes())
      if (const Value* v = metas.find(n)) env[n] = *v;
    std::vector<Node*> placeholders = g.placeholders();
    Node* out = g.output();
    std::vector<Value> leaves;
    flatten_value(out->args[0], &leaves);
    for (Mutation& mutation : ctx.mutations) {
      const int o = mutation.output, i = mutation.input;
      if (o >= static_cast<int>(leaves.size()) || !leaves[o].is_node()) continue;
      if (i >= static_cast<int>(placeholders.size())) continue;  // a buffer not lifted
      Node* value = leaves[o].node;
      Node* cache = placeholders[i];
      auto cache_meta = env.find(cache);
      if (cache_meta == env.end() || !cache_meta->second.is_tensor()) continue;
      const Shape cshape = cache_meta->second.tensor.shape();
      if (cshape.size() != 4) continue;
      Node* cast = nullptr;
      if (const Node* src = same_dtype_cast_source(value, cache_meta->second.tensor.dtype())) {
        cast = value;
        value = const_cast<Node*>(src);
      }
      Match m;
      if (!match(value, cache, cshape, env, &m)) continue;
      Node* kv = g.insert_before(value, NodeOp::kCallFunction, "inplace.kv_cache_update",
                                 {Value::node_ref(cache), m.update, m.start, m.index}, {},
                                 cache->name + "_kv_update");
      kv->meta = (cast ? cast : value)->meta;
      if (cast) {
        g.replace_all_uses_with(cast, kv);
        g.erase(cast);
      }
      g.replace_all_uses_with(value, kv);
      g.erase(value);
      mutation.kind = MutationKind::kKvCacheUpdate;
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_kv_cache_update_pass() {
  return std::make_unique<KvCacheUpdatePass>();
}

}  // namespace inplace
