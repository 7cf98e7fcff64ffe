// Which steps of a plan share a launch on a GPU (docs/cuda.md, "Execution on a stream").
#include "kernels/cuda/launch_groups.h"

#include "kernels/cuda/launch.h"

#include <algorithm>

#include "core/error.h"

namespace inplace::cuda {

namespace {

// Whether two buffers share memory: the same buffer, or arena buffers whose planned ranges
// overlap (the memory plan reuses arena memory between values whose lives do not overlap).
bool overlap(const Plan& plan, BufferId x, BufferId y) {
  if (x == y) return true;
  if (x.kind != BufferKind::kArena || y.kind != BufferKind::kArena) return false;
  const ArenaSlot &a = plan.arena[x.index], &b = plan.arena[y.index];
  return a.offset_bytes < b.offset_bytes + b.nbytes && b.offset_bytes < a.offset_bytes + a.nbytes;
}

bool uses(const Plan& plan, const Step& s, BufferId id) {
  for (const TensorRef& o : s.outs)
    if (overlap(plan, o.buffer, id)) return true;
  for (const TensorSlot& t : s.tensors)
    if (overlap(plan, t.ref.buffer, id)) return true;
  return false;
}

// Neither step reads or writes memory the other writes.
bool independent(const Plan& plan, const Step& a, const Step& b) {
  for (const TensorRef& o : a.outs)
    if (uses(plan, b, o.buffer)) return false;
  for (const TensorRef& o : b.outs)
    if (uses(plan, a, o.buffer)) return false;
  return true;
}

bool writes_only(const Step& s, std::initializer_list<BufferKind> kinds) {
  for (const TensorRef& o : s.outs)
    if (std::find(kinds.begin(), kinds.end(), o.buffer.kind) == kinds.end()) return false;
  return true;
}

// Steps a (just before b) and b may run as one launch: both write bindings (placed caches) or
// temporaries, and they are independent.
bool pairable(const Plan& plan, const Step& a, const Step& b) {
  const auto kinds = {BufferKind::kInput, BufferKind::kArena};
  return a.kind == StepKind::kOut && b.kind == StepKind::kOut && !a.on_host && !b.on_host &&
         a.op == b.op && writes_only(a, kinds) && writes_only(b, kinds) && independent(plan, a, b);
}

// How far past a product its writes are looked for.
constexpr size_t kWriteLookahead = 8;

// The steps after q (at most kMaxEpilogueWrites, within kWriteLookahead, none in `taken`) that
// write rows of step q's result into bindings through one epilogue-writes kernel: each reads the
// product, writes only bindings that step q does not touch, and is independent of every step
// between q and it (it runs before them). Stops at a step that is not a device kernel's.
std::vector<size_t> epilogue_writes(const Plan& plan, size_t q, const std::vector<char>& taken,
                                    const WritesKernel** kernel) {
  const Step& a = plan.steps[q];
  *kernel = nullptr;
  std::vector<size_t> steps;
  if (a.kind != StepKind::kOut || a.on_host || !a.op || a.outs.size() != 1 ||
      a.outs[0].buffer.kind != BufferKind::kArena)
    return steps;
  for (size_t r = q + 1; r < plan.steps.size() && r <= q + kWriteLookahead &&
                         steps.size() < static_cast<size_t>(kMaxEpilogueWrites);
       ++r) {
    const Step& b = plan.steps[r];
    if (b.kind != StepKind::kOut || b.on_host || !b.op) break;
    const WritesKernel* k = LaunchKernels::get().find_epilogue_writes(*a.op, *b.op);
    bool ok = k && (!*kernel || k == *kernel) && !taken[r] &&
              writes_only(b, {BufferKind::kInput}) && uses(plan, b, a.outs[0].buffer);
    for (const TensorRef& o : b.outs) ok = ok && !uses(plan, a, o.buffer);
    for (size_t e = q + 1; e < r && ok; ++e) ok = independent(plan, plan.steps[e], b);
    if (!ok) continue;  // a step in between
    *kernel = k;
    steps.push_back(r);
  }
  if (steps.empty()) *kernel = nullptr;
  return steps;
}

// The prologue kernel that runs step q (a norm) in the launch of step q + 1 (a product reading
// q's one result, a temporary), or null: neither q + 1 nor its epilogue writes (write_steps)
// write what q reads.
const PrologueKernel* prologue_of(const Plan& plan, size_t q,
                                  const std::vector<std::vector<size_t>>& write_steps,
                                  const std::vector<char>& taken) {
  if (q + 1 >= plan.steps.size() || taken[q] || !prologues_enabled()) return nullptr;
  const Step &a = plan.steps[q], &b = plan.steps[q + 1];
  auto device_step = [](const Step& s) { return s.kind == StepKind::kOut && !s.on_host && s.op; };
  if (!device_step(a) || !device_step(b) || a.outs.size() != 1 ||
      a.outs[0].buffer.kind != BufferKind::kArena)
    return nullptr;
  const PrologueKernel* k = LaunchKernels::get().find_prologue(*a.op, *b.op);
  if (!k || !uses(plan, b, a.outs[0].buffer)) return nullptr;
  for (const TensorRef& o : b.outs)
    if (uses(plan, a, o.buffer)) return nullptr;
  for (size_t r : write_steps[q + 1])
    for (const TensorRef& o : plan.steps[r].outs)
      if (uses(plan, a, o.buffer)) return nullptr;
  return k;
}

// Steps after q that run in q's batch: of q's op and result dtype, one result each, writing
// bindings or temporaries, in no other group, each independent of every step from q up to it.
// Looks at most kBatchWindow steps ahead.
constexpr size_t kBatchWindow = 1024;
std::vector<size_t> batch_members(const Plan& plan, size_t q, const std::vector<char>& taken) {
  const Step& a = plan.steps[q];
  const auto kinds = {BufferKind::kInput, BufferKind::kArena};
  std::vector<size_t> members;
  if (a.kind != StepKind::kOut || a.on_host || !a.op || a.outs.size() != 1 ||
      !writes_only(a, kinds))
    return members;
  const size_t end = std::min(plan.steps.size(), q + 1 + kBatchWindow);
  for (size_t r = q + 1; r < end && members.size() + 1 < kMaxBatch; ++r) {
    const Step& b = plan.steps[r];
    if (taken[r] || b.kind != StepKind::kOut || b.on_host || b.op != a.op || b.outs.size() != 1 ||
        b.outs[0].dtype != a.outs[0].dtype || !writes_only(b, kinds))
      continue;
    bool ok = true;
    for (size_t e = q; e < r && ok; ++e) ok = independent(plan, plan.steps[e], b);
    if (ok) members.push_back(r);
  }
  return members;
}

}  // namespace

LaunchKernels& LaunchKernels::get() {
  static LaunchKernels k;
  return k;
}

void LaunchKernels::add_pair(const std::string& name, PairKernel kernel) {
  const std::vector<const OpDef*>& ops = Registry::get().overloads(name);
  IP_ASSERT(!ops.empty(), "pair kernels are registered for registered ops");
  for (const OpDef* op : ops) pairs_[op] = kernel;
}

void LaunchKernels::add_batch(const std::string& name, BatchKernel kernel) {
  // As the kernel table names ops: "add.Tensor" one overload, "add" every overload.
  const Registry& registry = Registry::get();
  if (const OpDef* one = registry.find(name); one && name.find('.') != std::string::npos) {
    batches_[one] = kernel;
    return;
  }
  for (const OpDef* op : registry.overloads(name)) batches_[op] = kernel;
}

const BatchKernel* LaunchKernels::find_batch(const OpDef& op) const {
  auto it = batches_.find(&op);
  return it == batches_.end() ? nullptr : &it->second;
}

const PairKernel* LaunchKernels::find_pair(const OpDef& op) const {
  auto it = pairs_.find(&op);
  return it == pairs_.end() ? nullptr : &it->second;
}

namespace {

// Registers `kernel` for every overload pair of the ops `first` and `second`.
template <typename Kernel>
void add_joined(std::map<std::pair<const OpDef*, const OpDef*>, Kernel>& kernels,
                const std::string& first, const std::string& second, const Kernel& kernel) {
  const Registry& registry = Registry::get();
  const std::vector<const OpDef*>&a = registry.overloads(first), &b = registry.overloads(second);
  IP_ASSERT(!a.empty() && !b.empty(), "joined launches are registered for registered ops");
  for (const OpDef* x : a)
    for (const OpDef* y : b) kernels[{x, y}] = kernel;
}

template <typename Kernel>
const Kernel* find_joined(const std::map<std::pair<const OpDef*, const OpDef*>, Kernel>& kernels,
                          const OpDef& first, const OpDef& second) {
  auto it = kernels.find({&first, &second});
  return it == kernels.end() ? nullptr : &it->second;
}

}  // namespace

void LaunchKernels::add_epilogue_writes(const std::string& product, const std::string& write,
                                        WritesKernel kernel) {
  add_joined(epilogue_writes_, product, write, kernel);
}

const WritesKernel* LaunchKernels::find_epilogue_writes(const OpDef& product,
                                                        const OpDef& write) const {
  return find_joined(epilogue_writes_, product, write);
}

void LaunchKernels::add_prologue(const std::string& norm, const std::string& product,
                                 PrologueKernel kernel) {
  add_joined(prologues_, norm, product, kernel);
}

const PrologueKernel* LaunchKernels::find_prologue(const OpDef& norm, const OpDef& product) const {
  return find_joined(prologues_, norm, product);
}

LaunchGroups plan_launch_groups(const Plan& plan) {
  KernelTable::get();  // registers the joined-launch kernels with the others
  const size_t n = plan.steps.size();
  LaunchGroups g;
  g.writes.assign(n, nullptr);
  g.write_steps.assign(n, {});
  g.write_count.assign(n, 0);
  std::vector<char> taken(n, 0);
  for (size_t q = 0; q < n; ++q) {
    if (taken[q]) continue;
    g.write_steps[q] = epilogue_writes(plan, q, taken, &g.writes[q]);
    g.write_count[q] = static_cast<int>(g.write_steps[q].size());
    for (size_t r : g.write_steps[q]) taken[r] = 1;
  }
  // A norm joined to the product after it is in no pair or batch (the product, with its
  // writes, is a group already, or joins none).
  g.prologue.assign(n, nullptr);
  std::vector<char> joined(n, 0);
  for (size_t q = 0; q + 1 < n; ++q) {
    g.prologue[q] = prologue_of(plan, q, g.write_steps, taken);
    if (g.prologue[q]) joined[q] = joined[q + 1] = 1;
  }
  g.pair.assign(n, nullptr);
  for (size_t q = 0; q + 1 < n; ++q) {
    const Step& a = plan.steps[q];
    if (!a.op || joined[q] || joined[q + 1] || !pairable(plan, a, plan.steps[q + 1])) continue;
    if (const PairKernel* k = LaunchKernels::get().find_pair(*a.op)) {
      g.pair[q] = k;
      ++q;  // q + 1 is taken
    }
  }
  // Steps already in a group of writes or a pair stay there.
  for (size_t q = 0; q < n; ++q) {
    if (g.writes[q] || joined[q]) taken[q] = 1;
    if (g.pair[q]) taken[q] = taken[q + 1] = 1;
  }
  g.batch.assign(n, nullptr);
  g.batch_members.assign(n, {});
  g.batched.assign(n, false);
  for (size_t q = 0; q < n; ++q) {
    const Step& a = plan.steps[q];
    if (taken[q] || !a.op) continue;
    const BatchKernel* k = LaunchKernels::get().find_batch(*a.op);
    if (!k) continue;
    std::vector<size_t> members = batch_members(plan, q, taken);
    if (members.empty()) continue;
    taken[q] = 1;
    for (size_t r : members) {
      taken[r] = 1;
      g.batched[r] = true;
    }
    g.batch[q] = k;
    g.batch_members[q] = std::move(members);
  }
  return g;
}

}  // namespace inplace::cuda
