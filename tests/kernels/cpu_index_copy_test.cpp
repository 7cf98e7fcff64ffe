// index_copy / index_copy_ on the cpu: the whole-slice path (contiguous operands, a 1-D int64
// index in range: memcpy of each slice, no index plan) against a slice-by-slice reference and
// against the general path (the same values through a strided source), at every dim of ranks 1
// to 4, float32, bfloat16 and int64, indices repeated (the last slice wins) or not; an index out
// of range, or negative, is refused with the general path's words and writes nothing, as
// PyTorch refuses it (index_add and index_select alike; index_fill takes a negative index).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "backend/kernel_table.h"
#include "core/error.h"
#include "test_util.h"

namespace inplace {
namespace {

const EagerKernel& eager_index_copy_() {
  const OpDef* d = Registry::get().find("index_copy_");
  const EagerKernel* k = d ? KernelTable::get().find_eager(*d, DeviceType::kCpu) : nullptr;
  EXPECT_NE(k, nullptr);
  return *k;
}

Tensor filled(const Shape& shape, DType dtype, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::kFloat64);
  std::uniform_int_distribution<int> v(-50, 50);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = v(rng) / 4.0;
  return t.to(dtype);
}

Tensor index_copied(const Tensor& target, int64_t dim, const Tensor& index, const Tensor& source) {
  Tensor out = target.clone();
  eager_index_copy_()({Value::from_tensor(out), Value::integer(dim), Value::from_tensor(index),
                       Value::from_tensor(source)});
  return out;
}

TEST(CpuIndexCopy, WholeSlicesEqualTheReferenceAndTheGeneralPath) {
  std::mt19937 rng(7);
  int cases = 0;
  for (int rank = 1; rank <= 4; ++rank)
    for (int dim = 0; dim < rank; ++dim)
      for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kInt64})
        for (bool repeats : {false, true}) {
          Shape shape;
          for (int d = 0; d < rank; ++d) shape.push_back(2 + (d * 3 + dim) % 4);
          const int64_t rows = shape[dim], n = repeats ? rows + 2 : std::max<int64_t>(1, rows - 1);
          std::vector<int64_t> at(n);
          std::uniform_int_distribution<int64_t> pick(0, rows - 1);
          for (int64_t& i : at) i = pick(rng);
          if (!repeats) {  // distinct positions
            for (int64_t j = 0; j < n; ++j) at[j] = (j * 2 + 1) % rows;
            std::sort(at.begin(), at.end());
            at.erase(std::unique(at.begin(), at.end()), at.end());
          }
          const Tensor index = Tensor::from_vector(at, {static_cast<int64_t>(at.size())});
          Shape sshape = shape;
          sshape[dim] = index.numel();
          const Tensor target = filled(shape, dtype, rng), source = filled(sshape, dtype, rng);
          Tensor want = target.clone();
          for (int64_t j = 0; j < index.numel(); ++j)
            want.select(dim, at[j]).copy_from(source.select(dim, j));
          SCOPED_TRACE("rank " + std::to_string(rank) + " dim " + std::to_string(dim) + " " +
                       dtype_name(dtype));
          EXPECT_TRUE(testing::tensor_equal(index_copied(target, dim, index, source), want));
          // The general path: the same source values through a strided view.
          Shape wide = sshape;
          wide.back() *= 2;
          Tensor strided = Tensor::zeros(wide, dtype).slice(rank - 1, 0, std::nullopt, 2);
          strided.copy_from(source);
          ASSERT_FALSE(strided.is_contiguous() && rank > 0 && sshape.back() > 1);
          EXPECT_TRUE(testing::tensor_equal(index_copied(target, dim, index, strided), want));
          EXPECT_TRUE(testing::tensor_equal(index_copied(target, dim - rank, index, source), want));
          ++cases;
        }
  EXPECT_EQ(cases, 60);
}

TEST(CpuIndexCopy, AnIndexOutOfRangeIsRefusedAndWritesNothing) {
  std::mt19937 rng(3);
  const Tensor target = filled({2, 5, 3}, DType::kFloat32, rng);
  const Tensor source = filled({2, 2, 3}, DType::kFloat32, rng);
  for (int64_t bad : {5, -1}) {
    Tensor out = target.clone();
    const Tensor index = Tensor::from_vector(std::vector<int64_t>{1, bad}, {2});
    try {
      eager_index_copy_()({Value::from_tensor(out), Value::integer(1), Value::from_tensor(index),
                           Value::from_tensor(source)});
      ADD_FAILURE() << "index " << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("index_copy_"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(testing::tensor_equal(out, target)) << "index " << bad;
  }
}

TEST(CpuIndexCopy, NegativeIndicesAsPyTorch) {
  const Registry& r = Registry::get();
  auto eager = [&](const char* name, const Args& args) {
    const EagerKernel* k = KernelTable::get().find_eager(*r.find(name), DeviceType::kCpu);
    return (*k)(args);
  };
  std::mt19937 rng(5);
  const Tensor target = filled({2, 5, 3}, DType::kFloat32, rng);
  const Tensor source = filled({2, 1, 3}, DType::kFloat32, rng);
  const Tensor minus_one = Tensor::from_vector(std::vector<int64_t>{-1}, {1});
  Tensor out = target.clone();
  try {
    eager("index_add_", {Value::from_tensor(out), Value::integer(1), Value::from_tensor(minus_one),
                         Value::from_tensor(source), Value::integer(1)});
    ADD_FAILURE() << "index_add_ took index -1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index -1 is out of bounds for dimension 1 with size 5"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(testing::tensor_equal(out, target));
  const OpDef& select = *r.find("index_select");
  EXPECT_THROW(eager_call(select, {Value::from_tensor(target), Value::integer(1),
                                   Value::from_tensor(minus_one)}),
               Error);
  // index_fill_ takes -1 as the last row.
  eager("index_fill_.int_Scalar", {Value::from_tensor(out), Value::integer(1),
                                   Value::from_tensor(minus_one), Value::floating(2.5)});
  EXPECT_EQ(out.select(1, 4).to_double_vector(), std::vector<double>(6, 2.5));
}

}  // namespace
}  // namespace inplace
