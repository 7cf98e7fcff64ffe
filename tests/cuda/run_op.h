// One op's kernel on the cpu or the GPU, for the kernel tests that compare the two.
#pragma once
#include <gtest/gtest.h>

#include <vector>

#include "backend/kernel_table.h"
#include "cuda_test_util.h"
#include "ops/registry.h"

namespace inplace::testing {

// `op` on `device` (its tensor arguments, and those in lists, uploaded with the same views for
// cuda), its result back on the cpu.
inline Tensor run_op_on(DeviceType device, const char* op, const std::vector<Value>& args) {
  ResolvedCall call = resolve_call(op, args, {}, "test");
  const Kernel* kernel = KernelTable::get().find(*call.op, device);
  EXPECT_NE(kernel, nullptr) << op;
  if (!kernel) return Tensor();
  const Tensor meta = call.op->infer(call.args)[0];
  const Device where = device == DeviceType::kCuda ? Device::cuda() : Device::cpu();
  std::vector<Tensor> got{Tensor::empty(meta.shape(), meta.dtype(), where)};
  std::vector<Value> bound = call.args;
  if (device == DeviceType::kCuda)
    for (Value& v : bound) {
      if (v.is_tensor()) v = Value::from_tensor(to_cuda_view(v.tensor));
      for (Value& item : v.items)
        if (item.is_tensor()) item = Value::from_tensor(to_cuda_view(item.tensor));
    }
  (*kernel)(bound, got, KernelContext{});
  return got[0].to_device(Device::cpu());
}

}  // namespace inplace::testing
