#include "passes/view_steps.h"

#include <numeric>

namespace inplace {

const char* view_step_name(ViewStep::Kind k) {
  using K = ViewStep::Kind;
  switch (k) {
    case K::kIdentity:
      return "identity";
    case K::kSelect:
      return "select";
    case K::kSlice:
      return "slice";
    case K::kNarrow:
      return "narrow";
    case K::kUnsqueeze:
      return "unsqueeze";
    case K::kTranspose:
      return "transpose";
    case K::kT:
      return "t";
    case K::kPermute:
      return "permute";
    case K::kMovedim:
      return "movedim";
    case K::kDiagonal:
      return "diagonal";
    case K::kAsStrided:
      return "as_strided";
    case K::kReshape:
      return "reshape";
    case K::kExpand:
      return "expand";
  }
  return "?";
}

std::string ViewStep::to_string() const {
  std::string s = std::string(view_step_name(kind)) + "(";
  for (size_t i = 0; i < params.size(); ++i) s += (i ? ", " : "") + params[i].to_string();
  return s + ")";
}

namespace {

std::optional<int64_t> opt_int(const Value& v, const char* what) {
  if (v.is_none()) return std::nullopt;
  return v.as_int(what);
}

std::vector<int64_t> as_dims(const Value& v, const char* what) {
  return v.as_int_list(what);
}

// movedim(source, destination) as a permutation of `ndim` dims (torch's rule).
std::vector<int64_t> movedim_perm(std::vector<int64_t> src, std::vector<int64_t> dst,
                                  int64_t ndim) {
  IP_CHECK(src.size() == dst.size(), kInvalidArgument, "[movedim] source ", shape_str(src),
           " and destination ", shape_str(dst), " differ in length");
  for (auto& d : src) d = wrap_dim(d, ndim, "movedim");
  for (auto& d : dst) d = wrap_dim(d, ndim, "movedim");
  std::vector<int64_t> perm(ndim, -1);
  std::vector<bool> used_src(ndim, false);
  for (size_t i = 0; i < src.size(); ++i) {
    perm[dst[i]] = src[i];
    used_src[src[i]] = true;
  }
  int64_t next = 0;
  for (int64_t i = 0; i < ndim; ++i) {
    if (perm[i] != -1) continue;
    while (used_src[next]) ++next;
    perm[i] = next++;
  }
  return perm;
}

}  // namespace

Tensor apply_step(const Tensor& t, const ViewStep& s) {
  using K = ViewStep::Kind;
  const auto& p = s.params;
  switch (s.kind) {
    case K::kIdentity:
      return t;
    case K::kSelect:
      return t.select(p[0].as_int("select"), p[1].as_int("select"));
    case K::kSlice:
      return t.slice(p[0].as_int("slice"), opt_int(p[1], "slice"), opt_int(p[2], "slice"),
                     p[3].is_none() ? 1 : p[3].as_int("slice"));
    case K::kNarrow:
      return t.narrow(p[0].as_int("narrow"), p[1].as_int("narrow"), p[2].as_int("narrow"));
    case K::kUnsqueeze:
      return t.unsqueeze(p[0].as_int("unsqueeze"));
    case K::kTranspose:
      return t.transpose(p[0].as_int("transpose"), p[1].as_int("transpose"));
    case K::kT:
      return t.t();
    case K::kPermute:
      return t.permute(as_dims(p[0], "permute"));
    case K::kMovedim:
      return t.permute(movedim_perm(as_dims(p[0], "movedim"), as_dims(p[1], "movedim"), t.dim()));
    case K::kDiagonal:
      return t.diagonal(p[0].as_int("diagonal"), p[1].as_int("diagonal"), p[2].as_int("diagonal"));
    case K::kAsStrided:
      return t.as_strided(as_dims(p[0], "as_strided"), as_dims(p[1], "as_strided"),
                          opt_int(p[2], "as_strided"));
    case K::kReshape:
      return t.view(as_dims(p[0], "view"));
    case K::kExpand:
      return t.expand(as_dims(p[0], "expand"));
  }
  return t;
}

Node* emit_forward(Emitter& em, const ViewStep& s, Node* in) {
  using K = ViewStep::Kind;
  const auto& p = s.params;
  switch (s.kind) {
    case K::kIdentity:
      return in;
    case K::kSelect:
      return em.call("aten.select.int", {ref(in), p[0], p[1]});
    case K::kSlice:
      return em.call("aten.slice.Tensor",
                     {ref(in), p[0], p[1], p[2], p[3].is_none() ? Value::integer(1) : p[3]});
    case K::kNarrow:
      return em.call("aten.narrow.default", {ref(in), p[0], p[1], p[2]});
    case K::kUnsqueeze:
      return em.call("aten.unsqueeze.default", {ref(in), p[0]});
    case K::kTranspose:
      return em.call("aten.transpose.int", {ref(in), p[0], p[1]});
    case K::kT:
      return em.call("aten.t.default", {ref(in)});
    case K::kPermute:
      return em.call("aten.permute.default", {ref(in), p[0]});
    case K::kMovedim:
      return em.call("aten.movedim", {ref(in), p[0], p[1]});
    case K::kDiagonal:
      return em.call("aten.diagonal.default", {ref(in), p[0], p[1], p[2]});
    case K::kAsStrided:
      return em.call("aten.as_strided.default", {ref(in), p[0], p[1], p[2]});
    case K::kReshape:
      return em.call("aten.reshape.default", {ref(in), p[0]});
    case K::kExpand:
      return em.call("aten.expand.default", {ref(in), p[0]});
  }
  return in;
}

namespace {

Node* emit_reshape_back(Emitter& em, Node* base, Node* v, const Tensor* base_meta,
                        const std::string& where, const char* step) {
  if (has_op("reshape_as")) return em.call("aten.reshape_as.default", {ref(v), ref(base)});
  IP_CHECK(base_meta != nullptr, kUnsupported, "[inplace_to_out_of_place] node '", where,
           "' writes through '", step,
           "' of a tensor whose shape is unknown; give the inputs' shapes (node meta)");
  return em.call("aten.reshape.default", {ref(v), Value::int_list(base_meta->shape())});
}

}  // namespace

Node* emit_inverse(Emitter& em, const ViewStep& s, Node* base, Node* v, const Tensor* base_meta,
                   const std::string& where) {
  using K = ViewStep::Kind;
  const auto& p = s.params;
  switch (s.kind) {
    case K::kIdentity:
      return v;
    case K::kSelect:
      return em.call("aten.select_scatter.default", {ref(base), ref(v), p[0], p[1]});
    case K::kSlice:
      return em.call("aten.slice_scatter.default", {ref(base), ref(v), p[0], p[1], p[2],
                                                    p[3].is_none() ? Value::integer(1) : p[3]});
    case K::kNarrow: {
      // narrow wraps a negative start once (start in [-size, size]); slice bounds would wrap
      // start and end separately, so the start is wrapped first: start % size.
      IP_CHECK(base_meta != nullptr && p[0].kind == Value::Kind::kInt, kUnsupported,
               "[inplace_to_out_of_place] node '", where,
               "' writes through a narrow at a runtime start of a tensor whose shape is "
               "unknown; give the inputs' shapes (node meta)");
      int64_t size = base_meta->size(wrap_dim(p[0].i, base_meta->dim(), "narrow"));
      Value start = p[1];
      if (size > 0) start = ref(em.call("_operator.mod", {p[1], Value::integer(size)}));
      Node* end = em.call("_operator.add", {start, p[2]});
      return em.call("aten.slice_scatter.default",
                     {ref(base), ref(v), p[0], start, ref(end), Value::integer(1)});
    }
    case K::kUnsqueeze:
      return em.call("aten.squeeze.dim", {ref(v), p[0]});
    case K::kTranspose:
      return em.call("aten.transpose.int", {ref(v), p[0], p[1]});
    case K::kT:
      return em.call("aten.t.default", {ref(v)});
    case K::kPermute: {
      std::vector<int64_t> dims = p[0].as_int_list("permute");
      int64_t n = static_cast<int64_t>(dims.size());
      std::vector<int64_t> inverse(dims.size());
      for (int64_t i = 0; i < n; ++i) inverse[wrap_dim(dims[i], n, "permute")] = i;
      return em.call("aten.permute.default", {ref(v), Value::int_list(inverse)});
    }
    case K::kMovedim:
      return em.call("aten.movedim", {ref(v), p[1], p[0]});
    case K::kDiagonal:
      return em.call("aten.diagonal_scatter.default", {ref(base), ref(v), p[0], p[1], p[2]});
    case K::kAsStrided:
      return em.call("aten.as_strided_scatter.default", {ref(base), ref(v), p[0], p[1], p[2]});
    case K::kReshape:
      return emit_reshape_back(em, base, v, base_meta, where, "view");
    case K::kExpand: {
      if (base_meta) {
        Tensor expanded = base_meta->expand(p[0].as_int_list("expand"));
        IP_CHECK(expanded.numel() == base_meta->numel(), kUnsupported,
                 "[inplace_to_out_of_place] node '", where, "' writes through an expand of shape ",
                 shape_str(base_meta->shape()), " to ", shape_str(expanded.shape()),
                 ": several elements share one memory location (torch refuses this write)");
      }
      return emit_reshape_back(em, base, v, base_meta, where, "expand");
    }
  }
  return v;
}

}  // namespace inplace
