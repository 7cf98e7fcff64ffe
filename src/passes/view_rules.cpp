#include "passes/view_rules.h"

#include <cstring>

namespace inplace {

namespace {

using Kind = ViewRule::Kind;
using SK = ViewStep::Kind;

const Tensor* meta_of(const Value& v, const MetaTable& metas) {
  if (v.is_tensor()) return &v.tensor;
  if (v.is_node()) return metas.tensor(v.node);
  return nullptr;
}

bool name_in(const std::string& n, std::initializer_list<const char*> names) {
  for (const char* x : names)
    if (n == x) return true;
  return false;
}

// The op's result shape, worked out on a contiguous stand-in of the parent (so ops that would
// copy still give their shape).
std::optional<Tensor> result_on_contiguous(const OpDef& op, const Args& args, int parent_arg,
                                           const Tensor& parent, const MetaTable& metas) {
  Args subst(args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (!metas.substitute(args[i], &subst[i])) return std::nullopt;
  subst[parent_arg] = Value::from_tensor(Tensor::meta(parent.shape(), parent.dtype()));
  try {
    Value r = op.eager(subst);
    if (r.is_tensor()) return r.tensor;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The dtype a cast-like op converts to; nullopt: it keeps the dtype.
std::optional<DType> cast_target(const std::string& name, const Args& args, const OpDef& op,
                                 const MetaTable& metas, bool* unknown) {
  static const std::pair<const char*, DType> kMethods[] = {
      {"float", DType::kFloat32},     {"double", DType::kFloat64}, {"half", DType::kFloat16},
      {"bfloat16", DType::kBFloat16}, {"long", DType::kInt64},     {"int", DType::kInt32},
      {"short", DType::kInt16},       {"char", DType::kInt8},      {"byte", DType::kUInt8},
      {"bool", DType::kBool}};
  for (auto& [n, t] : kMethods)
    if (name == n) return t;
  for (size_t i = 1; i < args.size(); ++i) {
    const ArgSpec& spec = op.schema.args[i];
    if (spec.base_type() == "ScalarType" && !args[i].is_none()) {
      if (args[i].kind == Value::Kind::kDType) return args[i].dtype;
      if (args[i].kind == Value::Kind::kString) return dtype_from_name(args[i].s);
      *unknown = true;
      return std::nullopt;
    }
    if (spec.base_type() == "Tensor" && (name == "type_as" || name == "to")) {
      const Tensor* other = meta_of(args[i], metas);
      if (!other) {
        *unknown = true;
        return std::nullopt;
      }
      return other->dtype();
    }
  }
  return std::nullopt;
}

bool copy_flag(const OpDef& op, const Args& args) {
  int i = op.schema.index_of("copy");
  return i >= 0 && args[i].kind == Value::Kind::kBool && args[i].b;
}

ViewRule view(std::vector<ViewStep> steps) {
  ViewRule r;
  r.kind = Kind::kView;
  r.steps = std::move(steps);
  return r;
}

ViewRule copy(std::optional<Tensor> meta) {
  ViewRule r;
  r.kind = Kind::kCopy;
  r.result_meta = std::move(meta);
  return r;
}

}  // namespace

IndexElem classify_index_element(const Value& v, const MetaTable& metas) {
  IndexElem e;
  const Value* m = v.is_node() ? metas.find(v.node) : &v;
  if (!m) return e;  // unknown: assume a one-dim tensor index
  if (m->kind == Value::Kind::kInt || m->kind == Value::Kind::kBool) {
    e.kind = IndexElem::Kind::kInt;
    return e;
  }
  if (m->is_tensor()) {
    const Tensor& t = m->tensor;
    if (t.dtype() == DType::kBool || t.dtype() == DType::kUInt8) {
      e.kind = IndexElem::Kind::kBoolTensor;
      e.dims = t.dim();
    } else if (t.dim() == 0 && is_integral(t.dtype(), false)) {
      e.kind = IndexElem::Kind::kInt;
    }
  }
  return e;
}

ViewRule view_rule(const Node& node, const OpDef& op, const Args& args, const MetaTable& metas) {
  const std::string& n = op.schema.name;
  if (args.empty() || !(args[0].is_node() || args[0].is_tensor())) return {};
  // Views, and ops whose eager kernel returns a view sometimes (reshape when the strides
  // allow, contiguous and to when nothing changes; their engine form may copy). type_as and
  // _unsafe_view return views the same way though their schemas show no alias.
  bool may_alias =
      op.kind == OpKind::kView || op.schema.is_view() || n == "type_as" || n == "_unsafe_view";
  if (!may_alias) return {};
  const Tensor* pm = meta_of(args[0], metas);

  if (name_in(n, {"alias", "detach", "lift_fresh"})) return view({ViewStep::identity()});
  if (n == "contiguous") {
    if (pm && !pm->is_contiguous()) return copy(Tensor::meta(pm->shape(), pm->dtype()));
    return view({ViewStep::identity()});
  }
  if (name_in(n, {"to", "type", "type_as", "float", "double", "half", "bfloat16", "long", "int",
                  "short", "char", "byte", "bool"})) {
    bool unknown = false;
    std::optional<DType> target = cast_target(n, args, op, metas, &unknown);
    if (copy_flag(op, args) || unknown || (target && !pm))
      return copy(pm && target ? std::optional<Tensor>(Tensor::meta(pm->shape(), *target))
                               : std::nullopt);
    if (!target || *target == pm->dtype()) return view({ViewStep::identity()});
    return copy(Tensor::meta(pm->shape(), *target));
  }

  bool always_reshape = name_in(n, {"view", "_reshape_alias", "unflatten", "squeeze", "view_as"});
  bool maybe_reshape = name_in(n, {"reshape", "reshape_as", "flatten", "ravel", "_unsafe_view"});
  if ((always_reshape || maybe_reshape) && !(n == "view" && op.schema.index_of("dtype") >= 0)) {
    std::optional<Tensor> shaped =
        pm ? result_on_contiguous(op, args, 0, *pm, metas) : std::nullopt;
    if (maybe_reshape && pm && shaped) {
      try {
        Tensor v = pm->view(shaped->shape());
        return view({ViewStep::make(SK::kReshape, {Value::int_list(v.shape())})});
      } catch (const std::exception&) {
        return copy(Tensor::meta(shaped->shape(), pm->dtype()));
      }
    }
    ViewRule r = view({ViewStep::make(
        SK::kReshape, {shaped ? Value::int_list(shaped->shape()) : Value::none()})});
    return r;
  }
  if (name_in(n, {"expand", "expand_as"})) {
    std::optional<Tensor> shaped =
        pm ? result_on_contiguous(op, args, 0, *pm, metas) : std::nullopt;
    Value sizes =
        shaped ? Value::int_list(shaped->shape()) : (n == "expand" ? args[1] : Value::none());
    return view({ViewStep::make(SK::kExpand, {sizes})});
  }
  if (n == "unsqueeze") return view({ViewStep::make(SK::kUnsqueeze, {args[1]})});
  if (name_in(n, {"transpose", "swapaxes", "swapdims"}))
    return view({ViewStep::make(SK::kTranspose, {args[1], args[2]})});
  if (n == "t") return view({ViewStep::make(SK::kT, {})});
  if (n == "permute") return view({ViewStep::make(SK::kPermute, {args[1]})});
  if (name_in(n, {"movedim", "moveaxis"}))
    return view({ViewStep::make(SK::kMovedim, {args[1], args[2]})});
  if (n == "select") return view({ViewStep::make(SK::kSelect, {args[1], args[2]})});
  if (n == "slice") return view({ViewStep::make(SK::kSlice, {args[1], args[2], args[3], args[4]})});
  if (n == "narrow") {
    if (args[2].kind == Value::Kind::kInt && args[3].kind == Value::Kind::kInt)
      return view(
          {ViewStep::make(SK::kSlice, {args[1], args[2], Value::integer(args[2].i + args[3].i),
                                       Value::integer(1)})});
    if (args[3].kind == Value::Kind::kInt)
      return view({ViewStep::make(SK::kNarrow, {args[1], args[2], args[3]})});
    ViewRule r = view({});
    r.no_inverse = "narrow with a length that is not a constant int";
    return r;
  }
  if (n == "diagonal") return view({ViewStep::make(SK::kDiagonal, {args[1], args[2], args[3]})});
  if (n == "as_strided") {
    Value offset = args.size() > 3 ? args[3] : Value::none();
    if (offset.is_none() && pm) offset = Value::integer(pm->offset());
    ViewRule r = view({ViewStep::make(SK::kAsStrided, {args[1], args[2], offset})});
    r.absolute = true;
    return r;
  }
  if (n == "getitem") {
    std::optional<int64_t> ndim = pm ? std::optional<int64_t>(pm->dim()) : std::nullopt;
    IndexPlan plan = plan_index(
        args[1], [&](const Value& v) { return classify_index_element(v, metas); }, ndim);
    if (!plan.unsupported.empty() || plan.has_advanced()) return {};
    return view(std::move(plan.steps));
  }
  if (name_in(n, {"split", "split_with_sizes", "chunk", "unbind", "unsafe_split"})) {
    ViewRule r;
    r.kind = Kind::kContainer;
    if (n == "unbind") {
      r.split = ViewRule::Split::kUnbind;
      r.dim = args[1];
    } else {
      r.dim = args[2];
      if (n == "split_with_sizes" ||
          (args[1].is_sequence() && (n == "split" || n == "unsafe_split"))) {
        r.split = ViewRule::Split::kSplitWithSizes;
        try {
          r.sizes = args[1].as_int_list("split");
        } catch (const std::exception&) {
          r.split = ViewRule::Split::kUnknown;
        }
      } else if (args[1].kind == Value::Kind::kInt) {
        r.split = ViewRule::Split::kSplit;
        r.split_size = args[1].i;
        if (n == "chunk") {
          // Chunks hold ceil(size / chunks) elements: needs the dim's size.
          r.split = ViewRule::Split::kUnknown;
          if (pm && args[2].kind == Value::Kind::kInt && args[1].i > 0 && pm->dim() > 0) {
            int64_t size = pm->size(args[2].i);
            r.split = ViewRule::Split::kSplit;
            r.split_size = (size + args[1].i - 1) / args[1].i;
          }
        }
      }
    }
    return r;
  }
  if (may_alias) {
    ViewRule r;
    r.kind = op.schema.returns.size() == 1 && op.schema.returns[0].type == "Tensor"
                 ? Kind::kView
                 : Kind::kContainer;
    r.no_inverse = str_cat("the view op '", n, "' has no known inverse");
    return r;
  }
  (void)node;
  return {};
}

bool piece_steps(const ViewRule& c, int64_t k, std::vector<ViewStep>* steps, std::string* why) {
  using S = ViewRule::Split;
  steps->clear();
  switch (c.split) {
    case S::kUnbind:
      steps->push_back(ViewStep::make(SK::kSelect, {c.dim, Value::integer(k)}));
      return true;
    case S::kSplit:
      if (c.split_size < 0) break;  // 0: the chunks of an empty dim, all empty
      steps->push_back(
          ViewStep::make(SK::kSlice, {c.dim, Value::integer(k * c.split_size),
                                      Value::integer((k + 1) * c.split_size), Value::integer(1)}));
      return true;
    case S::kSplitWithSizes: {
      if (k < 0 || k >= static_cast<int64_t>(c.sizes.size())) break;
      int64_t start = 0;
      for (int64_t i = 0; i < k; ++i) start += c.sizes[i];
      steps->push_back(ViewStep::make(
          SK::kSlice,
          {c.dim, Value::integer(start), Value::integer(start + c.sizes[k]), Value::integer(1)}));
      return true;
    }
    case S::kUnknown:
      break;
  }
  *why = "the pieces of this split are not known statically (split sizes or the input's shape)";
  return false;
}

}  // namespace inplace
