#include "passes/position_trace.h"

#include "passes/op_info.h"

namespace inplace {

namespace {

bool int64_numel(const MetaTable& metas, const Node* n, int64_t numel) {
  const Tensor* t = metas.tensor(n);
  return t && t->dtype() == DType::kInt64 && t->numel() == numel;
}

const Value* bound_arg(const ResolvedCall& rc, const char* name) {
  int i = rc.op->schema.index_of(name);
  return i < 0 || static_cast<size_t>(i) >= rc.args.size() ? nullptr : &rc.args[i];
}

bool int_value(const Value* v, int64_t* out) {
  if (!v || v->kind != Value::Kind::kInt) return false;
  *out = v->i;
  return true;
}

// add/sub with alpha 1 and one plain int operand: the node operand and the signed constant.
bool plus_constant(const ResolvedCall& rc, const std::string& name, Node** x, int64_t* c) {
  if (name != "add" && name != "sub") return false;
  const Value* alpha = bound_arg(rc, "alpha");
  if (alpha && !alpha->is_none() && !(alpha->kind == Value::Kind::kInt && alpha->i == 1))
    return false;
  const Value& a = rc.args[0];
  const Value& b = rc.args[1];
  if (a.is_node() && b.kind == Value::Kind::kInt) {
    *x = a.node;
    *c = name == "add" ? b.i : -b.i;
    return true;
  }
  if (name == "add" && b.is_node() && a.kind == Value::Kind::kInt) {
    *x = b.node;
    *c = a.i;
    return true;
  }
  return false;
}

// arange(n) / arange(start, end) / arange(start, end, 1) of int64: its start.
std::optional<int64_t> arange_start(const ResolvedCall& rc) {
  if (rc.op->schema.name != "arange") return std::nullopt;
  int64_t start = 0, step = 1;
  const Value* s = bound_arg(rc, "start");
  if (s && !int_value(s, &start)) return std::nullopt;
  const Value* st = bound_arg(rc, "step");
  if (st && !int_value(st, &step)) return std::nullopt;
  if (step != 1) return std::nullopt;
  return start;
}

bool holds_node(const Value& v) {
  if (v.is_node()) return true;
  for (const Value& item : v.items)
    if (holds_node(item)) return true;
  return false;
}

bool is_view_like(const std::string& name) {
  return name == "unsqueeze" || name == "view" || name == "reshape" || name == "squeeze" ||
         name == "expand" || name == "alias" || name == "clone" || name == "_unsafe_view" ||
         name == "contiguous" || name == "slice";
}

}  // namespace

std::optional<PositionValue> trace_position(const MetaTable& metas, Node* n) {
  int64_t offset = 0;
  for (int depth = 0; depth < 64; ++depth) {
    if (!int64_numel(metas, n, 1)) return std::nullopt;
    if (n->op == NodeOp::kPlaceholder) return PositionValue{n, offset};
    if (!n->is_call()) return std::nullopt;
    ResolvedCall rc = resolve_node(*n);
    const std::string& name = rc.op->schema.name;
    if (rc.args.empty()) return std::nullopt;
    const Value& a0 = rc.args[0];
    if (getitem_inserts_unit_dims_only(n)) {  // p[:, None]: the same single value
      n = a0.node;
      continue;
    }
    // A select or getitem of an input at a constant index is read as a runtime scalar.
    if ((name == "select" || name == "getitem") && a0.is_node() &&
        a0.node->op == NodeOp::kPlaceholder) {
      bool constant_index = true;
      for (size_t i = 1; i < rc.args.size(); ++i) constant_index &= !rc.args[i].is_node();
      if (!constant_index) return std::nullopt;
      return PositionValue{n, offset};
    }
    Node* x = nullptr;
    int64_t c = 0;
    if ((is_view_like(name) || name == "to" || name == "_to_copy") && a0.is_node()) {
      n = a0.node;  // same single value (n's dtype is int64, checked above)
      continue;
    }
    if (name == "copy" && rc.args.size() >= 2 && rc.args[1].is_node()) {
      n = rc.args[1].node;  // the functional copy is src broadcast into self's shape
      continue;
    }
    if (plus_constant(rc, name, &x, &c)) {
      offset += c;
      n = x;
      continue;
    }
    // arange(1) + p == p for a one-element result.
    if (name == "add" && rc.args.size() >= 2 && a0.is_node() && rc.args[1].is_node()) {
      const Value* alpha = bound_arg(rc, "alpha");
      if (alpha && !alpha->is_none() && !(alpha->kind == Value::Kind::kInt && alpha->i == 1))
        return std::nullopt;
      Node* other = nullptr;
      for (int side : {0, 1}) {
        Node* z = rc.args[side].node;
        if (!z->is_call() || !int64_numel(metas, z, 1)) continue;
        ResolvedCall zc = resolve_node(*z);
        std::optional<int64_t> s = arange_start(zc);
        if (s) {
          offset += *s;
          other = rc.args[1 - side].node;
          break;
        }
      }
      if (!other) return std::nullopt;
      n = other;
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

bool same_core(const Node* a, const Node* b) {
  if (a == b) return true;
  if (!a->is_call() || !b->is_call() || op_name(a) != op_name(b)) return false;
  ResolvedCall ra = resolve_node(*a), rb = resolve_node(*b);
  if (ra.op != rb.op || ra.args.size() != rb.args.size() || ra.args.empty()) return false;
  if (!ra.args[0].is_node() || !rb.args[0].is_node() || ra.args[0].node != rb.args[0].node)
    return false;
  for (size_t i = 1; i < ra.args.size(); ++i) {
    const Value &x = ra.args[i], &y = rb.args[i];
    if (x.kind != y.kind || x.is_node() || x.i != y.i || x.b != y.b || x.f != y.f ||
        !x.items.empty() || !y.items.empty())
      return false;
  }
  return true;
}

std::optional<int64_t> trace_key_index(const Graph& g, const MetaTable& metas, Node* n) {
  const Tensor* t0 = metas.tensor(n);
  if (!t0 || t0->dtype() != DType::kInt64 || t0->dim() < 1) return std::nullopt;
  const int64_t len = t0->size(-1);
  int64_t offset = 0;
  for (int depth = 0; depth < 64; ++depth) {
    const Tensor* t = metas.tensor(n);
    // Every value sits along the last dim, so views cannot reorder them.
    if (!t || t->dtype() != DType::kInt64 || t->dim() < 1 || t->size(-1) != len ||
        t->numel() != len)
      return std::nullopt;
    if (n->op == NodeOp::kGetAttr) {
      auto c = g.constants.find(n->target);
      if (c == g.constants.end() || c->second.is_meta() || c->second.numel() != len)
        return std::nullopt;
      Tensor v = c->second.contiguous();
      const int64_t* d = v.data<int64_t>();
      for (int64_t j = 0; j < len; ++j)
        if (d[j] != d[0] + j) return std::nullopt;
      return offset + (len ? d[0] : 0);
    }
    if (!n->is_call()) return std::nullopt;
    ResolvedCall rc = resolve_node(*n);
    const std::string& name = rc.op->schema.name;
    if (std::optional<int64_t> s = arange_start(rc)) return offset + *s;
    if (rc.args.empty()) return std::nullopt;
    Node* x = nullptr;
    int64_t c = 0;
    if ((is_view_like(name) || name == "to" || name == "_to_copy") && rc.args[0].is_node()) {
      n = rc.args[0].node;
      continue;
    }
    if (plus_constant(rc, name, &x, &c)) {
      offset += c;
      n = x;
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace inplace
