#include <gtest/gtest.h>

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
