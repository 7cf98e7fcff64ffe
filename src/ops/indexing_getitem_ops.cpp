// getitem / setitem: Python's x[i] and x[i] = v on tensors, and x[i] on the lists and tuples
// that multi-result ops (split, max.dim) return.
#include "ops/index_spec.h"
#include "ops/indexing_ops.h"

namespace inplace::indexing {

namespace {

Value getitem_sequence(const Value& seq, const Value& index) {
  const int64_t n = static_cast<int64_t>(seq.items.size());
  if (index.kind == Value::Kind::kSlice) {
    // Python slice semantics, negative steps included.
    auto bound = [](const Value& v) -> std::optional<int64_t> {
      if (v.is_none()) return std::nullopt;
      return v.as_int("getitem");
    };
    int64_t step = bound(index.items[2]).value_or(1);
    IP_CHECK(step != 0, kInvalidArgument, "[getitem] slice step cannot be zero");
    SliceIndices r = python_slice_indices(bound(index.items[0]), bound(index.items[1]), step, n);
    const int64_t s = r.start, e = r.stop;
    std::vector<Value> items;
    for (int64_t i = s; step > 0 ? i < e : i > e; i += step) items.push_back(seq.items[i]);
    Value out = seq;
    out.items = std::move(items);
    return out;
  }
  int64_t i = index.as_int("getitem");
  IP_CHECK(i >= -n && i < n, kOutOfRange, "[getitem] ", seq.kind_name(), " index ", i,
           " out of range for a ", seq.kind_name(), " of ", n, " items");
  return seq.items[i < 0 ? i + n : i];
}

Value getitem(const Args& a) {
  const Value& self = a[0];
  const Value& index = a[1];
  if (self.is_sequence()) return getitem_sequence(self, index);
  if (self.kind == Value::Kind::kDict) {
    const std::string& key = index.as_string("getitem");
    for (size_t k = 0; k < self.keys.size(); ++k)
      if (self.keys[k] == key) return self.items[k];
    IP_FAIL(kNotFound, "[getitem] key '", key, "' not in dict");
  }
  IP_CHECK(self.is_tensor(), kInvalidArgument, "[getitem] cannot index a ", self.kind_name());
  // No data gathered here (views and metas); the cpu kernel gathers an advanced index.
  return Value::from_tensor(getitem_tensor(self.tensor, index));
}

// builtins.getattr(x, name), as torch.fx records attribute reads: the named fields of the
// (values, indices) results of topk/sort/max.dim..., and a tensor's shape, ndim, dtype, device,
// T and mT. normalize rewrites the tensor-valued and shape forms into getitem / size / dim /
// permute so the passes see ops they model; the interpreter runs this directly.
Value getattr_value(const Args& a) {
  const Value& self = a[0];
  const std::string& name = a[1].as_string("getattr");
  if (self.kind == Value::Kind::kTuple || self.kind == Value::Kind::kList) {
    const int64_t index = name == "values" ? 0 : name == "indices" ? 1 : -1;
    IP_CHECK(index >= 0 && self.items.size() == 2, kUnsupported, "[getattr] a ", self.kind_name(),
             " of ", self.items.size(), " has no attribute '", name,
             "' (supported: values, indices of a (values, indices) result)");
    return self.items[static_cast<size_t>(index)];
  }
  IP_CHECK(self.is_tensor(), kUnsupported, "[getattr] attribute '", name, "' of a ",
           self.kind_name(), " is not supported");
  const Tensor& t = self.tensor;
  if (name == "shape") {
    std::vector<Value> sizes;
    for (int64_t d : t.shape()) sizes.push_back(Value::integer(d));
    return Value::tuple(std::move(sizes));
  }
  if (name == "ndim") return Value::integer(t.dim());
  if (name == "dtype") return Value::dtype_value(t.dtype());
  if (name == "device") return Value::device("cpu");
  if (name == "T") {
    std::vector<int64_t> dims;
    for (int64_t d = t.dim() - 1; d >= 0; --d) dims.push_back(d);
    return Value::from_tensor(t.permute(dims));
  }
  if (name == "mT") {
    IP_CHECK(t.dim() >= 2, kInvalidArgument, "[getattr] tensor.mT needs at least 2 dims, got ",
             shape_str(t.shape()));
    return Value::from_tensor(t.transpose(-2, -1));
  }
  IP_FAIL(kUnsupported, "[getattr] tensor attribute '", name,
          "' is not supported (supported: shape, ndim, dtype, device, T, mT)");
}

}  // namespace

void register_getitem_ops(Registry& r) {
  // getitem's result may share self's storage (basic index on a tensor, element of a list) or
  // be fresh (advanced index): declared as a view so alias analysis stays conservative.
  OpDef get;
  get.schema = Schema::parse("getitem(Any(a) self, Any index) -> Any(a)");
  get.kind = OpKind::kView;
  get.eager = getitem;
  r.add(std::move(get));
  // setitem writes on the cpu through its eager kernel (kernels/cpu/getitem.cpp).
  add_mutating(r, "setitem(Tensor(a!) self, Any index, Any value) -> ()", "", nullptr);
  OpDef attr;
  attr.schema = Schema::parse("getattr(Any(a) self, str name) -> Any(a)");
  attr.kind = OpKind::kView;
  attr.eager = getattr_value;
  r.add(std::move(attr));
  r.add_alias("__getitem__", "getitem");
  r.add_alias("__setitem__", "setitem");
}

}  // namespace inplace::indexing
