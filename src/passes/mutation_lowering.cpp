// The new value of what a mutating op writes, computed out of place (Functionalizer::lower).
#include "passes/functionalizer.h"
#include "passes/index_plan.h"

namespace inplace {

namespace {

bool is_comparison(const std::string& target) {
  static const char* const kNames[] = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                                       "logical_or", "logical_xor", "logical_not", "isnan",
                                       "isinf", "isfinite", "signbit"};
  for (const char* n : kNames)
    if (target == std::string("aten.") + n || target.rfind(std::string("aten.") + n + ".", 0) == 0)
      return true;
  return false;
}

Value as_value(Node* n) { return ref(n); }

}  // namespace

Node* Functionalizer::lower(Node* n, const FunctionalForm& form, const ResolvedCall& rc,
                            Node* target_now) {
  switch (form.kind) {
    case FunctionalForm::Kind::kTwin: return lower_twin(n, form, rc, target_now);
    case FunctionalForm::Kind::kCopy: return lower_copy(rc.args[1], target_now);
    case FunctionalForm::Kind::kFill: {
      Value fill = rc.op->schema.name == "zero_" ? Value::integer(0) : rc.args[1];
      return emit("aten.full_like.default", {ref(target_now), fill});
    }
    case FunctionalForm::Kind::kSetitem: return lower_setitem(n, rc, target_now);
  }
  return target_now;
}

Node* Functionalizer::lower_twin(Node* n, const FunctionalForm& form, const ResolvedCall& rc,
                                 Node* target_now) {
  const Schema& schema = rc.op->schema;
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
  for (size_t i = 0; i < schema.args.size(); ++i) {
    if (schema.args[i].kwarg_only)
      kwargs.emplace_back(schema.args[i].name, rc.args[i]);
    else
      args.push_back(rc.args[i]);
  }
  Node* v = emit(form.twin_target, std::move(args), std::move(kwargs));
  // An in-place op keeps the dtype of what it writes (x.ge_(y) stays float).
  std::optional<DType> have = dtype_of_value(as_value(v));
  const Tensor* like = meta(target_now);
  if (like && have) return *have == like->dtype() ? v : cast_to(v, like->dtype());
  if (like) return cast_to(v, like->dtype());
  if (is_comparison(form.twin_target)) return cast_like(v, target_now);
  (void)n;
  return v;
}

Node* Functionalizer::cast_to(Node* v, DType dtype) {
  if (has_op("_to_copy"))
    return emit("aten._to_copy.default", {ref(v)}, {{"dtype", Value::dtype_value(dtype)}});
  return emit("aten.to.dtype", {ref(v), Value::dtype_value(dtype)});
}

Node* Functionalizer::cast_like(Node* v, Node* like) {
  std::optional<DType> have = dtype_of_value(ref(v)), want = dtype_of_value(ref(like));
  if (have && want) return *have == *want ? v : cast_to(v, *want);
  if (want) return cast_to(v, *want);
  if (has_op("type_as")) return emit("aten.type_as.default", {ref(v), ref(like)});
  return v;
}

Node* Functionalizer::fit_value(const Value& value, Node* region) {
  if (value.is_number()) return emit("aten.full_like.default", {ref(region), value});
  IP_CHECK(value.is_node() || value.is_tensor(), kUnsupported, "[inplace_to_out_of_place] node '",
           cursor_->name, "' writes a ", value.kind_name(), " value; expected a tensor or number");
  Node* v = value.is_node() ? value.node : emit("aten.clone.default", {value});
  std::optional<DType> have = dtype_of_value(value);
  const Tensor* r = meta(region);
  v = cast_value(v, have, region);
  if (r) v = drop_leading_ones(v, r->dim());
  std::optional<Shape> shape = shape_of_value(ref(v));
  if (r && shape && *shape == r->shape()) return v;
  return emit("aten.expand_as.default", {ref(v), ref(region)});
}

Node* Functionalizer::cast_value(Node* v, std::optional<DType> have, Node* region) {
  // setitem casts the value to self's dtype; without dtypes, type_as (a no-op when equal).
  const Tensor* r = meta(region);
  if (r && have) return *have == r->dtype() ? v : cast_to(v, r->dtype());
  if (r) return cast_to(v, r->dtype());
  return emit("aten.type_as.default", {ref(v), ref(region)});
}

Node* Functionalizer::drop_leading_ones(Node* v, int64_t region_dim) {
  // setitem drops the value's leading size-1 dims before broadcasting (x[0] = v of [1, n]);
  // only a value with more dims than the region needs it.
  std::optional<Shape> shape = shape_of_value(ref(v));
  if (!shape || static_cast<int64_t>(shape->size()) <= region_dim) return v;
  size_t lead = 0;
  while (lead < shape->size() && (*shape)[lead] == 1) ++lead;
  if (lead == 0) return v;
  Shape stripped(shape->begin() + static_cast<long>(lead), shape->end());
  return emit("aten.reshape.default", {ref(v), Value::int_list(stripped)});
}

Node* Functionalizer::lower_copy(const Value& src, Node* target_now) {
  if (src.is_number()) return emit("aten.full_like.default", {ref(target_now), src});
  IP_CHECK(src.is_node() || src.is_tensor(), kUnsupported, "[inplace_to_out_of_place] node '",
           cursor_->name, "' copies from a ", src.kind_name(), "; expected a tensor");
  Node* s = src.is_node() ? src.node : emit("aten.clone.default", {src});
  std::optional<DType> have = dtype_of_value(src);
  const Tensor* t = meta(target_now);
  if (have && t && *have != t->dtype()) s = cast_to(s, t->dtype());
  Node* expanded = emit("aten.expand_as.default", {ref(s), ref(target_now)});
  return whole_update(target_now, expanded);
}

Node* Functionalizer::whole_update(Node* target_now, Node* value) {
  // The seed's form: a full slice_scatter makes a fresh tensor of target's dtype. A 0-d
  // tensor has no dim to slice, and without shapes the rank is unknown: aten.copy then.
  const Tensor* t = meta(target_now);
  if (t && t->dim() > 0)
    return emit("aten.slice_scatter.default", {ref(target_now), ref(value)});
  return emit("aten.copy.default", {ref(target_now), ref(value)});
}

Node* Functionalizer::lower_setitem(Node* n, const ResolvedCall& rc, Node* target_now) {
  const Value& index = rc.args[1];
  const Value& value = rc.args[2];
  const Tensor* self = meta(target_now);
  IndexPlan plan = plan_index(
      index, [&](const Value& v) { return classify_index_element(v, metas_); },
      self ? std::optional<int64_t>(self->dim()) : std::nullopt);
  IP_CHECK(plan.unsupported.empty(), kUnsupported, "[inplace_to_out_of_place] node '", n->name,
           "': ", plan.unsupported);
  if (plan.steps.empty() && !plan.has_advanced()) {
    // x[...] = v, x[:] = v: the whole tensor, as copy_ (but with setitem's broadcasting).
    Node* v = fit_value(value, target_now);
    return value.is_number() ? v : whole_update(target_now, v);
  }
  std::vector<Node*> chain = forward_chain(target_now, plan.steps);
  Node* region = plan.steps.empty()
                     ? target_now
                     : emitted(emit_forward(*em_, plan.steps.back(), chain.back()));
  Node* region_value = plan.has_advanced() ? lower_advanced(n, region, plan.advanced, value)
                                           : fit_value(value, region);
  if (plan.steps.empty()) return region_value;
  return scatter_back(plan.steps, chain, region_value, self);
}

Node* Functionalizer::lower_advanced(Node* n, Node* region, const std::vector<Value>& indices,
                                     const Value& value_in) {
  const Tensor* w = meta(region);
  Value value = value_in;
  if (value.is_tensor()) value = ref(emit("aten.clone.default", {value}));
  if (value.is_node()) value = ref(drop_leading_ones(value.node, 0));
  // A single bool mask: where() for a value that is the same at every selected position,
  // masked_scatter for one value per position (x[mask] = v with v of shape [count, ...]).
  if (w && indices.size() == 1 && (indices[0].is_node() || indices[0].is_tensor())) {
    const Tensor* mask = indices[0].is_tensor() ? &indices[0].tensor : meta(indices[0].node);
    std::optional<Shape> vs = value.is_number() ? std::optional<Shape>(Shape{})
                                                : shape_of_value(value);
    if (mask && mask->dtype() == DType::kBool && mask->dim() <= w->dim() && vs) {
      Shape rest(w->shape().begin() + mask->dim(), w->shape().end());
      Value mask_u = indices[0];
      if (mask->dim() < w->dim()) {
        Shape s = mask->shape();
        s.resize(w->dim(), 1);
        mask_u = ref(emit("aten.reshape.default", {indices[0], Value::int_list(s)}));
      }
      int64_t vd = static_cast<int64_t>(vs->size()), rd = static_cast<int64_t>(rest.size());
      // The value broadcasts against [count, *rest]; it is uniform when its count dim is 1.
      bool uniform = vd <= rd || (vd == rd + 1 && (*vs)[0] == 1);
      if (uniform) {
        Value v = value;
        if (!value.is_number()) {
          std::optional<DType> have = dtype_of_value(value);
          Node* vn = value.is_node() ? value.node : emit("aten.clone.default", {value});
          if (have && *have != w->dtype()) vn = cast_to(vn, w->dtype());
          v = ref(vn);
        }
        return cast_like(emit("aten.where.self", {mask_u, v, ref(region)}), region);
      }
      if (vd == rd + 1) {
        Node* vn = value.is_node() ? value.node : emit("aten.clone.default", {value});
        std::optional<DType> have = dtype_of_value(value);
        if (have && *have != w->dtype()) vn = cast_to(vn, w->dtype());
        Shape full{(*vs)[0]};
        full.insert(full.end(), rest.begin(), rest.end());
        if (*vs != full) vn = emit("aten.expand.default", {ref(vn), Value::int_list(full)});
        return emit("aten.masked_scatter.default", {ref(region), mask_u, ref(vn)});
      }
    }
  }
  Value v = value;
  if (value.is_number()) {
    Node* picked = emit("aten.index.Tensor", {ref(region), Value::list(indices)});
    v = ref(emit("aten.full_like.default", {ref(picked), value}));
  } else {
    IP_CHECK(value.is_node(), kUnsupported, "[inplace_to_out_of_place] node '", n->name,
             "' writes a ", value.kind_name(), " value; expected a tensor or number");
    v = ref(cast_value(value.node, dtype_of_value(value), region));
  }
  return emit("aten.index_put.default",
              {ref(region), Value::list(indices), v, Value::boolean(false)});
}

}  // namespace inplace
