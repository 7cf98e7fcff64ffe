// cat, stack, repeat, roll, flip, tril and triu through the registry, against references
// computed here with plain index loops; non-contiguous inputs, mixed dtypes, negative dims.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Shape unravel(int64_t flat, const Shape& shape) {
  Shape idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

// Element of `t` at a multi-index, read through its own strides (t may be any view).
double elem(const Tensor& t, const Shape& idx) {
  int64_t flat = 0;
  for (size_t d = 0; d < idx.size(); ++d) flat = flat * t.shape()[d] + idx[d];
  return t.at(flat);
}

// Values of `shape` where out[idx] = f(idx), in row-major order.
std::vector<double> build(const Shape& shape, const std::function<double(const Shape&)>& f) {
  std::vector<double> out(static_cast<size_t>(numel_of(shape)));
  for (int64_t i = 0; i < numel_of(shape); ++i) out[i] = f(unravel(i, shape));
  return out;
}

int64_t pmod(int64_t a, int64_t n) {
  return ((a % n) + n) % n;
}

}  // namespace

TEST(CreationMovement, CatAlongEachDim) {
  Tensor a = iota({2, 3});
  Tensor b = iota({2, 3});
  b.fill(Scalar(9.0));
  Tensor c0 = call_t("cat", {L({T(a), T(b)})});
  EXPECT_TRUE(tensor_near(c0, {4, 3}, {0, 1, 2, 3, 4, 5, 9, 9, 9, 9, 9, 9}));
  Tensor c1 = call_t("torch.cat", {L({T(a), T(iota({2, 1}))}), I(-1)});
  EXPECT_TRUE(tensor_near(c1, {2, 4}, {0, 1, 2, 0, 3, 4, 5, 1}));
  Tensor c2 = call_t("aten.cat.default", {L({T(a), T(a), T(a)})}, {{"dim", I(1)}});
  EXPECT_TRUE(tensor_near(c2, {2, 9}, {0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 3, 4, 5}));
  EXPECT_TRUE(tensor_near(call_t("concat", {Tup({T(a)}), I(0)}), {2, 3}, {0, 1, 2, 3, 4, 5}));
  Tensor single = call_t("cat", {L({T(a)})});
  EXPECT_FALSE(single.same_storage(a));  // always a fresh result
}

TEST(CreationMovement, CatNonContiguousInputs) {
  Tensor base = iota({4, 6});
  Tensor t = base.t();                                               // [6,4]
  Tensor s = iota({6, 8}).slice(1, 1, std::nullopt, 3);              // [6,3] cols 1,4,7
  Tensor e = iota({2, 6}).select(0, 1).unsqueeze(1).expand({6, 2});  // stride-0 broadcast
  Tensor c = call_t("cat", {L({T(t), T(s), T(e)}), I(1)});
  ASSERT_EQ(c.shape(), (Shape{6, 9}));
  EXPECT_TRUE(tensor_near(c, {6, 9}, build({6, 9}, [&](const Shape& i) {
                            if (i[1] < 4) return elem(t, {i[0], i[1]});
                            if (i[1] < 7) return elem(s, {i[0], i[1] - 4});
                            return elem(e, {i[0], i[1] - 7});
                          })));
  Tensor r = call_t("cat", {L({T(t), T(t.slice(0, 0, std::nullopt, 2))}), I(-2)});
  EXPECT_TRUE(tensor_near(r, {9, 4}, build({9, 4}, [&](const Shape& i) {
                            return i[0] < 6 ? elem(t, i) : elem(t, {(i[0] - 6) * 2, i[1]});
                          })));
}

TEST(CreationMovement, CatPromotesDtypes) {
  Tensor i = lt({1, 2}, {2});
  Tensor f = ft({0.5f}, {1});
  Tensor c = call_t("cat", {L({T(i), T(f)})});
  EXPECT_EQ(c.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(c, {3}, {1, 2, 0.5}));
  Tensor b = bt({true, false}, {2});
  Tensor i32 = iota({2}, DType::kInt32);
  Tensor bi = call_t("cat", {L({T(b), T(i32)})});
  EXPECT_EQ(bi.dtype(), DType::kInt32);
  EXPECT_TRUE(tensor_near(bi, {4}, {1, 0, 0, 1}));
  Tensor hb = call_t("cat", {L({T(iota({1}, DType::kFloat16)), T(iota({1}, DType::kBFloat16))})});
  EXPECT_EQ(hb.dtype(), DType::kFloat32);
  Tensor u8 = call_t("cat", {L({T(iota({1}, DType::kUInt8)), T(iota({1}, DType::kInt8))})});
  EXPECT_EQ(u8.dtype(), DType::kInt16);
  Tensor d = call_t("cat", {L({T(ft({1.5f}, {1})), T(dt({2.25}, {1}))})});
  EXPECT_EQ(d.dtype(), DType::kFloat64);
  EXPECT_TRUE(tensor_near(d, {2}, {1.5, 2.25}));
}

TEST(CreationMovement, CatSkipsLegacyEmptyTensors) {
  Tensor a = iota({2, 3});
  Tensor empty = Tensor::empty({0}, DType::kFloat64);  // skipped for shapes, still promotes
  Tensor c = call_t("cat", {L({T(empty), T(a), T(empty), T(a)}), I(1)});
  EXPECT_EQ(c.dtype(), DType::kFloat64);
  EXPECT_TRUE(tensor_near(c, {2, 6}, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  Tensor all_empty = call_t("cat", {L({T(empty), T(Tensor::empty({0}, DType::kInt64))})});
  EXPECT_EQ(all_empty.shape(), (Shape{0}));
  EXPECT_EQ(all_empty.dtype(), DType::kFloat64);
  // A [0, 3] tensor is not legacy-empty: it joins along dim 0.
  Tensor z = call_t("cat", {L({T(Tensor::empty({0, 3}, DType::kFloat32)), T(a)})});
  EXPECT_TRUE(tensor_near(z, {2, 3}, {0, 1, 2, 3, 4, 5}));
}

TEST(CreationMovement, CatErrors) {
  Tensor a = iota({2, 3}), b = iota({4, 5});
  EXPECT_TRUE(mentions(error_of([&] {
                         call("cat", {L({T(a), T(a), T(b)}), I(1)});
                       }),
                       {"[cat]", "tensor 2", "[4,5]", "tensor 0", "[2,3]", "dim 1"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("cat", {L({T(a), T(iota({2, 3, 1}))})});
                       }),
                       {"[cat]", "tensor 1", "[2,3,1]", "[2,3]"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("cat", {L({T(a), T(Tensor::scalar(Scalar(1.0), DType::kFloat32))})});
                       }),
                       {"[cat]", "position 1"}));
  EXPECT_TRUE(mentions(error_of([&] { call("cat", {L({})}); }), {"[cat]", "non-empty"}));
  EXPECT_TRUE(mentions(error_of([&] { call("cat", {L({T(a)}), I(2)}); }), {"[cat]", "dim 2"}));
  EXPECT_TRUE(mentions(error_of([&] { call("cat", {L({T(a), I(3)})}); }), {"[cat]", "Tensor"}));
}

TEST(CreationMovement, Stack) {
  Tensor a = iota({2, 3});
  Tensor b = iota({3, 2}).t();  // non-contiguous [2,3]
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    Tensor s = call_t("stack", {L({T(a), T(b)}), I(dim)});
    int64_t d = dim < 0 ? dim + 3 : dim;
    Shape shape = {2, 3};
    shape.insert(shape.begin() + d, 2);
    EXPECT_TRUE(tensor_near(s, shape,
                            build(shape,
                                  [&](const Shape& i) {
                                    Shape rest = i;
                                    rest.erase(rest.begin() + d);
                                    return elem(i[d] == 0 ? a : b, rest);
                                  })))
        << "dim " << dim;
  }
  Tensor mixed = call_t("torch.stack", {Tup({T(lt({1, 2}, {2})), T(ft({0.5f, 1.5f}, {2}))})});
  EXPECT_EQ(mixed.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(mixed, {2, 2}, {1, 2, 0.5, 1.5}));
  Tensor scalars = call_t("stack", {L({T(Tensor::scalar(Scalar(int64_t{4}), DType::kInt64)),
                                       T(Tensor::scalar(Scalar(int64_t{5}), DType::kInt64))})});
  EXPECT_TRUE(tensor_near(scalars, {2}, {4, 5}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("stack", {L({T(a), T(iota({2, 4}))})});
                       }),
                       {"[stack]", "[2,3]", "entry 0", "[2,4]", "entry 1"}));
  EXPECT_TRUE(mentions(error_of([&] { call("stack", {L({T(a)}), I(3)}); }), {"[stack]", "dim 3"}));
  EXPECT_TRUE(mentions(error_of([&] { call("stack", {L({})}); }), {"[stack]"}));
}

TEST(CreationMovement, Repeat) {
  Tensor x = iota({2, 3}).t();                            // [3,2], non-contiguous
  Tensor r = call_t("repeat", {T(x), I(2), I(1), I(2)});  // varargs, one leading dim
  Shape shape = {2, 3, 4};
  EXPECT_TRUE(tensor_near(r, shape, build(shape, [&](const Shape& i) {
                            return elem(x, {i[1] % 3, i[2] % 2});
                          })));
  Tensor same = call_t("aten.repeat.default", {T(x), L({I(1), I(1)})});
  EXPECT_FALSE(same.same_storage(x));
  EXPECT_TRUE(tensor_equal(same, x.contiguous()));
  Tensor zero = call_t("repeat", {T(x), L({I(0), I(2)})});
  EXPECT_EQ(zero.shape(), (Shape{0, 4}));
  Tensor s = call_t("repeat", {T(Tensor::scalar(Scalar(true), DType::kBool)), L({I(3)})});
  EXPECT_EQ(s.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(s, {3}, {1, 1, 1}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("repeat", {T(x), L({I(2)})});
                       }),
                       {"[repeat]", "[2]", "[3,2]"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("repeat", {T(x), L({I(1), I(-1)})});
                       }),
                       {"[repeat]", "negative"}));
  // Repeats whose product overflows int64 are an error, not a wrapped (small) shape.
  EXPECT_TRUE(mentions(error_of([&] {
                         call("repeat", {T(x), L({I(int64_t{1} << 62), I(4)})});
                       }),
                       {"[repeat]", "overflow"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("repeat", {T(x), L({I(int64_t{1} << 31), I(int64_t{1} << 31)})});
                       }),
                       {"int64"}));
}

TEST(CreationMovement, Roll) {
  Tensor v = iota({5}, DType::kInt64);
  EXPECT_TRUE(tensor_near(call_t("roll", {T(v), I(2)}), {5}, {3, 4, 0, 1, 2}));
  EXPECT_TRUE(tensor_near(call_t("roll", {T(v), I(-1), I(0)}), {5}, {1, 2, 3, 4, 0}));
  EXPECT_TRUE(tensor_near(call_t("roll", {T(v), I(12)}), {5}, {3, 4, 0, 1, 2}));
  EXPECT_TRUE(tensor_near(call_t("roll", {T(v), I(0)}), {5}, {0, 1, 2, 3, 4}));
  Tensor x = iota({3, 4}).t();  // [4,3], non-contiguous
  struct Case {
    std::vector<int64_t> shifts, dims;
  };
  for (const Case& c : std::vector<Case>{
           {{1}, {0}}, {{-2}, {-1}}, {{1, 5}, {0, 1}}, {{2, 1}, {1, 1}}, {{3, -7}, {-1, 0}}}) {
    Shape shape = x.shape();
    Tensor r = call_t("torch.roll", {T(x), Value::int_list(c.shifts), Value::int_list(c.dims)});
    EXPECT_TRUE(tensor_near(r, shape,
                            build(shape,
                                  [&](const Shape& i) {
                                    Shape src = i;
                                    for (size_t k = 0; k < c.dims.size(); ++k) {
                                      int64_t d = pmod(c.dims[k], 2);
                                      src[d] = pmod(src[d] - c.shifts[k], shape[d]);
                                    }
                                    return elem(x, src);
                                  })))
        << shape_str(c.shifts) << " " << shape_str(c.dims);
  }
  // No dims: roll the flattened tensor, keep the shape.
  Tensor flat = call_t("aten.roll.default", {T(x), L({I(5)})});
  EXPECT_TRUE(tensor_near(flat, {4, 3}, build({4, 3}, [&](const Shape& i) {
                            int64_t src = pmod(i[0] * 3 + i[1] - 5, 12);
                            return elem(x, {src / 3, src % 3});
                          })));
  Tensor scalar = Tensor::scalar(Scalar(2.0), DType::kFloat32);
  EXPECT_TRUE(tensor_near(call_t("roll", {T(scalar), I(1)}), {}, {2}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("roll", {T(scalar), I(1), I(0)});
                       }),
                       {"[roll]", "0-dim"}));
  EXPECT_EQ(call_t("roll", {T(Tensor::empty({0, 2}, DType::kFloat32)), I(1), I(0)}).shape(),
            (Shape{0, 2}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("roll", {T(x), L({I(1), I(2)}), L({I(0)})});
                       }),
                       {"[roll]", "[1,2]", "[0]"}));
  EXPECT_TRUE(mentions(error_of([&] { call("roll", {T(x), L({I(1), I(2)})}); }), {"[roll]"}));
  EXPECT_TRUE(mentions(error_of([&] { call("roll", {T(x), I(1), I(2)}); }), {"[roll]", "dim 2"}));
}

TEST(CreationMovement, Flip) {
  Tensor x = iota({2, 3, 4}).permute({2, 0, 1});  // [4,2,3], non-contiguous
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{0}, {-1}, {0, 2}, {1, 0, 2}, {}}) {
    Tensor r = call_t("flip", {T(x), Value::int_list(dims)});
    EXPECT_TRUE(tensor_near(r, x.shape(),
                            build(x.shape(),
                                  [&](const Shape& i) {
                                    Shape src = i;
                                    for (int64_t d : dims) {
                                      int64_t w = pmod(d, 3);
                                      src[w] = x.shape()[w] - 1 - i[w];
                                    }
                                    return elem(x, src);
                                  })))
        << shape_str(dims);
  }
  EXPECT_TRUE(tensor_near(call_t("flip", {T(iota({4}, DType::kInt8)), I(0)}), {4}, {3, 2, 1, 0}));
  EXPECT_TRUE(tensor_near(call_t("aten.flip.default", {T(iota({2, 2})), L({I(0), I(1)})}), {2, 2},
                          {3, 2, 1, 0}));
  EXPECT_TRUE(tensor_near(
      call_t("flip", {T(Tensor::scalar(Scalar(5.0), DType::kFloat32)), L({I(0)})}), {}, {5}));
  EXPECT_EQ(call_t("flip", {T(Tensor::empty({3, 0}, DType::kFloat32)), I(0)}).shape(),
            (Shape{3, 0}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("flip", {T(x), L({I(0), I(-3)})});
                       }),
                       {"[flip]", "multiple"}));
  EXPECT_TRUE(mentions(error_of([&] { call("flip", {T(x), L({I(3)})}); }), {"[flip]", "dim 3"}));
}

TEST(CreationMovement, TrilTriu) {
  std::vector<float> vals(24);
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<float>(i + 1);  // no zeros
  Tensor m = Tensor::from_vector<float>(vals, {2, 3, 4});
  for (const Tensor& x : {m, m.transpose(1, 2)}) {  // [2,3,4] and a non-contiguous [2,4,3]
    for (int64_t k : {-10, -2, -1, 0, 1, 3, 10}) {
      for (bool upper : {false, true}) {
        Tensor r = upper ? call_t("triu", {T(x), I(k)})
                         : call_t("torch.tril", {T(x)}, {{"diagonal", I(k)}});
        EXPECT_TRUE(tensor_near(r, x.shape(),
                                build(x.shape(),
                                      [&](const Shape& i) {
                                        int64_t off = i[2] - i[1];
                                        bool keep = upper ? off >= k : off <= k;
                                        return keep ? elem(x, i) : 0.0;
                                      })))
            << (upper ? "triu " : "tril ") << k << " " << shape_str(x.shape());
      }
    }
  }
  Tensor l = call_t("aten.tril.default", {T(lt({1, 2, 3, 4}, {2, 2}))});
  EXPECT_EQ(l.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(l, {2, 2}, {1, 0, 3, 4}));
  Tensor b = call_t("triu", {T(bt({true, true, true, true, true, true}, {2, 3})), I(1)});
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(b, {2, 3}, {0, 1, 1, 0, 0, 1}));
  EXPECT_EQ(call_t("tril", {T(Tensor::empty({0, 3}, DType::kFloat32))}).shape(), (Shape{0, 3}));
  // In place: the same tensor comes back, written.
  Tensor y = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  Tensor r = call_t("tril_", {T(y), I(-1)});
  EXPECT_TRUE(r.same_view(y));
  EXPECT_TRUE(tensor_near(y, {3, 3}, {0, 0, 0, 4, 0, 0, 7, 8, 0}));
  Tensor yt = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}).t();
  call("triu_", {T(yt)});
  EXPECT_TRUE(tensor_near(yt, {2, 2}, {1, 3, 0, 4}));
  EXPECT_TRUE(mentions(error_of([&] { call("tril", {T(iota({3}))}); }), {"[tril]", "[3]"}));
  EXPECT_TRUE(mentions(error_of([&] { call("triu", {T(iota({}))}); }), {"[triu]", "[]"}));
}

TEST(CreationMovement, RegisteredWithInferAndOut) {
  for (const char* name : {"cat", "stack", "repeat", "roll", "flip", "tril", "triu"}) {
    const OpDef* op = Registry::get().find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->kind, OpKind::kFunctional) << name;
    EXPECT_TRUE(op->infer && KernelTable::get().find(*op, DeviceType::kCpu)) << name;
  }
  // infer works on metas, and out fills a dirty caller buffer completely.
  const OpDef* cat = Registry::get().find("cat");
  Args metas = {
      L({T(Tensor::meta({2, 3}, DType::kInt32)), T(Tensor::meta({2, 1}, DType::kFloat16))}), I(-1)};
  std::vector<Tensor> inferred = cat->infer(metas);
  EXPECT_EQ(inferred[0].shape(), (Shape{2, 4}));
  EXPECT_EQ(inferred[0].dtype(), DType::kFloat16);
  Args real = {L({T(iota({2, 3}, DType::kInt32)), T(iota({2, 1}, DType::kFloat16))}), I(-1)};
  Tensor out = Tensor::full({2, 4}, Scalar(-7.0), DType::kFloat16);
  cpu_out(*cat, real, {out});
  EXPECT_TRUE(tensor_near(out, {2, 4}, {0, 1, 2, 0, 3, 4, 5, 1}));
}
