// The cpu registers like CUDA (issue 28 step 2), for the compute families (reduction .. nn):
// the op families whose cpu compute moved to src/kernels/cpu declare no compute (OpDef::out is
// null) and every planned op of theirs has a cpu kernel in the kernel table, registered by its
// family's register_*_kernels.
#include <gtest/gtest.h>

#include <string>

#include "backend/kernel_table.h"
#include "ops/registry.h"

namespace inplace {
namespace {

// Every overload of each name, per family.
const char* const kMovedOps[] = {
    // reduction_ops
    "sum", "mean", "var", "std", "amax", "amin", "max", "min", "argmax", "argmin", "softmax",
    "log_softmax", "_softmax", "_log_softmax",
    // scan_ops, sort_ops
    "cumsum", "cumprod", "topk", "sort", "argsort", "msort",
    // conv_ops
    "conv1d", "convolution",
    // pointwise_extra_ops
    "addcmul", "addcdiv", "lerp", "hardtanh", "leaky_relu",
    // creation_ops
    "zeros", "ones", "empty", "full", "scalar_tensor", "zeros_like", "ones_like", "empty_like",
    "full_like", "new_zeros", "new_ones", "new_empty", "new_full", "arange", "cat", "stack",
    "repeat", "roll", "flip", "tril", "triu",
    // matrix_ops, matrix_batch_ops, einsum_ops
    "mm", "bmm", "matmul", "dot", "mv", "addmm", "linear", "baddbmm", "addbmm", "einsum",
    // nn_ops
    "layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm",
    "scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu", "dropout",
    "alpha_dropout", "feature_alpha_dropout", "feature_dropout", "dropout1d", "dropout2d",
    "dropout3d", "native_dropout"};

TEST(CpuRegistration, ComputeFamiliesDeclareAndTheCpuComputes) {
  const KernelTable& table = KernelTable::get();
  for (const char* name : kMovedOps) {
    const std::vector<const OpDef*>& ops = Registry::get().overloads(name);
    ASSERT_FALSE(ops.empty()) << name;
    for (const OpDef* op : ops) {
      const std::string full = op->schema.full_name();
      EXPECT_FALSE(op->out) << full << " still computes in its declaration";
      EXPECT_TRUE(op->infer) << full;
      EXPECT_NE(table.find(*op, DeviceType::kCpu), nullptr) << full << " has no cpu kernel";
    }
  }
}

}  // namespace
}  // namespace inplace
