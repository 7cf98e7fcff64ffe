#include "passes/alias_model.h"

#include <algorithm>

namespace inplace {

namespace {
const AliasInfo kOtherInfo;

bool returns_sequence(const OpDef& op) {
  return op.schema.returns.size() > 1 ||
         (op.schema.returns.size() == 1 && op.schema.returns[0].type == "Tensor[]");
}
}  // namespace

const AliasInfo& AliasTracker::info(const Node* n) const {
  auto it = info_.find(n);
  return it == info_.end() ? kOtherInfo : it->second;
}

const ResolvedCall& AliasTracker::call(const Node* n) const {
  auto it = calls_.find(n);
  IP_ASSERT(it != calls_.end(), "call node '" + n->name + "' was recorded");
  return it->second;
}

bool AliasTracker::is_whole(const Node* n) const {
  for (;;) {  // a loop: views of views are as deep as the program is long
    const AliasInfo& a = info(n);
    if (a.kind == AliasInfo::Kind::kRoot) return true;
    if (a.kind != AliasInfo::Kind::kView || a.base == nullptr) return false;
    for (const ViewStep& s : a.steps)
      if (s.kind != ViewStep::Kind::kIdentity) return false;
    n = a.base;
  }
}

AliasInfo AliasTracker::alias_of(Node* target, int parent_arg) const {
  // x = x.add_(1), repeated: each result aliases the chain's first value directly, so that no
  // walk over aliases (writes, reads of current values) is deeper than one link.
  const AliasInfo& t = info(target);
  bool identity = t.kind == AliasInfo::Kind::kView && t.parent == t.base && !t.absolute &&
                  t.no_inverse.empty() &&
                  std::all_of(t.steps.begin(), t.steps.end(), [](const ViewStep& s) {
                    return s.kind == ViewStep::Kind::kIdentity;
                  });
  Node* to = identity ? t.parent : target;
  return view_of(to, parent_arg, to, {ViewStep::identity()}, "");
}

int AliasTracker::new_root(Root::Kind kind, std::string name, Node* origin) {
  roots_.push_back(Root{kind, std::move(name), origin});
  return static_cast<int>(roots_.size()) - 1;
}

AliasInfo AliasTracker::view_of(Node* parent, int parent_arg, Node* base,
                                std::vector<ViewStep> steps, std::string no_inverse) const {
  AliasInfo a;
  a.kind = AliasInfo::Kind::kView;
  a.root = info(base).root;
  a.parent = parent;
  a.parent_arg = parent_arg;
  a.base = base;
  a.steps = std::move(steps);
  a.no_inverse = std::move(no_inverse);
  return a;
}

void AliasTracker::record(Node* node) {
  switch (node->op) {
    case NodeOp::kPlaceholder: {
      AliasInfo a;
      a.kind = AliasInfo::Kind::kRoot;
      a.root = new_root(Root::Kind::kInput, node->name, node);
      info_[node] = a;
      return;
    }
    case NodeOp::kGetAttr: {
      auto it = buffers_.find(node->target);
      if (it != buffers_.end()) {
        info_[node] = view_of(it->second, 0, it->second, {ViewStep::identity()}, "");
        return;
      }
      buffers_[node->target] = node;
      AliasInfo a;
      a.kind = AliasInfo::Kind::kRoot;
      a.root = new_root(Root::Kind::kBuffer, node->target, node);
      info_[node] = a;
      return;
    }
    case NodeOp::kCallFunction:
    case NodeOp::kCallMethod:
      record_call(node);
      return;
    case NodeOp::kOutput:
      return;
  }
}

void AliasTracker::record_call(Node* node) {
  ResolvedCall& rc = calls_[node] = resolve_node(*node);
  const OpDef& op = *rc.op;
  auto fresh = [&] {
    AliasInfo a;
    if (returns_tensor(op) && op.schema.returns.size() == 1) {
      a.kind = AliasInfo::Kind::kRoot;
      a.root = new_root(Root::Kind::kIntermediate, node->name, node);
    } else {
      a.is_sequence = returns_sequence(op);
    }
    info_[node] = a;
  };
  auto tracked = [&](const Value& v) { return v.is_node() && info(v.node).root >= 0; };

  if (op.kind == OpKind::kMutating) {
    int a = op.schema.returns.size() == 1 ? op.schema.aliased_arg_of_return(0) : -1;
    if (a >= 0 && tracked(rc.args[a])) {
      info_[node] = alias_of(rc.args[a].node, a);
    } else if (a >= 0 || op.schema.returns.empty()) {
      info_[node] = AliasInfo{};
    } else {
      fresh();
    }
    return;
  }

  // getitem on a list or tuple: a piece of a split, or an element of a fresh tuple.
  if (op.schema.name == "getitem" && rc.args.size() == 2 && rc.args[0].is_node()) {
    Node* seq = rc.args[0].node;
    const AliasInfo& s = info(seq);
    if (s.kind == AliasInfo::Kind::kContainer) {
      std::vector<ViewStep> steps;
      std::string why = s.no_inverse;
      if (rc.args[1].kind != Value::Kind::kInt)
        why = "the piece index is not a constant int";
      else if (why.empty())
        piece_steps(s.container, rc.args[1].i, &steps, &why);
      info_[node] = view_of(seq, 0, s.parent, std::move(steps), why);
      return;
    }
    if (s.is_sequence) {
      if (rc.args[1].kind != Value::Kind::kInt) {
        info_[node] = AliasInfo{};
        return;
      }
      auto key = std::make_pair(static_cast<const Node*>(seq), rc.args[1].i);
      auto it = elements_.find(key);
      if (it != elements_.end()) {
        info_[node] = view_of(it->second, 0, it->second, {ViewStep::identity()}, "");
      } else {
        elements_[key] = node;
        AliasInfo a;
        a.kind = AliasInfo::Kind::kRoot;
        a.root = new_root(Root::Kind::kIntermediate, node->name, node);
        info_[node] = a;
      }
      return;
    }
  }

  ViewRule rule = view_rule(*node, op, rc.args, metas_);
  static const Value kNoValue;
  const Value& parent_value =
      rule.parent_arg < static_cast<int>(rc.args.size()) ? rc.args[rule.parent_arg] : kNoValue;
  if ((rule.kind == ViewRule::Kind::kView || rule.kind == ViewRule::Kind::kContainer) &&
      tracked(parent_value)) {
    Node* parent = parent_value.node;
    if (rule.kind == ViewRule::Kind::kContainer) {
      AliasInfo a;
      a.kind = AliasInfo::Kind::kContainer;
      a.root = info(parent).root;
      a.parent = parent;
      a.parent_arg = rule.parent_arg;
      a.base = parent;
      a.no_inverse = rule.no_inverse;
      a.container = rule;
      info_[node] = a;
      return;
    }
    Node* base = parent;
    std::string why = rule.no_inverse;
    if (rule.absolute) {
      // as_strided addresses the root's storage directly, whatever view it is called on.
      base = roots_[info(parent).root].origin;
      if (!rule.steps.empty() && rule.steps[0].params[2].is_none() && !is_whole(parent))
        why = "as_strided of a view needs the view's storage offset (give shapes in node meta)";
    }
    info_[node] = view_of(parent, rule.parent_arg, base, rule.steps, why);
    info_[node].absolute = rule.absolute;
    return;
  }
  fresh();
}

}  // namespace inplace
