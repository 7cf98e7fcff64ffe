// Which steps of a plan share a launch on a GPU, decided once when a context is made (each
// launch costs a few microseconds whatever it moves):
// - epilogue writes: a product step and up to two steps after it that read slices of its result
//   and write only bindings the product does not touch (a decoder layer's q/k/v GEMV and its k
//   and v kv_cache_update), when the kernel table has a kernel for the two ops
//   (LaunchKernels::add_epilogue_writes); that kernel may still refuse a form at run time. The
//   writes may lie a few steps past the product (an exported graph's other products, its
//   position arithmetic) when they are independent of every step in between: they then run
//   before those steps, with the product;
// - pairs: two adjacent steps of one op with a pair kernel (LaunchKernels::add_pair) that write
//   bindings or temporaries, neither reading or writing memory the other writes (temporaries
//   compared by their planned arena ranges).
// - batches: steps of one op with a batch kernel (LaunchKernels::add_batch), each writing one
//   result of one dtype to bindings or temporaries and in no other group, run as one launch
//   where the first of them is: each later one is independent of every step from the first up
//   to it, so running it early changes nothing (a Hugging Face decoder's per-layer position
//   state, `cumulative_length = cache_position[0] + 1`: one int64 add a layer, one launch).
// - prologues: a norm step and the product right after it that takes the norm's result as its
//   input row (Gemma's norm after attention with its residual add, then the MLP's product with its
//   own norm; the same after the MLP, then the next layer's q/k/v product), when the kernel table
//   has a prologue kernel for the two ops (LaunchKernels::add_prologue): the product's blocks
//   compute the norm's row themselves and one of them stores it (the norm step's result, for the
//   steps after). The product's own epilogue writes go with it. The kernel may refuse a form at
//   run time: the steps then run as planned without it.
// A run takes a group of epilogue writes first; a pair inside it runs when the kernel refuses.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/kernel_table.h"
#include "backend/plan.h"

namespace inplace::cuda {

// Two independent steps of one op in one launch (a decoder layer's two kv_cache_update steps,
// k and v): computes op(a1) into o1 and op(a2) into o2 exactly as two calls of the op's kernel
// would. Steps are paired when neither reads or writes what the other writes.
using PairKernel =
    std::function<void(const Args& a1, const std::vector<Tensor>& o1, const KernelContext& c1,
                       const Args& a2, const std::vector<Tensor>& o2, const KernelContext& c2)>;

// One step's operands, results and launch context.
struct StepCall {
  const Args* args = nullptr;
  const std::vector<Tensor>* outs = nullptr;
  KernelContext ctx;
};
// A product step and the row writes right after it that read its result (a decoder layer's
// q/k/v GEMV, then its k and v kv_cache_update into the caches) in one launch: computes the
// product and, from its epilogue, does each write exactly as the steps in order would. Returns
// false, having launched nothing, when the operands are not a form it fuses; the executable
// then runs the steps one by one. At most kMaxEpilogueWrites writes.
constexpr int kMaxEpilogueWrites = 2;
using WritesKernel = std::function<bool(const StepCall& product, const StepCall* writes, int n)>;

// A norm step, the product step after it that reads the norm's result as its input row, and
// the product's epilogue writes (n of them; a q/k/v product's cache writes) in one launch,
// exactly as the steps in order would compute them. Returns false, having launched nothing,
// when the operands are not a form it joins.
using PrologueKernel = std::function<bool(const StepCall& norm, const StepCall& product,
                                          const StepCall* writes, int n)>;

// Up to kMaxBatch independent steps of one op in one launch (calls in step order), each
// computed exactly as the op's kernel computes it alone.
constexpr int kMaxBatch = 16;
using BatchKernel = std::function<void(const StepCall* calls, int n)>;

// The joined-launch kernels of this backend, registered with its kernels.
class LaunchKernels {
 public:
  static LaunchKernels& get();
  // A pair kernel for every overload of `name` (its kernel registered with add before).
  void add_pair(const std::string& name, PairKernel kernel);
  // A kernel for a step of `product` followed by steps of `write` (every overload of each).
  void add_epilogue_writes(const std::string& product, const std::string& write,
                           WritesKernel kernel);
  // A batch kernel for every overload of `name`.
  void add_batch(const std::string& name, BatchKernel kernel);
  // A kernel for a step of `norm` followed by a step of `product` (every overload of each).
  void add_prologue(const std::string& norm, const std::string& product, PrologueKernel kernel);
  const PairKernel* find_pair(const OpDef& op) const;
  const BatchKernel* find_batch(const OpDef& op) const;
  const WritesKernel* find_epilogue_writes(const OpDef& product, const OpDef& write) const;
  const PrologueKernel* find_prologue(const OpDef& norm, const OpDef& product) const;

 private:
  std::unordered_map<const OpDef*, PairKernel> pairs_;
  std::unordered_map<const OpDef*, BatchKernel> batches_;
  std::map<std::pair<const OpDef*, const OpDef*>, WritesKernel> epilogue_writes_;
  std::map<std::pair<const OpDef*, const OpDef*>, PrologueKernel> prologues_;
};

struct LaunchGroups {
  // writes[q]: step q and the steps write_steps[q] (after q, in order; write_count[q] of them)
  // run through this kernel (null: no).
  std::vector<const WritesKernel*> writes;
  std::vector<std::vector<size_t>> write_steps;
  std::vector<int> write_count;
  // prologue[q]: step q joins the launch of step q + 1 (and of q + 1's writes) through this
  // kernel (null: no).
  std::vector<const PrologueKernel*> prologue;
  // pair[q]: steps q and q + 1 run as one launch through this kernel (null: not paired).
  std::vector<const PairKernel*> pair;
  // batch[q]: step q and the steps batch_members[q] (later ones) run as one launch at q through
  // this kernel; batched[r]: step r runs in an earlier step's batch (skipped at its place).
  std::vector<const BatchKernel*> batch;
  std::vector<std::vector<size_t>> batch_members;
  std::vector<bool> batched;
};

LaunchGroups plan_launch_groups(const Plan& plan);

}  // namespace inplace::cuda
