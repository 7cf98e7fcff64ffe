// Tensor factories through the registry: values, dtype inference, ignored keywords, the
// engine's infer/out path, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Value Dt(DType t) {
  return Value::dtype_value(t);
}

std::vector<double> repeated(double v, size_t n) {
  return std::vector<double>(n, v);
}

// Keywords torch-level graphs pass that mean nothing on CPU.
std::vector<std::pair<std::string, Value>> cpu_noise() {
  return {{"device", Value::device("cpu")},
          {"layout", Value::string("torch.strided")},
          {"pin_memory", B(false)},
          {"requires_grad", B(true)}};
}

}  // namespace

TEST(CreationOps, ZerosOnesEmpty) {
  Tensor z = call_t("zeros", {I(2), I(3)});  // varargs
  EXPECT_EQ(z.dtype(), DType::kFloat32);
  EXPECT_TRUE(z.is_contiguous());
  EXPECT_TRUE(tensor_near(z, {2, 3}, repeated(0, 6)));
  Tensor o = call_t("torch.ones", {Tup({I(3), I(1)})}, {{"dtype", Dt(DType::kInt32)}});
  EXPECT_EQ(o.dtype(), DType::kInt32);
  EXPECT_TRUE(tensor_near(o, {3, 1}, repeated(1, 3)));
  Tensor ob = call_t("aten.ones.default", {L({I(2)})}, {{"dtype", Dt(DType::kBool)}});
  EXPECT_EQ(ob.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(ob, {2}, {1, 1}));
  auto kw = cpu_noise();
  kw.emplace_back("dtype", Dt(DType::kFloat16));
  kw.emplace_back("memory_format", Value::string("torch.contiguous_format"));
  Tensor e = call_t("torch.empty", {I(4)}, kw);
  EXPECT_EQ(e.dtype(), DType::kFloat16);
  EXPECT_TRUE(tensor_near(e, {4}, repeated(0, 4)));  // empty is zero-filled here
  Tensor ea = call_t("aten.empty.memory_format", {L({I(2), I(0)})});
  EXPECT_EQ(ea.shape(), (Shape{2, 0}));
  Tensor s = call_t("zeros", {Tup({})});
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.numel(), 1);
  // dtype given as a string, as some writers spell it.
  EXPECT_EQ(call_t("ones", {I(1)}, {{"dtype", Value::string("float64")}}).dtype(), DType::kFloat64);
  EXPECT_TRUE(mentions(error_of([] {
                         call("zeros", {I(2), I(-1)});
                       }),
                       {"[zeros]", "negative", "[2,-1]"}));
  EXPECT_TRUE(mentions(error_of([] { call("empty", {L({I(-3)})}); }), {"[empty]", "-3"}));
}

TEST(CreationOps, FullInfersDtypeFromTheFillValue) {
  Tensor f = call_t("full", {Tup({I(2), I(2)}), F(1.5)});
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(f, {2, 2}, repeated(1.5, 4)));
  Tensor i = call_t("torch.full", {L({I(3)}), I(7)}, cpu_noise());
  EXPECT_EQ(i.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(i, {3}, {7, 7, 7}));
  Tensor b = call_t("full", {L({I(2)}), B(true)});
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(b, {2}, {1, 1}));
  Tensor d = call_t("aten.full.default", {L({I(2)}), I(3)}, {{"dtype", Dt(DType::kFloat64)}});
  EXPECT_EQ(d.dtype(), DType::kFloat64);
  EXPECT_TRUE(tensor_near(d, {2}, {3, 3}));
  // A fractional fill into an integer dtype truncates, as torch.
  Tensor t = call_t("full", {L({I(2)}), F(-2.7)}, {{"dtype", Dt(DType::kInt8)}});
  EXPECT_TRUE(tensor_near(t, {2}, {-2, -2}));
  Tensor inf = call_t("full", {L({I(1)}), F(-INFINITY)});
  EXPECT_TRUE(std::isinf(inf.at(0)) && inf.at(0) < 0);
  EXPECT_TRUE(mentions(error_of([] { call("full", {L({I(-1)}), F(1.0)}); }), {"[full]"}));
}

TEST(CreationOps, LikeOpsFollowSelf) {
  Tensor x = iota({3, 2}, DType::kInt16).t();  // non-contiguous [2,3]
  Tensor z = call_t("zeros_like", {T(x)});
  EXPECT_EQ(z.dtype(), DType::kInt16);
  EXPECT_FALSE(z.same_storage(x));
  EXPECT_TRUE(tensor_near(z, {2, 3}, repeated(0, 6)));
  Tensor o = call_t("ones_like", {T(x)}, {{"dtype", Dt(DType::kBFloat16)}});
  EXPECT_EQ(o.dtype(), DType::kBFloat16);
  EXPECT_TRUE(tensor_near(o, {2, 3}, repeated(1, 6)));
  Tensor e = call_t("torch.empty_like", {T(x)},
                    {{"memory_format", Value::string("torch.preserve_format")}});
  EXPECT_EQ(e.dtype(), DType::kInt16);
  EXPECT_TRUE(tensor_near(e, {2, 3}, repeated(0, 6)));
  Tensor f = call_t("full_like", {T(x), F(2.5)});
  EXPECT_EQ(f.dtype(), DType::kInt16);  // self's dtype, not the fill's
  EXPECT_TRUE(tensor_near(f, {2, 3}, repeated(2, 6)));
  Tensor ff = call_t("aten.full_like.default", {T(x), F(2.5)}, {{"dtype", Dt(DType::kFloat32)}});
  EXPECT_TRUE(tensor_near(ff, {2, 3}, repeated(2.5, 6)));
  // x itself is untouched.
  EXPECT_TRUE(tensor_near(x, {2, 3}, {0, 2, 4, 1, 3, 5}));
  EXPECT_TRUE(mentions(error_of([] { call("zeros_like", {I(3)}); }), {"[zeros_like]", "Tensor"}));
}

TEST(CreationOps, NewOpsTakeSelfsDtype) {
  Tensor x = lt({1, 2}, {2});
  Tensor z = call_t("new_zeros", {T(x), I(2), I(3)});
  EXPECT_EQ(z.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(z, {2, 3}, repeated(0, 6)));
  Tensor o = call_t("new_ones", {T(x), Tup({I(4)})}, {{"dtype", Dt(DType::kFloat64)}});
  EXPECT_EQ(o.dtype(), DType::kFloat64);
  EXPECT_TRUE(tensor_near(o, {4}, repeated(1, 4)));
  Tensor f = call_t("new_full", {T(x), L({I(1), I(2)}), F(3.9)});
  EXPECT_EQ(f.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(f, {1, 2}, {3, 3}));
  Tensor e = call_t("aten.new_empty.default", {T(x), L({I(2)})}, cpu_noise());
  EXPECT_EQ(e.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(e, {2}, {0, 0}));
  EXPECT_TRUE(mentions(error_of([&] { call("new_zeros", {T(x), I(-2)}); }), {"[new_zeros]"}));
}

TEST(CreationOps, ScalarTensor) {
  Tensor s = call_t("scalar_tensor", {I(3)});
  EXPECT_EQ(s.dtype(), DType::kFloat32);  // torch.scalar_tensor defaults to float
  EXPECT_TRUE(tensor_near(s, {}, {3}));
  Tensor b = call_t("aten.scalar_tensor.default", {B(true)}, {{"dtype", Dt(DType::kBool)}});
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(b, {}, {1}));
  Tensor l = call_t("scalar_tensor", {F(-4.0)}, {{"dtype", Dt(DType::kInt64)}});
  EXPECT_TRUE(tensor_near(l, {}, {-4}));
}

TEST(CreationOps, ArangeForms) {
  Tensor a = call_t("arange", {I(5)});
  EXPECT_EQ(a.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(a, {5}, {0, 1, 2, 3, 4}));
  Tensor b = call_t("torch.arange", {I(2), I(6)});
  EXPECT_EQ(b.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(b, {4}, {2, 3, 4, 5}));
  Tensor c = call_t("arange", {I(1), I(10), I(4)});
  EXPECT_TRUE(tensor_near(c, {3}, {1, 5, 9}));
  Tensor neg = call_t("arange", {I(5), I(-2), I(-2)});
  EXPECT_TRUE(tensor_near(neg, {4}, {5, 3, 1, -1}));
  Tensor negf = call_t("arange", {F(1.0), I(0), F(-0.25)});
  EXPECT_EQ(negf.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(negf, {4}, {1, 0.75, 0.5, 0.25}));
  Tensor f = call_t("arange", {F(2.5)});
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(f, {3}, {0, 1, 2}));
  // The classic float case: ceil((1 - 0) / 0.1) = 10 elements.
  Tensor t = call_t("arange", {I(0), I(1), F(0.1)});
  ASSERT_EQ(t.shape(), (Shape{10}));
  for (int64_t i = 0; i < 10; ++i)
    EXPECT_EQ(t.at(i), static_cast<double>(static_cast<float>(i * 0.1))) << i;
  Tensor d = call_t("aten.arange.start_step", {I(0), I(3), I(1)}, {{"dtype", Dt(DType::kFloat64)}});
  EXPECT_EQ(d.dtype(), DType::kFloat64);
  EXPECT_TRUE(tensor_near(d, {3}, {0, 1, 2}));
  Tensor h = call_t("arange", {I(4)}, {{"dtype", Dt(DType::kFloat16)}});
  EXPECT_TRUE(tensor_near(h, {4}, {0, 1, 2, 3}));
  Tensor step_kw = call_t("arange", {I(0), I(7)}, {{"step", I(3)}});
  EXPECT_TRUE(tensor_near(step_kw, {3}, {0, 3, 6}));
  Tensor kw = call_t("aten.arange.default", {I(3)}, cpu_noise());
  EXPECT_TRUE(tensor_near(kw, {3}, {0, 1, 2}));
  EXPECT_EQ(call_t("arange", {I(3), I(3)}).shape(), (Shape{0}));
  // int64 stays exact past 2^53.
  const int64_t big = (int64_t{1} << 60) + 1;
  Tensor l = call_t("arange", {I(big), I(big + 3)});
  EXPECT_EQ(l.data<int64_t>()[2], big + 2);
  // A bound given as a 0-dim tensor (a traced value).
  Tensor from_tensor = call_t("arange", {T(Tensor::scalar(Scalar(int64_t{3}), DType::kInt64))});
  EXPECT_TRUE(tensor_near(from_tensor, {3}, {0, 1, 2}));
}

TEST(CreationOps, ArangeErrors) {
  EXPECT_TRUE(mentions(error_of([] { call("arange", {I(0), I(5), I(0)}); }), {"[arange]", "step"}));
  EXPECT_TRUE(mentions(error_of([] {
                         call("arange", {I(5), I(0), I(1)});
                       }),
                       {"[arange]", "5", "0", "step sign"}));
  EXPECT_TRUE(mentions(error_of([] { call("arange", {I(0), I(5), I(-1)}); }), {"[arange]"}));
  EXPECT_TRUE(mentions(error_of([] { call("arange", {F(INFINITY)}); }), {"[arange]"}));
  EXPECT_TRUE(mentions(error_of([] {
                         call("arange", {I(3)}, {{"dtype", Dt(DType::kBool)}});
                       }),
                       {"[arange]", "bool"}));
  // A fractional step for an integer result truncates to 0 (as torch): an error, not a hang.
  EXPECT_TRUE(mentions(error_of([] {
                         call("arange", {I(0), I(2), F(0.5)}, {{"dtype", Dt(DType::kInt64)}});
                       }),
                       {"[arange]", "step"}));
}

TEST(CreationOps, InferAndOutMatchEager) {
  // The engine path: infer on arguments alone, then write a caller-provided (dirty) buffer.
  struct Case {
    const char* op;
    Args args;
    Shape shape;
    DType dtype;
    std::vector<double> values;
  };
  Tensor self = iota({2}, DType::kUInt8);
  std::vector<Case> cases = {
      {"zeros", {L({I(2)}), None(), None(), None(), None(), None()}, {2}, DType::kFloat32, {0, 0}},
      {"empty.memory_format",
       {L({I(2)}), Dt(DType::kInt32), None(), None(), None(), None(), None()},
       {2},
       DType::kInt32,
       {0, 0}},
      {"zeros_like",
       {T(Tensor::meta({2}, DType::kInt8)), None(), None(), None(), None(), None(), None()},
       {2},
       DType::kInt8,
       {0, 0}},
      {"new_ones",
       {T(self), L({I(2)}), None(), None(), None(), None(), None()},
       {2},
       DType::kUInt8,
       {1, 1}},
      {"arange.start_step",
       {I(4), I(0), I(-2), None(), None(), None(), None(), None()},
       {2},
       DType::kInt64,
       {4, 2}},
  };
  for (const Case& c : cases) {
    const OpDef* op = Registry::get().find(c.op);
    ASSERT_NE(op, nullptr) << c.op;
    ASSERT_TRUE(op->infer && KernelTable::get().find(*op, DeviceType::kCpu)) << c.op;
    ASSERT_EQ(op->schema.args.size(), c.args.size()) << c.op;
    std::vector<Tensor> metas = op->infer(c.args);
    ASSERT_EQ(metas.size(), 1u);
    EXPECT_TRUE(metas[0].is_meta());
    EXPECT_EQ(metas[0].shape(), c.shape) << c.op;
    EXPECT_EQ(metas[0].dtype(), c.dtype) << c.op;
    Tensor out = Tensor::full(c.shape, Scalar(77), c.dtype);
    cpu_out(*op, c.args, {out});
    EXPECT_TRUE(tensor_near(out, c.shape, c.values)) << c.op;
  }
}
