// The refresh's fast form of a prefix view (engine/refresh_slice.h) against the view getitem
// itself gives on metas, for every stop a call may bring (negative ones count from the end,
// past-the-end ones clamp), and its detection: only a getitem of full slices and one slice
// whose stop is the step's runtime int takes it.
#include <gtest/gtest.h>

#include "engine/op_meta.h"
#include "engine/refresh_slice.h"
#include "test_util.h"

namespace inplace {
namespace {

Value full() {
  return Value::slice(Value::none(), Value::none(), Value::none());
}

Value up_to(int64_t stop) {
  return Value::slice(Value::none(), Value::integer(stop), Value::none());
}

// A getitem view step with its runtime int at `int_path` of its arguments.
Step view_step(std::vector<int> int_path) {
  Step s;
  s.kind = StepKind::kView;
  s.op = Registry::get().find("getitem");
  s.outs.resize(1);
  s.tensors.push_back(TensorSlot{{0}, {}});
  s.ints.push_back(IntSlot{std::move(int_path), 0});
  return s;
}

TEST(RefreshSlice, TheFastFormIsTheViewGetitemGives) {
  for (const Shape& shape : {Shape{1, 4, 64, 16}, Shape{2, 3, 5}, Shape{7}}) {
    const Tensor x = Tensor::meta(shape, DType::kFloat32);
    const int dims = static_cast<int>(shape.size());
    for (int d = 0; d < dims; ++d) {
      const int64_t n = shape[d];
      for (int64_t stop = -2 * n - 1; stop <= 2 * n + 1; ++stop) {
        std::vector<Value> items(d + 1, full());
        items[d] = up_to(stop);
        const Value index = Value::tuple(items);
        const Value want =
            view_metas(*Registry::get().find("getitem"), {Value::from_tensor(x), index});
        ASSERT_TRUE(want.is_tensor());
        const Tensor got = slice_to_stop(x, d, stop);
        EXPECT_EQ(got.shape(), want.tensor.shape()) << "dim " << d << " stop " << stop;
        EXPECT_EQ(got.strides(), want.tensor.strides()) << "dim " << d << " stop " << stop;
        EXPECT_EQ(got.offset(), want.tensor.offset()) << "dim " << d << " stop " << stop;
      }
    }
  }
}

TEST(RefreshSlice, OnlyFullSlicesAndOneRuntimeStopTakeTheFastForm) {
  const Tensor x = Tensor::meta({1, 4, 64, 16}, DType::kFloat32);
  auto dim_of = [&](const Value& index, std::vector<int> at) {
    return runtime_stop_dim(view_step(at), {Value::from_tensor(x), index});
  };
  EXPECT_EQ(dim_of(Value::tuple({full(), full(), up_to(5)}), {1, 2, 1}), 2);
  EXPECT_EQ(dim_of(Value::tuple({up_to(5)}), {1, 0, 1}), 0);
  // A start, a step, an int or None item, the int elsewhere, too many items: the general path.
  EXPECT_FALSE(
      dim_of(Value::tuple({full(), full(),
                           Value::slice(Value::integer(1), Value::integer(5), Value::none())}),
             {1, 2, 1}));
  EXPECT_FALSE(
      dim_of(Value::tuple({full(), full(),
                           Value::slice(Value::none(), Value::integer(5), Value::integer(2))}),
             {1, 2, 1}));
  EXPECT_FALSE(dim_of(Value::tuple({Value::integer(0), full(), up_to(5)}), {1, 2, 1}));
  EXPECT_FALSE(dim_of(Value::tuple({Value::none(), full(), up_to(5)}), {1, 2, 1}));
  EXPECT_FALSE(dim_of(Value::tuple({full(), full(), up_to(5)}), {1, 2, 0}));
  EXPECT_FALSE(dim_of(Value::tuple({full(), full(), full(), full(), up_to(5)}), {1, 4, 1}));
  Step other = view_step({1, 0, 1});
  other.op = Registry::get().find("narrow");
  ASSERT_NE(other.op, nullptr);
  EXPECT_FALSE(runtime_stop_dim(other, {Value::from_tensor(x), Value::tuple({up_to(5)})}));
}

}  // namespace
}  // namespace inplace
