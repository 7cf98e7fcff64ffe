#include "backend/eager_call.h"

#include "backend/kernel_table.h"
#include "core/error.h"

namespace inplace {

namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

// The functional twin's result written into self, checking the cast like torch.
Value run_inplace(const OpDef& op, const Args& args) {
  const std::string name = op.schema.full_name();
  const OpDef* twin = Registry::get().find(op.functional);
  IP_ASSERT(twin != nullptr, "functional twin '" + op.functional + "' of '" + name + "' exists");
  const int self_index = op.schema.mutated_args()[0];
  const Tensor& self = args[self_index].as_tensor(name.c_str());
  Value r = eager_call(*twin, args);
  const Tensor& res = r.as_tensor(name.c_str());
  IP_CHECK(can_cast(res.dtype(), self.dtype()), kDTypeMismatch, "[", name, "] result type ",
           dtype_name(res.dtype()), " can't be cast to the desired output type ",
           dtype_name(self.dtype()));
  IP_CHECK(res.shape() == self.shape(), kShapeMismatch, "[", name, "] output with shape ",
           shape_str(self.shape()), " doesn't match the broadcast shape ", shape_str(res.shape()));
  self.copy_from(res);
  return args[self_index];
}

// name.nn_functional(self, ..., bool inplace): name_ when inplace, else name.
const OpDef* nn_functional_target(const OpDef& op, const Args& args) {
  const std::string& name = op.schema.name;
  const bool inplace = args.back().as_bool(name.c_str());
  const OpDef* target = Registry::get().find(inplace ? name + "_" : name);
  IP_ASSERT(target != nullptr, "'" + name + "' and '" + name + "_' are registered");
  return target;
}

bool is_nn_functional(const OpDef& op) {
  return op.schema.overload == "nn_functional" && !op.schema.args.empty() &&
         op.schema.args.back().name == "inplace";
}

}  // namespace

Value eager_call(const OpDef& op, const Args& args) {
  const KernelTable& table = KernelTable::get();
  if (const EagerKernel* k = table.find_eager(op, kCpu)) return (*k)(args);
  if (op.eager) return op.eager(args);
  if (is_nn_functional(op))
    return eager_call(*nn_functional_target(op, args), Args(args.begin(), args.end() - 1));
  if (op.infer) {
    const Kernel* kernel = table.find(op, kCpu);
    IP_CHECK(kernel != nullptr, kUnsupported, "[", op.schema.full_name(), "] has no cpu kernel");
    std::vector<Tensor> metas = op.infer(args);
    std::vector<Tensor> results;
    results.reserve(metas.size());
    for (const Tensor& m : metas) results.push_back(Tensor::empty(m.shape(), m.dtype()));
    (*kernel)(args, results, KernelContext{});
    return pack_results(op.schema, std::move(results));
  }
  IP_ASSERT(!op.functional.empty(), "op '" + op.schema.full_name() + "' runs eagerly");
  return run_inplace(op, args);
}

bool has_eager(const OpDef& op) {
  const KernelTable& table = KernelTable::get();
  return table.find_eager(op, kCpu) || op.eager || is_nn_functional(op) ||
         (op.infer && table.find(op, kCpu)) || !op.functional.empty();
}

}  // namespace inplace
