// Tensor's view methods: shapes, strides and offsets against hand-computed values, storage
// sharing in both directions, meta tensors, and the errors torch raises.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// The element at multi-index `idx` of a contiguous float64 reference in `shape`.
double ref_at(const std::vector<double>& data, const Shape& shape, const Shape& idx) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return data[flat];
}

}  // namespace

TEST(TensorView, ViewStridesAndInference) {
  Tensor x = iota({2, 3, 4});
  EXPECT_TRUE(is_view(x.view({4, -1}), x, {4, 6}, {6, 1}, 0));
  EXPECT_TRUE(is_view(x.view({24}), x, {24}, {1}, 0));
  EXPECT_TRUE(is_view(x.view({2, 1, 12}), x, {2, 1, 12}, {12, 12, 1}, 0));
  // A step slice along dim 0 keeps the rows contiguous: splitting a row still views.
  Tensor rows = iota({4, 6}).slice(0, 0, std::nullopt, 2);
  EXPECT_TRUE(is_view(rows.view({2, 2, 3}), rows, {2, 2, 3}, {12, 3, 1}, 0));
  // 0-dim to [1, 1] and back.
  Tensor s = Tensor::scalar(Scalar(5.0), DType::kFloat32);
  EXPECT_TRUE(is_view(s.view({1, 1}), s, {1, 1}, {1, 1}, 0));
  EXPECT_TRUE(is_view(s.view({1, 1}).view({}), s, {}, {}, 0));
  // Empty tensors view into any shape of 0 elements.
  Tensor e = Tensor::empty({0, 3}, DType::kFloat32);
  EXPECT_EQ(e.view({3, 0, 2}).shape(), (Shape{3, 0, 2}));
  EXPECT_EQ(e.view({-1, 6}).shape(), (Shape{0, 6}));
}

TEST(TensorView, ViewOfIncompatibleStridesErrorsAndReshapeCopies) {
  Tensor x = iota({2, 3});
  Tensor xt = x.t();  // [3,2] strides [1,3]
  EXPECT_TRUE(mentions(error_of([&] { xt.view({6}); }), {"[view]", "[6]", "[3,2]", "[1,3]"}));
  Tensor r = xt.reshape({6});
  EXPECT_FALSE(r.same_storage(x));
  EXPECT_TRUE(tensor_near(r, {6}, {0, 3, 1, 4, 2, 5}));
  // reshape views when it can.
  EXPECT_TRUE(is_view(x.reshape({3, 2}), x, {3, 2}, {2, 1}, 0));
  EXPECT_TRUE(mentions(error_of([&] { x.view({4, -1}); }), {"[view]", "[4,-1]", "size 6"}));
  EXPECT_TRUE(mentions(error_of([&] { x.view({-1, -1}); }), {"[view]", "one dimension"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         Tensor::empty({0, 3}, DType::kFloat32).view({0, -1});
                       }),
                       {"[view]"}));
}

TEST(TensorView, ReshapeOfMetaNeverTouchesData) {
  Tensor m = Tensor::meta({2, 3}, DType::kFloat16).transpose(0, 1);
  Tensor r = m.reshape({6});
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(r.shape(), (Shape{6}));
  EXPECT_EQ(r.strides(), (Shape{1}));
  EXPECT_EQ(r.dtype(), DType::kFloat16);
  EXPECT_TRUE(m.flatten().is_meta());
}

TEST(TensorView, PermuteTransposeT) {
  Tensor x = iota({2, 3, 4});
  EXPECT_TRUE(is_view(x.permute({2, 0, 1}), x, {4, 2, 3}, {1, 12, 4}, 0));
  EXPECT_TRUE(is_view(x.permute({-1, -3, -2}), x, {4, 2, 3}, {1, 12, 4}, 0));
  EXPECT_TRUE(is_view(x.transpose(-1, 0), x, {4, 3, 2}, {1, 4, 12}, 0));
  EXPECT_TRUE(mentions(error_of([&] { x.permute({0, 0, 1}); }), {"[permute]", "repeated"}));
  EXPECT_TRUE(mentions(error_of([&] { x.permute({0, 1}); }), {"[permute]", "2 dims", "3 dims"}));
  EXPECT_TRUE(mentions(error_of([&] { x.transpose(0, 3); }), {"[transpose]", "dim 3"}));
  EXPECT_TRUE(mentions(error_of([&] { x.t(); }), {"[t]"}));
  Tensor v = iota({5});
  EXPECT_TRUE(is_view(v.t(), v, {5}, {1}, 0));
  // Values of a permuted view match the reference index mapping.
  std::vector<double> ref = x.to_double_vector();
  Tensor p = x.permute({2, 0, 1});
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 3; ++b)
        EXPECT_EQ(p.at((c * 2 + a) * 3 + b), ref_at(ref, {2, 3, 4}, {a, b, c}));
}

TEST(TensorView, SliceStepsAndNegativeBounds) {
  Tensor x = iota({4, 10});
  EXPECT_TRUE(is_view(x.slice(1, 2, 8, 3), x, {4, 2}, {10, 3}, 2));
  EXPECT_TRUE(tensor_near(x.slice(1, 2, 8, 3).select(0, 0), {2}, {2, 5}));
  EXPECT_TRUE(is_view(x.slice(-1, -3, std::nullopt), x, {4, 3}, {10, 1}, 7));
  EXPECT_TRUE(is_view(x.slice(0, -3, -1), x, {2, 10}, {10, 1}, 10));
  EXPECT_TRUE(is_view(x.slice(1, 1, std::nullopt, 4), x, {4, 3}, {10, 4}, 1));  // 1, 5, 9
  EXPECT_TRUE(is_view(x.slice(1, -100, 100), x, {4, 10}, {10, 1}, 0));          // clamped
  EXPECT_EQ(x.slice(1, 7, 3).shape(), (Shape{4, 0}));                           // start > end
  EXPECT_EQ(x.slice(1, 20, 30).shape(), (Shape{4, 0}));
  // aten's "to the end" is INT64_MAX, and a huge step does not overflow.
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_TRUE(is_view(x.slice(1, 3, big), x, {4, 7}, {10, 1}, 3));
  EXPECT_EQ(x.slice(1, 3, big, big).shape(), (Shape{4, 1}));
  // A slice of a slice composes offsets and strides.
  Tensor s = x.slice(1, 1, std::nullopt, 2).slice(0, 1, 3);  // rows 1..2, cols 1,3,5,7,9
  EXPECT_TRUE(is_view(s, x, {2, 5}, {10, 2}, 11));
  EXPECT_TRUE(tensor_near(s, {2, 5}, {11, 13, 15, 17, 19, 21, 23, 25, 27, 29}));
  EXPECT_TRUE(mentions(error_of([&] { x.slice(1, 0, 5, 0); }), {"[slice]", "step"}));
  EXPECT_TRUE(mentions(error_of([&] { x.slice(2, 0, 5); }), {"[slice]", "dim 2"}));
  EXPECT_TRUE(mentions(error_of([&] { Tensor::scalar(Scalar(1), DType::kInt64).slice(0, 0, 1); }),
                       {"[slice]", "0-dim"}));
}

TEST(TensorView, SelectNarrow) {
  Tensor x = iota({3, 4});
  EXPECT_TRUE(is_view(x.select(1, -1), x, {3}, {4}, 3));
  EXPECT_TRUE(is_view(x.select(-2, 2), x, {4}, {1}, 8));
  EXPECT_TRUE(mentions(error_of([&] { x.select(0, 3); }), {"[select]", "index 3", "size 3"}));
  EXPECT_TRUE(mentions(error_of([&] { x.select(0, -4); }), {"[select]", "index -4"}));
  EXPECT_TRUE(is_view(x.narrow(1, 1, 2), x, {3, 2}, {4, 1}, 1));
  EXPECT_TRUE(is_view(x.narrow(-1, -2, 2), x, {3, 2}, {4, 1}, 2));
  EXPECT_TRUE(mentions(error_of([&] { x.narrow(1, 3, 2); }), {"[narrow]", "size 4"}));
  Tensor s = Tensor::scalar(Scalar(1.5), DType::kFloat32);
  EXPECT_TRUE(mentions(error_of([&] { s.narrow(0, 0, 1); }), {"[narrow]", "0-dim"}));
}

TEST(TensorView, ExpandUnsqueezeSqueeze) {
  Tensor x = iota({3, 1});
  EXPECT_TRUE(is_view(x.expand({2, 3, 4}), x, {2, 3, 4}, {0, 1, 0}, 0));
  EXPECT_TRUE(is_view(x.expand({-1, 5}), x, {3, 5}, {1, 0}, 0));
  EXPECT_TRUE(tensor_near(x.expand({3, 2}), {3, 2}, {0, 0, 1, 1, 2, 2}));
  EXPECT_TRUE(mentions(error_of([&] { x.expand({4, 1}); }), {"[expand]", "[3,1]", "[4,1]"}));
  EXPECT_TRUE(mentions(error_of([&] { x.expand({3, -2}); }), {"[expand]", "-2"}));
  EXPECT_TRUE(mentions(error_of([&] { x.expand({-1, 3, 1}); }), {"[expand]"}));
  EXPECT_TRUE(mentions(error_of([&] { x.expand({3}); }), {"[expand]"}));

  Tensor y = iota({2, 3});
  EXPECT_TRUE(is_view(y.unsqueeze(1), y, {2, 1, 3}, {3, 3, 1}, 0));
  EXPECT_TRUE(is_view(y.unsqueeze(-1), y, {2, 3, 1}, {3, 1, 1}, 0));
  EXPECT_TRUE(is_view(y.unsqueeze(0), y, {1, 2, 3}, {6, 3, 1}, 0));
  EXPECT_TRUE(is_view(y.t().unsqueeze(1), y, {3, 1, 2}, {1, 6, 3}, 0));  // size * stride of dim 1
  EXPECT_TRUE(mentions(error_of([&] { y.unsqueeze(3); }), {"[unsqueeze]", "dim 3"}));

  Tensor z = iota({1, 3, 1, 2});
  EXPECT_TRUE(is_view(z.squeeze(), z, {3, 2}, {2, 1}, 0));
  EXPECT_TRUE(is_view(z.squeeze({-2}), z, {1, 3, 2}, {6, 2, 1}, 0));
  EXPECT_TRUE(is_view(z.squeeze({1}), z, {1, 3, 1, 2}, {6, 2, 2, 1}, 0));  // size 3: kept
  EXPECT_TRUE(is_view(z.squeeze({0, 2}), z, {3, 2}, {2, 1}, 0));
}

TEST(TensorView, FlattenUnflatten) {
  Tensor x = iota({2, 3, 4});
  EXPECT_TRUE(is_view(x.flatten(), x, {24}, {1}, 0));
  EXPECT_TRUE(is_view(x.flatten(1), x, {2, 12}, {12, 1}, 0));
  EXPECT_TRUE(is_view(x.flatten(0, -2), x, {6, 4}, {4, 1}, 0));
  Tensor p = x.permute({1, 0, 2});  // [3,2,4] strides [4,12,1]: dims 0,1 do not merge
  Tensor f = p.flatten(0, 1);
  EXPECT_FALSE(f.same_storage(x));
  EXPECT_TRUE(tensor_near(f.select(1, 0), {6}, {0, 12, 4, 16, 8, 20}));
  EXPECT_FALSE(p.flatten(1).same_storage(x));  // [2,4] with strides [12,1] do not merge either
  Tensor s = Tensor::scalar(Scalar(3), DType::kInt32);
  EXPECT_EQ(s.flatten().shape(), (Shape{1}));
  EXPECT_TRUE(mentions(error_of([&] { x.flatten(2, 1); }), {"[flatten]"}));

  EXPECT_TRUE(is_view(x.unflatten(-1, {2, 2}), x, {2, 3, 2, 2}, {12, 4, 2, 1}, 0));
  EXPECT_TRUE(is_view(x.unflatten(1, {-1, 1}), x, {2, 3, 1, 4}, {12, 4, 4, 1}, 0));
  // Splitting one dim always views, even on a transposed tensor.
  Tensor t = iota({4, 6}).t();  // [6,4] strides [1,6]
  EXPECT_TRUE(is_view(t.unflatten(0, {2, 3}), t, {2, 3, 4}, {3, 1, 6}, 0));
  EXPECT_TRUE(mentions(error_of([&] { x.unflatten(1, {2, 2}); }), {"[unflatten]", "size 3"}));
  EXPECT_TRUE(mentions(error_of([&] { s.unflatten(0, {1}); }), {"[unflatten]", "0-dim"}));
}

TEST(TensorView, Diagonal) {
  Tensor x = iota({3, 4});
  EXPECT_TRUE(is_view(x.diagonal(), x, {3}, {5}, 0));
  EXPECT_TRUE(tensor_near(x.diagonal(), {3}, {0, 5, 10}));
  EXPECT_TRUE(is_view(x.diagonal(1), x, {3}, {5}, 1));
  EXPECT_TRUE(tensor_near(x.diagonal(2), {2}, {2, 7}));
  EXPECT_TRUE(is_view(x.diagonal(-1), x, {2}, {5}, 4));
  EXPECT_TRUE(tensor_near(x.diagonal(-1), {2}, {4, 9}));
  EXPECT_EQ(x.diagonal(4).shape(), (Shape{0}));
  EXPECT_EQ(x.diagonal(-3).shape(), (Shape{0}));
  // Batched, with the diagonal taken over dims (-1, 0): [4,3] dims 0 and 2 of [3,2,4].
  Tensor b = iota({3, 2, 4});
  EXPECT_TRUE(is_view(b.diagonal(0, -1, 0), b, {2, 3}, {4, 9}, 0));
  EXPECT_TRUE(is_view(x.t().diagonal(1), x, {2}, {5}, 4));  // [4,3]: min(4, 3 - 1) long
  EXPECT_TRUE(mentions(error_of([&] { x.diagonal(0, 1, -1); }), {"[diagonal]"}));
  EXPECT_TRUE(mentions(error_of([&] { iota({3}).diagonal(); }), {"[diagonal]"}));
}

TEST(TensorView, AsStrided) {
  Tensor x = iota({12});
  Tensor v = x.as_strided({3, 2}, {4, 1}, 1);
  EXPECT_TRUE(is_view(v, x, {3, 2}, {4, 1}, 1));
  EXPECT_TRUE(tensor_near(v, {3, 2}, {1, 2, 5, 6, 9, 10}));
  // Overlapping windows are fine to read.
  EXPECT_TRUE(tensor_near(x.as_strided({3, 3}, {1, 1}, 0), {3, 3}, {0, 1, 2, 1, 2, 3, 2, 3, 4}));
  EXPECT_TRUE(
      is_view(x.slice(0, 2, std::nullopt).as_strided({2}, {3}, std::nullopt), x, {2}, {3}, 2));
  EXPECT_TRUE(mentions(error_of([&] {
                         x.as_strided({3, 4}, {4, 1}, 1);
                       }),
                       {"[as_strided]", "[3,4]", "12 elements"}));
  const int64_t huge = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_TRUE(mentions(error_of([&] { x.as_strided({4}, {huge}, 0); }), {"[as_strided]"}));
  EXPECT_TRUE(
      mentions(error_of([&] { x.as_strided({2}, {-1}, 5); }), {"[as_strided]", "negative"}));
  Tensor m = Tensor::meta({12}, DType::kFloat32);
  EXPECT_TRUE(
      mentions(error_of([&] { m.as_strided({-2}, {1}, 0); }), {"[as_strided]", "negative"}));
  EXPECT_TRUE(m.as_strided({100}, {1}, 0).is_meta());  // a meta has no storage to bound
}

TEST(TensorView, SplitChunkUnbind) {
  Tensor x = iota({5, 2});
  auto parts = x.split(2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_TRUE(is_view(parts[0], x, {2, 2}, {2, 1}, 0));
  EXPECT_TRUE(is_view(parts[2], x, {1, 2}, {2, 1}, 8));
  auto huge = x.split(std::numeric_limits<int64_t>::max());
  ASSERT_EQ(huge.size(), 1u);
  EXPECT_EQ(huge[0].shape(), (Shape{5, 2}));
  auto cols = x.split(1, -1);
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_TRUE(is_view(cols[1], x, {5, 1}, {2, 1}, 1));
  auto sized = x.split_with_sizes({1, 0, 4});
  ASSERT_EQ(sized.size(), 3u);
  EXPECT_TRUE(is_view(sized[1], x, {0, 2}, {2, 1}, 2));
  EXPECT_TRUE(is_view(sized[2], x, {4, 2}, {2, 1}, 2));
  EXPECT_TRUE(mentions(error_of([&] {
                         x.split_with_sizes({2, 2});
                       }),
                       {"[split_with_sizes]", "[2,2]", "size 5"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         x.split_with_sizes({6, -1});
                       }),
                       {"[split_with_sizes]", "negative"}));
  EXPECT_TRUE(mentions(error_of([&] { x.split(0); }), {"[split]"}));

  auto ch = x.chunk(3);  // sizes 2, 2, 1
  ASSERT_EQ(ch.size(), 3u);
  EXPECT_TRUE(is_view(ch[2], x, {1, 2}, {2, 1}, 8));
  EXPECT_EQ(iota({6}).chunk(4).size(), 3u);  // torch: ceil(6/4)=2 per chunk -> 3 chunks
  auto empty_chunks = Tensor::empty({0, 3}, DType::kFloat32).chunk(3);
  ASSERT_EQ(empty_chunks.size(), 3u);  // torch keeps the count for an empty dim
  EXPECT_EQ(empty_chunks[1].shape(), (Shape{0, 3}));
  EXPECT_EQ(x.chunk(std::numeric_limits<int64_t>::max()).size(), 5u);

  auto rows = x.unbind(1);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(is_view(rows[1], x, {5}, {2}, 1));
  Tensor s = Tensor::scalar(Scalar(1), DType::kInt64);
  EXPECT_TRUE(mentions(error_of([&] { s.split(1); }), {"[split]", "0-dim"}));
  EXPECT_TRUE(mentions(error_of([&] { s.split_with_sizes({1}); }), {"[split_with_sizes]"}));
  EXPECT_TRUE(mentions(error_of([&] { s.chunk(1); }), {"[chunk]", "0-dim"}));
  EXPECT_TRUE(mentions(error_of([&] { s.unbind(0); }), {"[unbind]", "0-dim"}));
}

TEST(TensorView, SizeOfZeroDimErrors) {
  Tensor s = Tensor::scalar(Scalar(1), DType::kInt64);
  EXPECT_TRUE(mentions(error_of([&] { s.size(0); }), {"[size]", "0-dim"}));
  EXPECT_TRUE(mentions(error_of([&] { s.stride(-1); }), {"[stride]", "0-dim"}));
  Tensor x = iota({2, 3});
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_EQ(x.stride(0), 3);
}

TEST(TensorView, WritesAreSharedBothWays) {
  Tensor x = iota({3, 4});
  // Through a transposed step slice into the base.
  Tensor v = x.t().slice(0, 1, std::nullopt, 2);  // columns 1 and 3: [2,3] strides [2,4]
  EXPECT_TRUE(is_view(v, x, {2, 3}, {2, 4}, 1));
  v.fill(Scalar(-1.0));
  EXPECT_TRUE(tensor_near(x, {3, 4}, {0, -1, 2, -1, 4, -1, 6, -1, 8, -1, 10, -1}));
  // From the base into a diagonal and an expanded view.
  Tensor d = x.diagonal();
  Tensor e = x.select(0, 2).unsqueeze(0).expand({2, 4});
  x.copy_from(iota({3, 4}).slice(0, 0, 1));  // every row becomes 0..3
  EXPECT_TRUE(tensor_near(d, {3}, {0, 1, 2}));
  EXPECT_TRUE(tensor_near(e, {2, 4}, {0, 1, 2, 3, 0, 1, 2, 3}));
  // Through split pieces, unbind and a view of a view.
  Tensor y = iota({6});
  y.split(4)[1].fill(Scalar(9.0));
  y.view({2, 3}).unbind(1)[0].fill(Scalar(7.0));
  EXPECT_TRUE(tensor_near(y, {6}, {7, 1, 2, 7, 9, 9}));
  y.as_strided({2}, {2}, 1).fill(Scalar(5.0));
  EXPECT_TRUE(tensor_near(y, {6}, {7, 5, 2, 5, 9, 9}));
}

TEST(TensorView, ViewsOfMetasStayMeta) {
  Tensor m = Tensor::meta({2, 3, 4}, DType::kBFloat16);
  std::vector<Tensor> views = {m.view({6, 4}),
                               m.permute({2, 1, 0}),
                               m.transpose(0, 2),
                               m.slice(2, 1, 4, 2),
                               m.select(1, 2),
                               m.narrow(0, 1, 1),
                               m.expand({5, 2, 3, 4}),
                               m.unsqueeze(1),
                               m.squeeze(),
                               m.flatten(1),
                               m.unflatten(2, {2, 2}),
                               m.diagonal(0, 1, 2),
                               m.as_strided({2}, {7}, 3),
                               m.split(1)[1],
                               m.chunk(2, 2)[0],
                               m.unbind(2)[3],
                               m.permute({1, 0, 2}).reshape({-1})};
  for (const Tensor& v : views) {
    EXPECT_TRUE(v.is_meta());
    EXPECT_EQ(v.dtype(), DType::kBFloat16);
  }
  EXPECT_EQ(views[3].shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(views[3].strides(), (Shape{12, 4, 2}));
  EXPECT_EQ(views[3].offset(), 1);
  EXPECT_EQ(views[11].shape(), (Shape{2, 3}));
  EXPECT_EQ(views[11].strides(), (Shape{12, 5}));
  EXPECT_EQ(views.back().shape(), (Shape{24}));
}
