#include <gtest/gtest.h>

#include <limits>

#include "core/tensor.h"

using namespace inplace;

TEST(Tensor, ViewWriteSeenThroughBase) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor col = x.slice(1, 1, 3);
  col.fill(Scalar(9.0));
  EXPECT_EQ(x.to_double_vector(), (std::vector<double>{1, 9, 9, 4, 9, 9}));
  Tensor tt = x.t();
  EXPECT_EQ(tt.shape(), (Shape{3, 2}));
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.contiguous().to_double_vector(), (std::vector<double>{1, 4, 9, 9, 9, 9}));
}

// Shapes whose element count wraps int64 are refused (never a small, wrong count); a zero
// size anywhere still makes an empty tensor.
TEST(Tensor, ElementCountOverflowIsAnError) {
  const int64_t big = int64_t{1} << 32;
  EXPECT_THROW(numel_of({big, big}), Error);
  EXPECT_THROW(numel_of({3037000500, 3037000500}), Error);
  EXPECT_THROW(Tensor::empty({big, big}, DType::kFloat32), Error);
  // numel fits int64 but the bytes do not fit size_t.
  EXPECT_THROW(Tensor::empty({int64_t{1} << 62}, DType::kFloat64), Error);
  EXPECT_EQ(numel_of({big, big, 0}), 0);
  Tensor e = Tensor::empty({0, big, big}, DType::kFloat32);
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.nbytes(), 0u);
}

// A step so large that stride * step overflows: at most one element, no undefined behaviour.
TEST(Tensor, SliceWithAHugeStepKeepsOneElement) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor s = t.slice(0, 1, std::nullopt, int64_t{4971973988617027585});
  EXPECT_EQ(s.shape(), (Shape{1, 2}));
  EXPECT_EQ(s.at(0), 3);
  EXPECT_EQ(s.at(1), 4);
  Tensor r = t.slice(1, std::nullopt, std::nullopt, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(r.shape(), (Shape{3, 1}));
  EXPECT_EQ(r.at(2), 5);
}

TEST(Tensor, NarrowWithAHugeLengthIsAnError) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  EXPECT_THROW(t.narrow(0, 1, std::numeric_limits<int64_t>::max()), Error);
  EXPECT_THROW(t.narrow(0, 5, 0), Error);
  EXPECT_EQ(t.narrow(0, 1, 3).at(2), 4);
}
