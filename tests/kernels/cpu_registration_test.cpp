// The op families moved to "ops declare, the cpu registers like cuda" (issue 28 steps 1-2):
// their declarations carry no cpu compute (OpDef::out and OpDef::eager are null) and their cpu
// kernels come from src/kernels/cpu through the kernel table: planned kernels for the
// functional ops, eager kernels for the forms that write self directly or whose result shape
// depends on data.
#include <gtest/gtest.h>

#include "backend/kernel_table.h"
#include "test_util.h"

namespace inplace {
namespace {

using namespace inplace::testing;

const OpDef& op(const char* name) {
  const OpDef* d = Registry::get().find(name);
  EXPECT_NE(d, nullptr) << name;
  return *d;
}

TEST(CpuRegistration, MovedFamiliesDeclareAndTheCpuComputesFromTheTable) {
  const KernelTable& table = KernelTable::get();
  for (
      const char* name :
      {"kv_cache_update",  "rotary_embedding",      "fused_linear",          "gated_mlp",
       "rms_norm_linear",  "rms_norm_gated_mlp",    "upcast_rms_norm",       "gather",
       "scatter.src",      "scatter.value",         "scatter.reduce",        "scatter.value_reduce",
       "scatter_add",      "scatter_reduce.two",    "slice_scatter",         "select_scatter",
       "diagonal_scatter", "as_strided_scatter",    "index.Tensor",          "_unsafe_index.Tensor",
       "index_put",        "_unsafe_index_put",     "index_select",          "index_copy",
       "index_add",        "index_fill.int_Scalar", "index_fill.int_Tensor", "masked_scatter",
       "embedding",        "embedding_functional",  "fused_embedding"}) {
    const OpDef& d = op(name);
    EXPECT_TRUE(d.infer) << name;
    EXPECT_FALSE(d.out) << name << " computes in its declaration";
    EXPECT_NE(table.find(d, DeviceType::kCpu), nullptr) << name << " has no cpu kernel";
  }
  for (const char* name :
       {"scatter_.src", "scatter_.value", "scatter_.reduce", "scatter_.value_reduce",
        "scatter_add_", "scatter_reduce_.two", "index_put_", "_index_put_impl_", "index_copy_",
        "index_add_", "index_fill_.int_Scalar", "index_fill_.int_Tensor", "masked_scatter_",
        "nonzero", "argwhere", "masked_select", "setitem"}) {
    const OpDef& d = op(name);
    EXPECT_FALSE(d.eager) << name << " computes in its declaration";
    EXPECT_NE(table.find_eager(d, DeviceType::kCpu), nullptr) << name << " has no eager kernel";
  }
  // getitem keeps its view function (the passes ask it for views and metas); the cpu's eager
  // kernel gathers an advanced index.
  EXPECT_TRUE(op("getitem").eager);
  EXPECT_NE(table.find_eager(op("getitem"), DeviceType::kCpu), nullptr);
}

// The view function gathers no data: an advanced index of a tensor's data is the kernel's.
TEST(CpuRegistration, GetitemGathersThroughTheCpuKernel) {
  const Tensor x = ft({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  const Value index =
      Value::from_tensor(Tensor::scalar(Scalar(int64_t{2}), DType::kInt64).unsqueeze(0));
  const Args args = {Value::from_tensor(x), index};
  EXPECT_THROW(op("getitem").eager(args), Error);
  const Value r = eager_call(op("getitem"), args);
  ASSERT_TRUE(r.is_tensor());
  EXPECT_EQ(r.tensor.shape(), (Shape{1, 4}));
  for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(r.tensor.at(j), 8 + j);
  // a basic index is a view either way
  const Args basic = {Value::from_tensor(x), Value::integer(1)};
  EXPECT_TRUE(op("getitem").eager(basic).tensor.same_view(x.select(0, 1)));
}

}  // namespace
}  // namespace inplace
