// Op tags: every op the engine and passes used to recognise by name carries its tag on every
// overload, and the tags the engine asks about are set only where they belong.
#include <gtest/gtest.h>

#include "ops/registry.h"

using namespace inplace;

namespace {

void expect_tagged(std::initializer_list<const char*> names, OpTag tag, const char* what) {
  for (const char* name : names) {
    const auto& overloads = Registry::get().overloads(name);
    EXPECT_FALSE(overloads.empty()) << name << " is registered";
    for (const OpDef* op : overloads)
      EXPECT_TRUE(op->has_tag(tag)) << op->schema.full_name() << " is " << what;
  }
}

}  // namespace

TEST(OpTags, ScatterLikeOpsWriteOverSelf) {
  // The list reinplace.cpp's writes_over_self kept by name.
  expect_tagged(
      {"slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter", "index_put",
       "masked_scatter", "index_copy", "index_add", "scatter", "scatter_add", "scatter_reduce",
       "masked_fill", "index_fill", "kv_cache_update", "fill", "zero", "copy"},
      kScatterLike, "scatter-like");
}

TEST(OpTags, PointwiseOps) {
  // The list reinplace.cpp's is_elementwise kept by name.
  expect_tagged(
      {"add",         "sub",          "mul",        "div",         "neg",     "abs",
       "pow",         "sqrt",         "rsqrt",      "exp",         "log",     "sin",
       "cos",         "tanh",         "sigmoid",    "relu",        "gelu",    "silu",
       "clamp",       "clamp_min",    "clamp_max",  "where",       "maximum", "minimum",
       "logical_not", "logical_and",  "logical_or", "masked_fill", "clone",   "lift_fresh_copy",
       "_to_copy",    "floor_divide", "remainder"},
      kPointwise, "pointwise");
}

TEST(OpTags, CacheUpdateIsOnlyKvCacheUpdate) {
  // The string compare for "kv_cache_update" in the engine became this tag.
  for (const OpDef* op : Registry::get().all())
    EXPECT_EQ(op->has_tag(kCacheUpdate), op->schema.name == "kv_cache_update")
        << op->schema.full_name();
}

TEST(OpTags, ViewsAndInPlaceOpsAreNotPointwise) {
  // A view shares its argument's memory and an in-place op writes it: neither may be reused as
  // an elementwise result buffer, so neither carries the tag.
  for (const OpDef* op : Registry::get().all())
    if (op->kind != OpKind::kFunctional)
      EXPECT_FALSE(op->has_tag(kPointwise)) << op->schema.full_name();
}
