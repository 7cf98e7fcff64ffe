// run_host_step on strided memory (the cpu backend's copies stand in for a device's): a step
// whose operand is a transposed view and whose result is every second element of a buffer reads
// the view's elements, writes only the result's elements (the bytes between them keep their
// values), and computes what the kernel computes on the same views directly.
#include <gtest/gtest.h>

#include "backend/host_step.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

TEST(HostStep, StridedOperandsAndResultsAreCopiedByTheirElements) {
  const OpDef* add = Registry::get().find("add.Tensor");
  ASSERT_NE(add, nullptr);
  const Tensor a = iota({3, 2}).transpose(0, 1);  // [2, 3], strides [1, 2]
  const Tensor b = Tensor::full({2, 3}, Scalar(10.0), DType::kFloat32);
  const Tensor buffer = Tensor::full({2, 6}, Scalar(-1.0), DType::kFloat32);
  const Tensor out = buffer.slice(1, 0, std::nullopt, 2);  // [2, 3], strides [6, 2]
  Plan plan;
  Step s;
  s.kind = StepKind::kOut;
  s.op = add;
  s.node = "sum";
  s.on_host = true;
  s.args = {Value::from_tensor(a), Value::from_tensor(b), Value::integer(1)};
  s.tensors = {{{0}, {}}, {{1}, {}}};
  s.tensors[0].ref.shape = a.shape();
  s.tensors[0].ref.dtype = a.dtype();
  s.tensors[1].ref.shape = b.shape();
  s.tensors[1].ref.dtype = b.dtype();
  TensorRef o;
  o.shape = out.shape();
  o.dtype = out.dtype();
  s.outs = {o};
  plan.steps.push_back(s);
  std::vector<std::vector<Value>> args = {s.args};
  std::vector<std::vector<Tensor>> outs = {{out}};
  std::vector<const Kernel*> kernels = {KernelTable::get().find(*add, DeviceType::kCpu)};
  PreparedSteps steps;
  steps.plan = &plan;
  steps.args = &args;
  steps.outs = &outs;
  steps.kernels = &kernels;
  run_host_step(steps, 0, backend_for(Device::cpu()), nullptr);
  EXPECT_TRUE(tensor_equal(out, ft({10, 12, 14, 11, 13, 15}, {2, 3}))) << out.to_string();
  EXPECT_TRUE(tensor_equal(buffer.slice(1, 1, std::nullopt, 2),
                           Tensor::full({2, 3}, Scalar(-1.0), DType::kFloat32)))
      << buffer.to_string();
  EXPECT_EQ(host_step_bytes(s), 3 * 24);  // two operands there, one result back
}

}  // namespace
