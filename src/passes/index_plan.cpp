#include "passes/index_plan.h"

#include <deque>

#include "ops/index_spec.h"

namespace inplace {

namespace {

using K = Value::Kind;

bool is_full_slice(const Value& s) {
  const Value& step = s.items[2];
  return s.items[0].is_none() && s.items[1].is_none() &&
         (step.is_none() || (step.kind == K::kInt && step.i == 1));
}

// A list literal as an index tensor, read as getitem reads it (ops/index_spec.h): bools make a
// mask, ints an int64 index. Only lists of numbers are planned.
Value list_to_tensor(const Value& list, std::string* unsupported) {
  bool numbers = !list.items.empty();
  for (const Value& v : list.items) numbers &= v.kind == K::kBool || v.kind == K::kInt;
  if (!numbers) {
    *unsupported = "a list index must hold only ints or only bools";
    return Value::none();
  }
  return Value::from_tensor(index_tensor_from_list(list, "setitem"));
}

struct Elem {
  enum class Kind { kInt, kSlice, kNone, kEllipsis, kTensor } kind;
  Value value;
  int64_t dims = 1;
};

}  // namespace

IndexPlan plan_index(const Value& index, const ClassifyIndex& classify,
                     std::optional<int64_t> self_ndim) {
  IndexPlan plan;
  // The elements as torch splits the index (ops/index_spec.h: a tuple, or a list that reads
  // as one); each is then planned as a view step or an advanced index.
  std::vector<Value> raw = index_elements(index);
  std::vector<Elem> elems;
  for (const Value& v : raw) {
    Elem e{Elem::Kind::kTensor, v, 1};
    switch (v.kind) {
      case K::kInt:
        e.kind = Elem::Kind::kInt;
        break;
      case K::kSlice:
        e.kind = Elem::Kind::kSlice;
        break;
      case K::kNone:
        e.kind = Elem::Kind::kNone;
        break;
      case K::kEllipsis:
        e.kind = Elem::Kind::kEllipsis;
        break;
      case K::kNode: {
        IndexElem c = classify(v);
        if (c.kind == IndexElem::Kind::kInt) e.kind = Elem::Kind::kInt;
        e.dims = c.dims;
        break;
      }
      case K::kTensor: {
        const Tensor& t = v.tensor;
        if (t.dim() == 0 && is_integral(t.dtype(), false) && t.dtype() != DType::kUInt8)
          e.kind = Elem::Kind::kInt;  // torch selects with a 0-d integer tensor
        else
          e.dims = is_bool(t.dtype()) || t.dtype() == DType::kUInt8 ? t.dim() : 1;
        break;
      }
      case K::kList:
        e.value = list_to_tensor(v, &plan.unsupported);
        if (!plan.unsupported.empty()) return plan;
        e.dims = 1;
        break;
      default:
        plan.unsupported =
            str_cat("index element ", v.to_string(), " (", v.kind_name(), ") is not supported");
        return plan;
    }
    elems.push_back(std::move(e));
  }
  size_t ellipsis = elems.size();
  for (size_t i = 0; i < elems.size(); ++i) {
    if (elems[i].kind != Elem::Kind::kEllipsis) continue;
    if (ellipsis != elems.size()) {
      plan.unsupported = "an index can only have a single ellipsis";
      return plan;
    }
    ellipsis = i;
  }

  auto slice_step = [](int64_t dim, const Value& s) {
    return ViewStep::make(ViewStep::Kind::kSlice,
                          {Value::integer(dim), s.items[0], s.items[1], s.items[2]});
  };
  // Before the ellipsis: dims counted from the front.
  std::vector<Value> head;
  int64_t head_dims = 0, d = 0, selects = 0, nones = 0;
  bool any_tensor = false;
  for (size_t i = 0; i < ellipsis; ++i) {
    const Elem& e = elems[i];
    switch (e.kind) {
      case Elem::Kind::kInt:
        plan.steps.push_back(ViewStep::make(ViewStep::Kind::kSelect, {Value::integer(d), e.value}));
        ++selects;
        break;
      case Elem::Kind::kSlice:
        if (!is_full_slice(e.value)) plan.steps.push_back(slice_step(d, e.value));
        head.push_back(Value::none());
        ++d, ++head_dims;
        break;
      case Elem::Kind::kNone:
        plan.steps.push_back(ViewStep::make(ViewStep::Kind::kUnsqueeze, {Value::integer(d)}));
        head.push_back(Value::none());
        ++d, ++head_dims, ++nones;
        break;
      case Elem::Kind::kTensor:
        head.push_back(e.value);
        d += e.dims, head_dims += e.dims;
        any_tensor = true;
        break;
      case Elem::Kind::kEllipsis:
        break;
    }
  }
  // After the ellipsis: dims counted from the back, right to left.
  std::deque<Value> tail;
  int64_t tail_dims = 0, p = -1;
  bool tail_tensor = false;
  for (size_t i = elems.size(); i-- > ellipsis + 1;) {
    const Elem& e = elems[i];
    switch (e.kind) {
      case Elem::Kind::kInt:
        plan.steps.push_back(ViewStep::make(ViewStep::Kind::kSelect, {Value::integer(p), e.value}));
        ++selects;
        break;
      case Elem::Kind::kSlice:
        if (!is_full_slice(e.value)) plan.steps.push_back(slice_step(p, e.value));
        tail.push_front(Value::none());
        --p, ++tail_dims;
        break;
      case Elem::Kind::kNone:
        plan.steps.push_back(ViewStep::make(ViewStep::Kind::kUnsqueeze, {Value::integer(p)}));
        tail.push_front(Value::none());
        --p, ++tail_dims, ++nones;
        break;
      case Elem::Kind::kTensor:
        tail.push_front(e.value);
        p -= e.dims, tail_dims += e.dims;
        tail_tensor = true;
        break;
      case Elem::Kind::kEllipsis:
        break;
    }
  }
  if (!any_tensor && !tail_tensor) return plan;
  if (!tail_tensor) {
    while (!head.empty() && head.back().is_none()) head.pop_back();
    plan.advanced = std::move(head);
    return plan;
  }
  if (!self_ndim) {
    plan.unsupported = "a tensor index after an ellipsis needs the tensor's rank (shape meta)";
    return plan;
  }
  int64_t ndim = *self_ndim - selects + nones;
  int64_t middle = ndim - head_dims - tail_dims;
  if (middle < 0) {
    plan.unsupported = str_cat("too many indices for a tensor of rank ", *self_ndim);
    return plan;
  }
  plan.advanced = std::move(head);
  for (int64_t i = 0; i < middle; ++i) plan.advanced.push_back(Value::none());
  for (Value& v : tail) plan.advanced.push_back(std::move(v));
  return plan;
}

}  // namespace inplace
