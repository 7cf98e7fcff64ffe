// fused_embedding (the fuse_weight_casts pass's form of `F.embedding(ids, w).to(float32)`,
// the table bfloat16 or float32), run op by op on the cpu: bit for bit the gather then the
// widening, and errors that name the op.
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"

namespace inplace {
using namespace inplace::testing;
namespace {

TEST(FusedEmbedding, EqualsTheGatherThenTheWideningBitForBit) {
  std::mt19937 rng(5);
  for (DType table_dtype : {DType::kBFloat16, DType::kFloat32})
    for (DType index_dtype : {DType::kInt64, DType::kInt32})
      for (const Shape& shape : {Shape{3}, Shape{2, 4}, Shape{1, 1}}) {
        SCOPED_TRACE(dtype_name(table_dtype) + std::string(" ") + dtype_name(index_dtype) + " " +
                     shape_str(shape));
        const Tensor w = uniform_tensor({11, 6}, table_dtype, rng);
        std::vector<int64_t> ids;
        for (int64_t i = 0; i < numel_of(shape); ++i) ids.push_back((i * 7 + 3) % 11);
        const Tensor idx = Tensor::from_vector<int64_t>(ids, shape).to(index_dtype);
        const Tensor want =
            call_t("torch.nn.functional.embedding", {T(idx), T(w)}).to(DType::kFloat32);
        const Tensor got = call_t("inplace.fused_embedding", {T(idx), T(w)});
        EXPECT_EQ(got.dtype(), DType::kFloat32);
        EXPECT_TRUE(tensor_equal(got, want, 0.0));
      }
}

TEST(FusedEmbedding, ErrorsNameTheOp) {
  const Tensor idx = Tensor::from_vector<int64_t>({0, 11}, {2});
  EXPECT_NE(
      error_of([&] {
        call_t("inplace.fused_embedding", {T(idx), T(Tensor::zeros({11, 4}, DType::kFloat64))});
      }).find("[fused_embedding] expected a table of a float dtype no wider than float32"),
      std::string::npos);
  // An id past the table: refused, naming the op.
  EXPECT_NE(
      error_of([&] {
        call_t("inplace.fused_embedding", {T(idx), T(Tensor::zeros({11, 4}, DType::kBFloat16))});
      }).find("fused_embedding"),
      std::string::npos);
}

}  // namespace
}  // namespace inplace
