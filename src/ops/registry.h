// The op registry: one OpDef per (name, overload), built once at start-up, and the mapping
// from every FX target spelling onto a canonical op.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/schema.h"

namespace inplace {

// Arguments bound positionally to the schema (defaults filled in).
using Args = std::vector<Value>;
// Runs the op eagerly: its results (a Tensor, a tuple, a list, a number or None). An op's own
// eager function is a view or metadata function (no compute); compute sits in the backends'
// kernels (backend/kernel_table.h) and backend/eager_call.h runs any op eagerly on the cpu.
using EagerFn = std::function<Value(const Args&)>;
// Shape/dtype work only: result metas (Tensor::meta) from arguments whose tensors may be metas.
using InferFn = std::function<std::vector<Tensor>(const Args&)>;
// Computes into pre-allocated results. TODO(issue 28 step 1): the families whose cpu compute has
// not yet moved to src/kernels/cpu still set it; the kernel table wraps it.
using OutFn = std::function<void(const Args&, const std::vector<Tensor>&)>;

enum class OpKind : uint8_t {
  kFunctional,  // fresh results, writes nothing
  kView,        // results alias an argument, no data work
  kMutating,    // writes one or more arguments (add_, setitem, index_put_, copy_)
};

// Properties of an op that passes and the engine ask about, set when the op is registered
// (Registry::tag) rather than kept as name lists where they are used.
enum OpTag : uint32_t {
  // Each element of the result depends only on the same element of the operands (after
  // broadcasting): the result may share memory with any operand of identical layout.
  kPointwise = 1u << 0,
  // result = self with some elements written (slice_scatter, index_put, fill, copy, ...): the
  // kernel copies self into the result first, a no-op when the two are the same memory.
  kScatterLike = 1u << 1,
  // Writes new rows of a [batch, heads, s_max, head_dim] cache at a runtime position
  // (kv_cache_update): the engine reports such an aliased output as kind kv_cache_update.
  kCacheUpdate = 1u << 2,
  // A row norm that a backend may compute inside the launch of the step right after it, when
  // that step reads its result (kernels/cuda/launch_groups.h's prologues: Gemma's norms before
  // the next product): the memory plan keeps its operands live through that step, so that the
  // joined launch's results cannot land on them.
  kJoinsNext = 1u << 3,
};

struct OpDef {
  Schema schema;
  OpKind kind = OpKind::kFunctional;
  uint32_t tags = 0;  // OpTag bits
  bool has_tag(OpTag t) const { return (tags & t) != 0; }
  // Mutating ops: the out-of-place twin ("add.Tensor") whose result is the new value of the
  // first mutated argument; empty when there is none.
  std::string functional;
  EagerFn eager;  // views and metadata ops (size, dim), and not yet moved families; else null
  InferFn infer;  // the shape/dtype rule of an op whose results are planned
  OutFn out;      // optional, with infer (see OutFn)
  // Results whose shape depends on data (boolean-mask indexing): no static plan.
  bool dynamic_shape = false;
  // reshape, flatten, _unsafe_view: the result is a view of self when self's strides allow
  // (as torch's), else a copy. infer/out describe the copy; a plan whose self has a fixed
  // layout that allows the view makes it a view (no step, no copy).
  bool maybe_view = false;
};

class Registry {
 public:
  static const Registry& get();

  void add(OpDef def);
  // Registers `schema` with its shape/dtype rule (out: see OutFn; null for a moved family).
  void add_out(const std::string& schema, InferFn infer, OutFn out);
  // An op without planned results: `eager` null when a backend's eager kernel computes it.
  void add_eager(const std::string& schema, EagerFn eager);
  void add_view(const std::string& schema, EagerFn view);
  // Registers a mutating op whose new value of `self` is `functional`'s result: eagerly the
  // twin runs, then its result is written into self (checking the cast like torch).
  void add_inplace(const std::string& schema, const std::string& functional);
  // Adds `tags` to every overload of each op in `names` (registered before; asserted).
  void tag(std::initializer_list<const char*> names, uint32_t tags);
  // Extra spelling for a canonical name ("__iadd__" -> "add_", "transpose_" ...).
  void add_alias(const std::string& spelling, const std::string& canonical_name);

  const OpDef* find(const std::string& full_name) const;  // "add.Tensor" or "relu"
  const std::vector<const OpDef*>& overloads(const std::string& name) const;
  std::vector<const OpDef*> all() const;

  // The canonical base name for a node target: "torch.ops.aten.add_.Tensor" -> "add_",
  // "torch.nn.functional.relu" -> "relu", "_operator.setitem" -> "setitem". Also returns the
  // overload when the spelling carries one. Empty if unknown.
  std::string canonical_name(const std::string& target, std::string* overload) const;

 private:
  std::map<std::string, std::unique_ptr<OpDef>> defs_;  // by full name
  std::map<std::string, std::vector<const OpDef*>> by_name_;
  std::map<std::string, std::string> aliases_;
};

// Binds call arguments to a schema: positional, keywords, varargs for a trailing int list
// (x.view(2, 3)), defaults. Returns false (with a reason) when they do not fit.
bool bind_args(const Schema& schema, const std::vector<Value>& args,
               const std::vector<std::pair<std::string, Value>>& kwargs, Args* out,
               std::string* why);
// Whether bind_args(schema, args, {}) would give `args` as they are: every parameter given
// positionally and of its type, none to gather into or wrap as a list. A caller may then use
// them without binding (and without copying them).
bool already_bound(const Schema& schema, const std::vector<Value>& args);

struct ResolvedCall {
  const OpDef* op = nullptr;
  Args args;
};
// Picks the overload of `target` that the arguments fit; `node_name` names the node in errors
// ("[node add_1] unknown op 'foo_'").
ResolvedCall resolve_call(const std::string& target, const std::vector<Value>& args,
                          const std::vector<std::pair<std::string, Value>>& kwargs,
                          const std::string& node_name);

// Registration lists, one per op family (ops/<family>.cpp).
void register_elementwise_ops(Registry& r);
void register_reduction_ops(Registry& r);
void register_matrix_ops(Registry& r);
void register_creation_ops(Registry& r);
void register_view_ops(Registry& r);
void register_indexing_ops(Registry& r);
void register_nn_ops(Registry& r);
void register_misc_ops(Registry& r);
void register_kv_cache_ops(Registry& r);
void register_scan_ops(Registry& r);          // cumsum, cumprod
void register_sort_ops(Registry& r);          // topk, sort, argsort, msort
void register_matrix_batch_ops(Registry& r);  // baddbmm, addbmm
void register_einsum_ops(Registry& r);
void register_fused_linear_ops(Registry& r);     // fused_linear, rms_norm_linear, fused_addmm
void register_gated_mlp_ops(Registry& r);        // gated_mlp, rms_norm_gated_mlp
void register_pointwise_extra_ops(Registry& r);  // addcmul addcdiv lerp hardtanh leaky_relu
void register_unsafe_split_ops(Registry& r);
void register_export_assert_ops(Registry& r);  // _assert_tensor_metadata
void register_conv_ops(Registry& r);           // conv1d
void register_rotary_ops(Registry& r);         // rotary_embedding
void register_sample_row_ops(Registry& r);     // sample_row (generation's draw)
void register_rotary_table_ops(Registry& r);   // rotary_table (a rotary cos/sin table)
// The old names of renamed ops as aliases (ops/renamed_ops.h); registered last.
void register_renamed_ops(Registry& r);

// Helpers the families share.
Value pack_results(const Schema& schema, std::vector<Tensor> results);

}  // namespace inplace
