#include "ops/index_spec.h"

#include <algorithm>

#include "ir/node.h"
#include "ops/index_args.h"

namespace inplace {

using Kind = IndexEntry::Kind;

bool IndexSpec::has_advanced() const {
  for (const IndexEntry& e : entries)
    if (e.kind == Kind::kTensor || e.kind == Kind::kBool) return true;
  return false;
}

namespace {

// torch's treatSequenceAsTuple.
bool list_reads_as_tuple(const Value& v) {
  if (v.kind == Value::Kind::kTuple) return true;
  if (v.kind != Value::Kind::kList || v.items.size() >= 32) return false;
  for (const Value& x : v.items) {
    if (x.is_tensor() || x.is_sequence() || x.kind == Value::Kind::kSlice ||
        x.kind == Value::Kind::kEllipsis || x.is_none())
      return true;
  }
  return false;
}

// torch's indexing_tensor_from_data: nested lists of numbers -> bool tensor if every leaf is a
// bool, else int64 (floats truncate, as torch's conversion does).
void collect_leaves(const Value& v, size_t depth, Shape* shape, std::vector<Value>* leaves,
                    const char* op) {
  if (v.is_sequence()) {
    if (shape->size() == depth) {
      IP_CHECK(leaves->empty(), kInvalidArgument, "[", op, "] ragged nested list used as an index");
      shape->push_back(static_cast<int64_t>(v.items.size()));
    } else {
      IP_CHECK(depth < shape->size() && (*shape)[depth] == static_cast<int64_t>(v.items.size()),
               kInvalidArgument, "[", op, "] ragged nested list used as an index");
    }
    for (const Value& x : v.items) collect_leaves(x, depth + 1, shape, leaves, op);
    return;
  }
  IP_CHECK(depth == shape->size(), kInvalidArgument, "[", op,
           "] ragged nested list used as an index");
  IP_CHECK(v.is_number() || (v.is_tensor() && v.tensor.numel() == 1), kInvalidArgument, "[", op,
           "] a list used as an index holds a ", v.kind_name());
  leaves->push_back(v);
}

Tensor sequence_to_tensor(const Value& v, const char* op) {
  Shape shape;
  std::vector<Value> leaves;
  collect_leaves(v, 0, &shape, &leaves, op);
  bool all_bool = !leaves.empty();
  for (const Value& x : leaves)
    all_bool &= x.kind == Value::Kind::kBool || (x.is_tensor() && x.tensor.dtype() == DType::kBool);
  Tensor t = Tensor::empty(shape, all_bool ? DType::kBool : DType::kInt64);
  for (size_t i = 0; i < leaves.size(); ++i) {
    Scalar s = leaves[i].as_scalar(op);
    if (all_bool)
      t.data<bool>()[i] = s.to_bool();
    else
      t.data<int64_t>()[i] = s.to_int();
  }
  return t;
}

std::optional<int64_t> slice_bound(const Value& v, bool* dynamic, const char* op) {
  if (v.is_none()) return std::nullopt;
  if (v.is_node() || (v.is_tensor() && v.tensor.is_meta())) {
    *dynamic = true;
    return std::nullopt;
  }
  IP_CHECK(v.kind == Value::Kind::kInt || v.kind == Value::Kind::kBool ||
               (v.is_tensor() && v.tensor.numel() == 1 && !is_floating(v.tensor.dtype())),
           kInvalidArgument, "[", op, "] slice indices must be integers or None, got ",
           v.kind_name());
  return v.as_int(op);
}

IndexEntry entry_from(const Value& written, const char* op) {
  IndexEntry e;
  e.raw = written;
  Value v = written;
  if (v.is_node()) {
    const Meta& meta = v.node->meta;
    if (!meta.dtype) {  // a Python int produced at run time (e.g. a sym size)
      e.kind = Kind::kInt;
      e.dynamic = true;
      return e;
    }
    v = Value::from_tensor(Tensor::meta(meta.shape.value_or(Shape{}), *meta.dtype));
  }
  switch (v.kind) {
    case Value::Kind::kInt:
      e.kind = Kind::kInt;
      e.index = v.i;
      return e;
    case Value::Kind::kBool:
      e.kind = Kind::kBool;
      e.flag = v.b;
      return e;
    case Value::Kind::kNone:
      e.kind = Kind::kNone;
      return e;
    case Value::Kind::kEllipsis:
      e.kind = Kind::kEllipsis;
      return e;
    case Value::Kind::kSlice: {
      e.kind = Kind::kSlice;
      e.start = slice_bound(v.items[0], &e.dynamic, op);
      e.stop = slice_bound(v.items[1], &e.dynamic, op);
      std::optional<int64_t> step = slice_bound(v.items[2], &e.dynamic, op);
      e.step = step.value_or(1);
      IP_CHECK(e.step > 0 || e.dynamic, kInvalidArgument, "[", op,
               "] step must be greater than zero, got ", e.step);
      return e;
    }
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      e.kind = Kind::kTensor;
      e.tensor = sequence_to_tensor(v, op);
      return e;
    }
    case Value::Kind::kTensor: {
      const Tensor& t = v.tensor;
      const bool mask = is_mask_dtype(t.dtype());
      IP_CHECK(mask || is_index_dtype(t.dtype()), kDTypeMismatch, "[", op,
               "] tensors used as indices must be long, int, byte or bool tensors, got ",
               dtype_name(t.dtype()));
      if (t.dim() == 0) {
        // torch: a 0-dim integer tensor selects like an int; a 0-dim bool acts like a bool.
        e.kind = mask ? Kind::kBool : Kind::kInt;
        e.tensor = t;
        e.dynamic = t.is_meta();
        if (!t.is_meta()) {
          if (mask)
            e.flag = t.item().to_bool();
          else
            e.index = t.item().to_int();
        }
        return e;
      }
      e.kind = Kind::kTensor;
      e.tensor = t;
      return e;
    }
    default:
      IP_FAIL(kInvalidArgument, "[", op,
              "] only integers, slices (`:`), ellipsis (`...`), None and long or byte tensors "
              "are valid indices (got ",
              v.kind_name(), ")");
  }
}

}  // namespace

std::vector<Value> index_elements(const Value& index) {
  return list_reads_as_tuple(index) ? index.items : std::vector<Value>{index};
}

Tensor index_tensor_from_list(const Value& list, const char* op) {
  return sequence_to_tensor(list, op);
}

SliceIndices python_slice_indices(std::optional<int64_t> start, std::optional<int64_t> stop,
                                  int64_t step, int64_t n) {
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + n : *v;
    return step > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
  };
  return {clamp(start, step > 0 ? 0 : n - 1), clamp(stop, step > 0 ? n : -1), step};
}

IndexSpec parse_index(const Value& index, int64_t self_dim, const char* op) {
  IndexSpec spec;
  for (const Value& v : index_elements(index)) spec.entries.push_back(entry_from(v, op));
  int64_t specified = 0, ellipses = 0;
  for (const IndexEntry& e : spec.entries) {
    if (e.kind == Kind::kTensor) {
      specified += is_mask_dtype(e.tensor.dtype()) ? e.tensor.dim() : 1;
    } else if (e.kind == Kind::kInt || e.kind == Kind::kSlice) {
      ++specified;
    } else if (e.kind == Kind::kEllipsis) {
      ++ellipses;
    }
  }
  IP_CHECK(ellipses <= 1, kInvalidArgument, "[", op, "] an index can only have a single ellipsis");
  IP_CHECK(specified <= self_dim, kOutOfRange, "[", op,
           "] too many indices for tensor of dimension ", self_dim, " (got ", specified, ")");
  int64_t sdim = 0, vdim = 0;
  for (IndexEntry& e : spec.entries) {
    e.view_dim = vdim;
    switch (e.kind) {
      case Kind::kInt:
        e.self_dim = sdim++;
        e.span = 1;
        break;
      case Kind::kSlice:
        e.self_dim = sdim++;
        e.span = 1;
        ++vdim;
        break;
      case Kind::kNone:
      case Kind::kBool:
        ++vdim;
        break;
      case Kind::kEllipsis:
        e.self_dim = sdim;
        e.span = self_dim - specified;
        sdim += e.span;
        vdim += e.span;
        break;
      case Kind::kTensor:
        e.self_dim = sdim;
        e.span = is_mask_dtype(e.tensor.dtype()) ? e.tensor.dim() : 1;
        sdim += e.span;
        vdim += e.span;
        break;
    }
  }
  return spec;
}

BasicIndexed apply_basic_index(const Tensor& self, const IndexSpec& spec, const char* op) {
  BasicIndexed r;
  r.view = self;
  for (int64_t d = 0; d < self.dim(); ++d) r.self_dims.push_back(d);
  bool started = false;
  auto record = [&](Tensor t, int64_t view_dim) {
    if (!started) r.indices.resize(static_cast<size_t>(view_dim));
    started = true;
    r.indices.push_back(std::move(t));
  };
  for (const IndexEntry& e : spec.entries) {
    const int64_t vd = e.view_dim;
    switch (e.kind) {
      case Kind::kInt: {
        IP_CHECK(r.view.dim() > 0, kInvalidArgument, "[", op,
                 "] invalid index of a 0-dim tensor; use tensor.item()");
        const int64_t size = r.view.shape()[vd];
        int64_t i = e.index;
        IP_CHECK(!e.dynamic || self.is_meta(), kInvalidArgument, "[", op,
                 "] an index is only known at run time: ", e.raw.to_string());
        if (e.tensor.defined() && !e.dynamic) i = e.tensor.item().to_int();
        if (!e.dynamic)
          i = wrap_index(i, size, e.self_dim, op);
        else
          i = 0;  // shape work on metas: any index gives the same shape
        r.view = r.view.select(vd, i);
        r.self_dims.erase(r.self_dims.begin() + vd);
        break;
      }
      case Kind::kSlice:
        IP_CHECK(!e.dynamic, kInvalidArgument, "[", op,
                 "] a slice bound is only known at run time: ", e.raw.to_string());
        r.view = r.view.slice(vd, e.start, e.stop, e.step);
        if (started) r.indices.emplace_back();
        break;
      case Kind::kNone:
        r.view = r.view.unsqueeze(vd);
        r.self_dims.insert(r.self_dims.begin() + vd, -1);
        if (started) r.indices.emplace_back();
        break;
      case Kind::kEllipsis:
        if (started) r.indices.resize(r.indices.size() + static_cast<size_t>(e.span));
        break;
      case Kind::kBool: {
        IP_CHECK(!e.dynamic || self.is_meta(), kUnsupported, "[", op,
                 "] a 0-dim boolean index gives a data-dependent shape");
        bool flag = e.tensor.defined() && !e.dynamic ? e.tensor.item().to_bool() : e.flag;
        r.view = r.view.unsqueeze(vd);
        r.self_dims.insert(r.self_dims.begin() + vd, -1);
        // True indexes the new dim as [0] (keeps it), False as [] (empties it).
        Tensor t = Tensor::empty({flag ? 1 : 0}, DType::kInt64);
        record(t, vd);
        break;
      }
      case Kind::kTensor:
        record(e.tensor, vd);
        break;
    }
  }
  return r;
}

PlannedIndex plan_tensor_index(const Tensor& self, const Value& index, const char* op) {
  PlannedIndex p;
  IndexSpec spec = parse_index(index, self.dim(), op);
  p.basic = apply_basic_index(self, spec, op);
  if (p.basic.indices.empty()) return p;
  const Shape& vs = p.basic.view.shape();
  std::vector<Tensor> expanded = expand_index_masks(vs, p.basic.indices, op);
  p.ai = plan_advanced_index(vs, expanded, op, &p.basic.self_dims);
  return p;
}

Tensor getitem_tensor(const Tensor& self, const Value& index) {
  PlannedIndex p = plan_tensor_index(self, index, "getitem");
  if (p.basic.indices.empty()) return p.basic.view;
  IP_CHECK(self.is_meta(), kInternal,
           "[getitem] an advanced index of a tensor's data is gathered by the cpu kernel "
           "(eager_call), not by the op's view function");
  return Tensor::meta(p.ai.result_shape, self.dtype());
}

Tensor setitem_value(const Tensor& self, const PlannedIndex& p, const Tensor& value) {
  // torch drops the value's leading size-1 dims before broadcasting (x[0] = v of shape [1, n]).
  Shape vs = value.shape();
  size_t lead = 0;
  while (lead < vs.size() && vs[lead] == 1) ++lead;
  Tensor v = lead ? value.view(Shape(vs.begin() + static_cast<long>(lead), vs.end())) : value;
  if (p.basic.indices.empty()) {
    const Tensor& dst = p.basic.view;
    bool fits = v.dim() <= dst.dim();
    for (int64_t i = 1; fits && i <= v.dim(); ++i) {
      int64_t s = v.shape()[v.dim() - i], d = dst.shape()[dst.dim() - i];
      fits = s == d || s == 1;
    }
    IP_CHECK(fits, kShapeMismatch, "[setitem] value of shape ", shape_str(value.shape()),
             " cannot be broadcast to the indexed shape ", shape_str(dst.shape()), " of self ",
             shape_str(self.shape()));
  }
  return v;
}

}  // namespace inplace
