// getitem on tensors (every index form torch accepts) and on lists/tuples. Expected values are
// worked by hand from x = arange(24).view(2, 3, 4): x[i][j][k] = 12i + 4j + k.
#include "ir/node.h"
#include "ops/index_spec.h"
#include "ops/index_test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Tensor X() {
  return iota({2, 3, 4});
}
Tensor get_t(const Tensor& x, Value index) {
  return call_t("_operator.getitem", {T(x), index});
}

}  // namespace

TEST(IndexGetitem, IntSelectsAViewAndWrapsNegative) {
  Tensor x = X();
  Tensor r = get_t(x, I(1));
  EXPECT_TRUE(tensor_near(r, {3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}));
  EXPECT_TRUE(r.same_storage(x));
  EXPECT_TRUE(tensor_equal(get_t(x, I(-1)), r));
  Tensor e = get_t(x, Tup({I(-2), I(-1), I(-4)}));  // x[0, 2, 0]
  EXPECT_TRUE(tensor_near(e, {}, {8}));
}

TEST(IndexGetitem, WriteThroughBasicResultIsSeenInBase) {
  Tensor x = X();
  Tensor v = get_t(x, Tup({I(0), Sl(I(1), I(3), None())}));  // x[0, 1:3] : [2, 4]
  EXPECT_EQ(v.shape(), (Shape{2, 4}));
  v.fill(Scalar(-1.0));
  EXPECT_EQ(get(x, {0, 0, 3}), 3);
  EXPECT_EQ(get(x, {0, 1, 0}), -1);
  EXPECT_EQ(get(x, {0, 2, 3}), -1);
  EXPECT_EQ(get(x, {1, 1, 0}), 16);
}

TEST(IndexGetitem, SlicesWithStepAndNegativeBounds) {
  Tensor x = X();
  Tensor r = get_t(x, Tup({All(), Sl(None(), None(), I(2))}));  // x[:, ::2]
  EXPECT_TRUE(
      tensor_near(r, {2, 2, 4}, {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23}));
  EXPECT_TRUE(r.same_storage(x));
  // x[:, 1::2, -3:-1] -> j = 1, k = 1, 2
  r = get_t(x, Tup({All(), Sl(I(1), None(), I(2)), Sl(I(-3), I(-1), None())}));
  EXPECT_TRUE(tensor_near(r, {2, 1, 2}, {5, 6, 17, 18}));
  // out-of-range slice bounds clamp, as in Python
  r = get_t(x, Sl(I(1), I(100), None()));
  EXPECT_EQ(r.shape(), (Shape{1, 3, 4}));
  r = get_t(x, Sl(I(5), I(9), None()));
  EXPECT_EQ(r.shape(), (Shape{0, 3, 4}));
  // a bound given as a 1-element int tensor (a SymInt produced by another node)
  r = get_t(x, Tup({All(), Sl(T(lt({2}, {1})), None(), None())}));
  EXPECT_TRUE(tensor_near(r, {2, 1, 4}, {8, 9, 10, 11, 20, 21, 22, 23}));
  EXPECT_TRUE(throws_with([&] { get_t(x, Sl(None(), None(), I(0))); },
                          {"[getitem]", "step must be greater than zero"}));
}

TEST(IndexGetitem, NoneAndEllipsis) {
  Tensor x = X();
  EXPECT_EQ(get_t(x, None()).shape(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(get_t(x, Tup({All(), None()})).shape(), (Shape{2, 1, 3, 4}));
  EXPECT_EQ(get_t(x, Tup({E(), None()})).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(get_t(x, Tup({None(), I(1), None(), E(), I(2)})).shape(), (Shape{1, 1, 3}));
  Tensor r = get_t(x, Tup({E(), I(1)}));  // x[..., 1]
  EXPECT_TRUE(tensor_near(r, {2, 3}, {1, 5, 9, 13, 17, 21}));
  EXPECT_TRUE(r.same_storage(x));
  r = get_t(x, Tup({I(0), E(), I(2)}));  // x[0, ..., 2]
  EXPECT_TRUE(tensor_near(r, {3}, {2, 6, 10}));
  r = get_t(x, E());
  EXPECT_TRUE(r.same_view(x));
  EXPECT_TRUE(throws_with([&] { get_t(x, Tup({E(), I(0), E()})); }, {"single ellipsis"}));
}

TEST(IndexGetitem, PythonBoolAddsADim) {
  Tensor x = X();
  Tensor t = get_t(x, B(true));
  EXPECT_EQ(t.shape(), (Shape{1, 2, 3, 4}));
  EXPECT_FALSE(t.same_storage(x));  // a bool is an advanced index: a copy
  EXPECT_EQ(get(t, {0, 1, 2, 3}), 23);
  EXPECT_EQ(get_t(x, B(false)).shape(), (Shape{0, 2, 3, 4}));
  Tensor u = get_t(x, Tup({I(1), B(true), I(2)}));  // x[1, True, 2] -> [1, 4]
  EXPECT_TRUE(tensor_near(u, {1, 4}, {20, 21, 22, 23}));
  // a 0-dim bool tensor acts the same
  EXPECT_EQ(get_t(x, T(bt({true}, {}))).shape(), (Shape{1, 2, 3, 4}));
}

TEST(IndexGetitem, BoolMasks) {
  Tensor x = X();
  Tensor m = bt({true, false, true, false, true, false}, {2, 3});
  // x[m]: rows (0,0), (0,2), (1,1)
  Tensor r = get_t(x, T(m));
  EXPECT_TRUE(tensor_near(r, {3, 4}, {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19}));
  EXPECT_FALSE(r.same_storage(x));
  // x[:, m1] with a 1-d mask on dim 1
  r = get_t(x, Tup({All(), T(bt({true, false, true}, {3}))}));
  EXPECT_TRUE(
      tensor_near(r, {2, 2, 4}, {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23}));
  // full-shape mask -> 1-d of the selected elements
  Tensor big = Tensor::empty({2, 3, 4}, DType::kBool);
  for (int64_t i = 0; i < 24; ++i) big.data<bool>()[i] = i % 5 == 0;
  EXPECT_TRUE(tensor_near(get_t(x, T(big)), {5}, {0, 5, 10, 15, 20}));
  // a mask followed by an int: x[m, 3]
  EXPECT_TRUE(tensor_near(get_t(x, Tup({T(m), I(3)})), {3}, {3, 11, 19}));
  // a list of Python bools is a mask too
  r = get_t(x, L({B(false), B(true)}));
  EXPECT_TRUE(tensor_near(r, {1, 3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}));
  EXPECT_TRUE(throws_with(
      [&] {
        get_t(x, T(bt({true, false, true}, {3})));
      },
      {"[getitem]", "mask [3]", "[2,3,4]", "index 0"}));
}

TEST(IndexGetitem, IntTensorsAndLists) {
  Tensor x = X();
  Tensor r = get_t(x, T(lt({1, 0, -1}, {3})));  // x[[1, 0, -1]]
  EXPECT_EQ(r.shape(), (Shape{3, 3, 4}));
  EXPECT_EQ(get(r, {0, 0, 0}), 12);
  EXPECT_EQ(get(r, {1, 2, 3}), 11);
  EXPECT_EQ(get(r, {2, 1, 1}), 17);
  EXPECT_TRUE(tensor_equal(get_t(x, L({I(1), I(0), I(-1)})), r));
  // int32 index tensors work too
  Tensor i32 = Tensor::from_vector<int32_t>({2, 0}, {2});
  EXPECT_TRUE(tensor_near(get_t(x, Tup({I(1), T(i32), I(3)})), {2}, {23, 15}));
  // a 2-d index tensor on dim 1: x[:, [[0, 2], [1, 1]]] -> [2, 2, 2, 4]
  r = get_t(x, Tup({All(), T(lt({0, 2, 1, 1}, {2, 2}))}));
  EXPECT_EQ(r.shape(), (Shape{2, 2, 2, 4}));
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t p = 0; p < 2; ++p)
      for (int64_t q = 0; q < 2; ++q)
        for (int64_t k = 0; k < 4; ++k) {
          int64_t j = std::vector<int64_t>{0, 2, 1, 1}[p * 2 + q];
          EXPECT_EQ(get(r, {a, p, q, k}), 12 * a + 4 * j + k);
        }
  // a 0-dim int tensor selects like an int (a view)
  Tensor s = get_t(x, Tup({All(), T(lt({2}, {}))}));
  EXPECT_TRUE(tensor_near(s, {2, 4}, {8, 9, 10, 11, 20, 21, 22, 23}));
  EXPECT_TRUE(s.same_storage(x));
  // a top-level list holding a slice reads as a tuple: x[[slice(None), [0, 2]]] == x[:, [0, 2]]
  r = get_t(x, L({All(), L({I(0), I(2)})}));
  EXPECT_TRUE(
      tensor_near(r, {2, 2, 4}, {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23}));
  // a nested list of ints is one 2-d index: x[[[1], [0]]] -> [2, 1, 3, 4]? No: a list holding
  // sequences reads as a tuple (torch), so this is x[[1], [0]] -> [1, 4] = x[1, 0]
  r = get_t(x, L({L({I(1)}), L({I(0)})}));
  EXPECT_TRUE(tensor_near(r, {1, 4}, {12, 13, 14, 15}));
  // an empty list selects nothing
  EXPECT_EQ(get_t(x, L({})).shape(), (Shape{0, 3, 4}));
  EXPECT_TRUE(throws_with([&] { get_t(x, T(ft({0}, {1}))); },
                          {"[getitem]", "long, int, byte or bool", "float32"}));
}

TEST(IndexGetitem, MixedTupleAdjacentIndicesStayInPlace) {
  Tensor x = X();
  // x[1, [0, 2], 1:3]: select dim 0, then [0, 2] on dim 1 and the slice on dim 2 -> [2, 2]
  Tensor r = get_t(x, Tup({I(1), L({I(0), I(2)}), Sl(I(1), I(3), None())}));
  EXPECT_TRUE(tensor_near(r, {2, 2}, {13, 14, 21, 22}));
  // x[:, [2, 0], [3, 1]]: adjacent, paired -> [2, 2]
  r = get_t(x, Tup({All(), L({I(2), I(0)}), L({I(3), I(1)})}));
  EXPECT_TRUE(tensor_near(r, {2, 2}, {11, 1, 23, 13}));
}

TEST(IndexGetitem, KvCacheBlocksIntOffsets) {
  // state[blocks, 0, offsets, :] on [B, H, S, D] = [3, 2, 5, 4]: the int selects H away, so
  // blocks and offsets are adjacent -> [n, D].
  Tensor state = iota({3, 2, 5, 4});
  Tensor blocks = lt({2, 0}, {2}), offsets = lt({4, 1}, {2});
  Tensor r = get_t(state, Tup({T(blocks), I(0), T(offsets), All()}));
  // state[2,0,4,:] = ((2*2+0)*5+4)*4 = 96.. ; state[0,0,1,:] = 4..
  EXPECT_TRUE(tensor_near(r, {2, 4}, {96, 97, 98, 99, 4, 5, 6, 7}));
  // bounds errors name the dim of state, the index and the size
  EXPECT_TRUE(throws_with(
      [&] {
        get_t(state, Tup({T(blocks), I(0), T(lt({5, 1}, {2})), All()}));
      },
      {"[getitem]", "index 5", "dimension 2", "size 5"}));
  EXPECT_TRUE(throws_with(
      [&] {
        get_t(state, Tup({T(blocks), I(2)}));
      },
      {"[getitem]", "index 2", "dimension 1", "size 2"}));
}

TEST(IndexGetitem, SeparatedAdvancedIndicesMoveToTheFront) {
  Tensor x = X();
  // x[[1, 0], :, [3, 2]] -> [2, 3]: r[k, j] = x[i0[k], j, i2[k]]
  Tensor r = get_t(x, Tup({L({I(1), I(0)}), All(), L({I(3), I(2)})}));
  EXPECT_TRUE(tensor_near(r, {2, 3}, {15, 19, 23, 2, 6, 10}));
  // separated by None as well: x[[1, 0], None, :, [3, 2]] -> [2, 1, 3]
  r = get_t(x, Tup({L({I(1), I(0)}), None(), All(), L({I(3), I(2)})}));
  EXPECT_TRUE(tensor_near(r, {2, 1, 3}, {15, 19, 23, 2, 6, 10}));
  // torch, unlike NumPy, selects ints first: x4[:, idx, :, 0] on [2, 3, 4, 5] is [2, n, 4]
  // (NumPy: [n, 2, 4]); see pytorch/pytorch#157676.
  Tensor x4 = iota({2, 3, 4, 5});
  Tensor idx = lt({2, 0, 1}, {3});
  r = get_t(x4, Tup({All(), T(idx), All(), I(0)}));
  ASSERT_EQ(r.shape(), (Shape{2, 3, 4}));
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t c = 0; c < 4; ++c)
        EXPECT_EQ(get(r, {a, k, c}), get(x4, {a, idx.data<int64_t>()[k], c, 0}));
}

TEST(IndexGetitem, IndexTensorsBroadcast) {
  Tensor x = X();
  Tensor i = lt({0, 2}, {2, 1}), j = lt({0, 1, 3}, {3});
  Tensor r = get_t(x, Tup({All(), T(i), T(j)}));  // -> [2, 2, 3]
  ASSERT_EQ(r.shape(), (Shape{2, 2, 3}));
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t p = 0; p < 2; ++p)
      for (int64_t q = 0; q < 3; ++q)
        EXPECT_EQ(get(r, {a, p, q}), 12 * a + 4 * i.data<int64_t>()[p] + j.data<int64_t>()[q]);
  EXPECT_TRUE(throws_with(
      [&] {
        get_t(x, Tup({L({I(0), I(1)}), L({I(0), I(1), I(2)})}));
      },
      {"[getitem]", "could not be broadcast", "[2]", "[3]"}));
}

TEST(IndexGetitem, OutOfRangeAndTooManyIndices) {
  Tensor x = X();
  EXPECT_TRUE(
      throws_with([&] { get_t(x, I(2)); }, {"[getitem]", "index 2", "dimension 0", "size 2"}));
  EXPECT_TRUE(throws_with(
      [&] {
        get_t(x, Tup({I(0), I(-4)}));
      },
      {"[getitem]", "index -4", "dimension 1", "size 3"}));
  EXPECT_TRUE(throws_with(
      [&] {
        get_t(x, Tup({All(), L({I(0), I(3)})}));
      },
      {"[getitem]", "index 3", "dimension 1", "size 3"}));
  EXPECT_TRUE(throws_with(
      [&] {
        get_t(x, Tup({I(0), I(0), I(0), I(0)}));
      },
      {"[getitem]", "too many indices", "dimension 3", "got 4"}));
  EXPECT_TRUE(throws_with([&] { get_t(x, F(1.5)); }, {"[getitem]", "valid indices"}));
  Tensor s = Tensor::scalar(Scalar(3.0), DType::kFloat32);
  EXPECT_TRUE(throws_with([&] { get_t(s, I(0)); }, {"[getitem]", "too many indices"}));
  EXPECT_TRUE(tensor_near(get_t(s, None()), {1}, {3}));
}

TEST(IndexGetitem, EveryDTypeAndNonContiguousSelf) {
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                   DType::kInt64, DType::kInt32, DType::kInt16, DType::kInt8, DType::kUInt8}) {
    Tensor x = iota({4, 3}, dt).t();  // [3, 4], strides [1, 3]
    Tensor r = get_t(x, Tup({L({I(2), I(0)}), Sl(None(), None(), I(2))}));  // -> [2, 2]
    EXPECT_EQ(r.dtype(), dt);
    // x[j][i] = 3i + j
    EXPECT_TRUE(tensor_near(r, {2, 2}, {2, 8, 0, 6})) << dtype_name(dt);
  }
  Tensor b = bt({true, false, true, true}, {4});
  EXPECT_TRUE(tensor_near(get_t(b, L({I(3), I(1)})), {2}, {1, 0}));
}

TEST(IndexGetitem, EmptyTensors) {
  Tensor e = Tensor::empty({0, 3}, DType::kFloat32);
  EXPECT_EQ(get_t(e, Tup({All(), L({I(1), I(2)})})).shape(), (Shape{0, 2}));
  EXPECT_EQ(get_t(e, T(Tensor::empty({0}, DType::kBool))).shape(), (Shape{0, 3}));
  EXPECT_TRUE(throws_with([&] { get_t(e, L({I(0)})); }, {"index 0", "dimension 0", "size 0"}));
}

TEST(IndexGetitem, MetaTensorsGiveShapes) {
  Tensor x = Tensor::meta({2, 3, 4}, DType::kFloat16);
  Tensor r = get_t(x, Tup({T(Tensor::meta({5}, DType::kInt64)), I(0)}));
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(r.shape(), (Shape{5, 4}));
  EXPECT_EQ(r.dtype(), DType::kFloat16);
  EXPECT_EQ(get_t(x, Tup({I(1), Sl(None(), None(), I(2))})).shape(), (Shape{2, 4}));
  EXPECT_TRUE(throws_with(
      [&] {
        get_t(x, T(Tensor::meta({2, 3}, DType::kBool)));
      },
      {"[getitem]", "data-dependent"}));
}

TEST(IndexGetitem, ListsAndTuples) {
  Value lst = L({I(10), I(11), I(12), I(13)});
  EXPECT_EQ(call("_operator.getitem", {lst, I(-1)}).i, 13);
  EXPECT_EQ(call("operator.getitem", {lst, I(1)}).i, 11);
  EXPECT_EQ(call("__getitem__", {lst, T(lt({2}, {}))}).i, 12);
  Value sub = call("_operator.getitem", {lst, Sl(I(1), None(), I(2))});
  ASSERT_EQ(sub.items.size(), 2u);
  EXPECT_EQ(sub.items[0].i, 11);
  EXPECT_EQ(sub.items[1].i, 13);
  sub = call("_operator.getitem", {lst, Sl(None(), None(), I(-1))});
  ASSERT_EQ(sub.items.size(), 4u);
  EXPECT_EQ(sub.items[0].i, 13);
  EXPECT_EQ(sub.items[3].i, 10);
  EXPECT_EQ(sub.kind, Value::Kind::kList);
  // a tuple of tensors (split's result): the element is the very tensor
  Tensor a = iota({2}), b = iota({3});
  Value tup = Tup({T(a), T(b)});
  Tensor got = call_t("_operator.getitem", {tup, I(1)});
  EXPECT_TRUE(got.same_view(b));
  EXPECT_EQ(call("_operator.getitem", {tup, Sl(I(1), None(), None())}).kind, Value::Kind::kTuple);
  EXPECT_TRUE(throws_with(
      [&] {
        call("_operator.getitem", {tup, I(2)});
      },
      {"[getitem]", "index 2", "2 items"}));
}

TEST(IndexSpec, EntriesNameSelfAndViewDims) {
  // x[None, 1, ..., [0, 2]] on a 4-d tensor
  IndexSpec spec = parse_index(Tup({None(), I(1), E(), L({I(0), I(2)})}), 4, "test");
  ASSERT_EQ(spec.entries.size(), 4u);
  EXPECT_EQ(spec.entries[0].kind, IndexEntry::Kind::kNone);
  EXPECT_EQ(spec.entries[0].view_dim, 0);
  EXPECT_EQ(spec.entries[1].kind, IndexEntry::Kind::kInt);
  EXPECT_EQ(spec.entries[1].self_dim, 0);
  EXPECT_EQ(spec.entries[1].view_dim, 1);
  EXPECT_EQ(spec.entries[2].kind, IndexEntry::Kind::kEllipsis);
  EXPECT_EQ(spec.entries[2].self_dim, 1);
  EXPECT_EQ(spec.entries[2].span, 2);
  EXPECT_EQ(spec.entries[3].kind, IndexEntry::Kind::kTensor);
  EXPECT_EQ(spec.entries[3].self_dim, 3);
  EXPECT_EQ(spec.entries[3].view_dim, 3);
  EXPECT_TRUE(spec.has_advanced());
  Tensor x = iota({2, 3, 4, 5});
  BasicIndexed b = apply_basic_index(x, spec, "test");
  EXPECT_EQ(b.view.shape(), (Shape{1, 3, 4, 5}));
  ASSERT_EQ(b.indices.size(), 4u);
  EXPECT_FALSE(b.indices[0].defined());
  EXPECT_TRUE(b.indices[3].defined());
  EXPECT_EQ(b.self_dims, (std::vector<int64_t>{-1, 1, 2, 3}));
  EXPECT_FALSE(parse_index(Tup({I(0), All()}), 2, "test").has_advanced());
}

TEST(IndexSpec, NodeReferencesForPasses) {
  Node tensor_node, int_node;
  tensor_node.name = "offsets";
  tensor_node.meta.shape = Shape{5};
  tensor_node.meta.dtype = DType::kInt64;
  int_node.name = "pos";  // no dtype meta: a run-time int
  // x[:, pos, offsets] and x[:, :pos]
  IndexSpec spec = parse_index(
      Tup({All(), Value::node_ref(&int_node), Value::node_ref(&tensor_node)}), 3, "test");
  ASSERT_EQ(spec.entries.size(), 3u);
  EXPECT_EQ(spec.entries[1].kind, IndexEntry::Kind::kInt);
  EXPECT_TRUE(spec.entries[1].dynamic);
  EXPECT_EQ(spec.entries[1].raw.node, &int_node);
  EXPECT_EQ(spec.entries[2].kind, IndexEntry::Kind::kTensor);
  EXPECT_EQ(spec.entries[2].tensor.shape(), (Shape{5}));
  EXPECT_EQ(spec.entries[2].view_dim, 1);
  EXPECT_TRUE(spec.has_advanced());
  // shapes still follow on metas: the run-time int selects a dim away
  BasicIndexed b = apply_basic_index(Tensor::meta({2, 3, 4}, DType::kFloat32), spec, "test");
  EXPECT_EQ(b.view.shape(), (Shape{2, 4}));
  IndexSpec sl = parse_index(Tup({All(), Sl(None(), Value::node_ref(&int_node), None())}), 3, "t");
  EXPECT_EQ(sl.entries[1].kind, IndexEntry::Kind::kSlice);
  EXPECT_TRUE(sl.entries[1].dynamic);
  EXPECT_EQ(sl.entries[1].raw.items[1].node, &int_node);
  EXPECT_TRUE(throws_with(
      [&] {
        apply_basic_index(Tensor::meta({2, 3}, DType::kFloat32), sl, "t");
      },
      {"[t]", "only known at run time"}));
}
