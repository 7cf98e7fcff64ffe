#include "passes/functionalizer.h"

#include <algorithm>

namespace inplace {

Functionalizer::Functionalizer(Graph& graph, const PassOptions& options)
    : graph_(graph), options_(options), metas_(infer_metas(graph, options)), tracker_(metas_) {}

void Functionalizer::run() {
  for (Node* n : graph_.nodes()) {
    cursor_ = n;
    em_ = std::make_unique<Emitter>(graph_, n);
    inferred_ = 0;
    process(n);
  }
  em_.reset();
  graph_.erase_all(erase_);
}

void Functionalizer::sync_roots() {
  while (static_cast<int>(roots_.size()) < tracker_.num_roots()) {
    RootState s;
    s.current = tracker_.root(static_cast<int>(roots_.size())).origin;
    roots_.push_back(s);
  }
}

Node* Functionalizer::emit(const std::string& target, std::vector<Value> args,
                           std::vector<std::pair<std::string, Value>> kwargs,
                           const std::string& hint) {
  return emitted(em_->call(target, std::move(args), std::move(kwargs), hint));
}

Node* Functionalizer::emitted(Node* n) {
  if (!em_->made(n) || metas_.has(n)) return n;
  // Every node emitted since the last call, in order: an inverse may emit helpers (a narrow's
  // wrapped start) before the node it returns. Never from the start again: a write through a
  // chain of views emits as many nodes as the chain is long.
  const std::vector<Node*>& emitted = em_->emitted();
  while (inferred_ < emitted.size()) {
    Node* e = emitted[inferred_++];
    if (!metas_.has(e)) {
      std::optional<Value> m = infer_node_meta(graph_, *e, metas_, options_);
      if (m) metas_.set(e, std::move(*m));
    }
    if (e == n) break;
  }
  return n;
}

Value Functionalizer::creation_value(const Node* user, const Value& v) const {
  Value out = v;
  auto it = seen_.find(user);
  if (it == seen_.end()) return out;
  for_each_node_mut(out, [&](Node*& r) {
    for (const auto& [orig, now] : it->second)
      if (orig == r) {
        r = now;
        return;
      }
  });
  return out;
}

Node* Functionalizer::replay(Node* orig, Node* parent_now) {
  const AliasInfo& a = tracker_.info(orig);
  std::vector<Value> args = orig->args;
  IP_ASSERT(a.parent_arg < static_cast<int>(args.size()) && args[a.parent_arg].is_node(),
            "view node '" + orig->name + "' holds its input positionally (run normalize first)");
  args[a.parent_arg] = ref(parent_now);
  std::string target = orig->target;
  // The parent's new value may be laid out differently: view's stride check no longer holds.
  if (target == "aten.view.default" || target == "aten._unsafe_view.default")
    target = "aten.reshape.default";
  if (target == "aten.view_as.default") target = "aten.reshape_as.default";
  return emit(target, std::move(args), orig->kwargs, orig->name);
}

Node* Functionalizer::up_to_date(Node* orig) {
  const AliasInfo& a = tracker_.info(orig);
  switch (a.kind) {
    case AliasInfo::Kind::kOther: {
      auto it = values_.find(orig);
      return it != values_.end() && it->second.current ? it->second.current : orig;
    }
    case AliasInfo::Kind::kRoot:
      return roots_[a.root].current;
    case AliasInfo::Kind::kView:
    case AliasInfo::Kind::kContainer:
      break;
  }
  auto it = values_.find(orig);
  if (it != values_.end() && it->second.current && it->second.version == roots_[a.root].version)
    return it->second.current;
  return nullptr;
}

bool Functionalizer::replays_on_root(const AliasInfo& a) {
  return a.absolute && a.steps[0].params[2].kind == Value::Kind::kInt;
}

Node* Functionalizer::current(Node* orig) {
  // Up the chain of views to the first value that is up to date, then each view replayed on
  // its parent's current value on the way back down. A loop, not recursion: a chain of views
  // is as deep as the program is long.
  std::vector<Node*> stale;
  Node* now = nullptr;
  for (Node* n = orig;;) {
    if ((now = up_to_date(n))) break;
    stale.push_back(n);
    const AliasInfo& a = tracker_.info(n);
    if (replays_on_root(a)) break;  // as_strided starts from the root, not its parent
    n = a.parent;
  }
  for (auto v = stale.rbegin(); v != stale.rend(); ++v) {
    Node* view = *v;
    const AliasInfo& a = tracker_.info(view);
    if (replays_on_root(a)) {
      // as_strided addresses its root's storage: replay it on the root's (contiguous) value.
      ViewStep s = a.steps[0];
      for (Value& p : s.params) p = creation_value(view, p);
      now = emitted(emit_forward(*em_, s, strided_base(a.base)));
    } else {
      bool identity = a.kind == AliasInfo::Kind::kView && a.parent == a.base &&
                      std::all_of(a.steps.begin(), a.steps.end(), [](const ViewStep& s) {
                        return s.kind == ViewStep::Kind::kIdentity;
                      });
      now = identity ? now : replay(view, now);
    }
    ValueState& st = values_[view];
    st.current = now;
    st.version = roots_[a.root].version;
  }
  return now;
}

Node* Functionalizer::strided_base(Node* root_origin) {
  // The root's value may now be a view of another tensor (an expand_as of a setitem value);
  // as_strided must address storage laid out as the root's own.
  Node* now = current(root_origin);
  if (now->op == NodeOp::kPlaceholder || now->op == NodeOp::kGetAttr) return now;
  if (now->is_call()) {
    const OpDef& op = *resolve_node(*now).op;
    bool fresh = op.kind == OpKind::kFunctional && !op.schema.is_view() &&
                 op.schema.name != "type_as" && op.schema.name != "_unsafe_view";
    if (fresh) return now;
  }
  return emit("aten.clone.default", {ref(now)});
}

void Functionalizer::rewrite_uses(Node* n) {
  auto& pairs = seen_[n];
  auto fix = [&](Node*& r) {
    Node* now = current(r);
    pairs.emplace_back(r, now);
    r = now;
  };
  for (Value& a : n->args) for_each_node_mut(a, fix);
  for (auto& kv : n->kwargs) for_each_node_mut(kv.second, fix);
}

void Functionalizer::write(Node* orig, Node* value) {
  // From the written view down to its root, scattering the value back one view at a time. A
  // loop, not recursion: a chain of views is as deep as the program is long.
  std::vector<std::pair<Node*, Node*>> views;  // each view written and the value it now holds
  for (;;) {
    const AliasInfo& a = tracker_.info(orig);
    if (a.kind == AliasInfo::Kind::kRoot) {
      RootState& r = roots_[a.root];
      r.current = value;
      ++r.version;
      if (em_->made(value) && !value->meta.attrs.count("modified_root")) {
        graph_.rename(value, graph_.unique_name(tracker_.root(a.root).name + "_modified"));
        value->meta.attrs["modified_root"] = tracker_.root(a.root).name;
      }
      for (auto [view, now] : views) {
        ValueState& st = values_[view];
        st.current = now;
        st.version = r.version;
      }
      return;
    }
    IP_CHECK(a.kind == AliasInfo::Kind::kView, kUnsupported, "[inplace_to_out_of_place] node '",
             cursor_->name, "' writes into '", orig->name,
             "', which is not a tensor whose storage the program can trace");
    IP_CHECK(a.no_inverse.empty(), kUnsupported, "[inplace_to_out_of_place] node '", cursor_->name,
             "' writes through the view '", orig->name, "': ", a.no_inverse);
    Node* base_now = current(a.base);
    std::vector<ViewStep> steps = a.steps;
    for (ViewStep& s : steps)
      for (Value& p : s.params) p = creation_value(a.parent, creation_value(orig, p));
    std::vector<Node*> chain = forward_chain(base_now, steps);
    views.emplace_back(orig, value);
    value = scatter_back(steps, chain, value, meta(a.base));
    orig = a.base;
  }
}

std::vector<Node*> Functionalizer::forward_chain(Node* base, const std::vector<ViewStep>& steps) {
  std::vector<Node*> chain{base};
  for (size_t i = 0; i + 1 < steps.size(); ++i)
    chain.push_back(emitted(emit_forward(*em_, steps[i], chain.back())));
  return chain;
}

Node* Functionalizer::scatter_back(const std::vector<ViewStep>& steps,
                                   const std::vector<Node*>& chain, Node* value,
                                   const Tensor* base_meta) {
  IP_ASSERT(chain.size() == std::max<size_t>(steps.size(), 1), "one base value per view step");
  // Shapes along the chain, where the base's is known.
  std::vector<std::optional<Tensor>> shapes;
  std::optional<Tensor> t = base_meta ? std::optional<Tensor>(*base_meta) : std::nullopt;
  for (size_t i = 0; i < steps.size(); ++i) {
    shapes.push_back(t);
    if (t) {
      try {
        t = apply_step(*t, steps[i]);
      } catch (const Error&) {
        t.reset();
      }
    }
  }
  Node* m = value;
  for (size_t i = steps.size(); i-- > 0;) {
    m = emitted(emit_inverse(*em_, steps[i], chain[i], m, shapes[i] ? &*shapes[i] : nullptr,
                             cursor_->name));
  }
  return m;
}

void Functionalizer::process(Node* n) {
  switch (n->op) {
    case NodeOp::kPlaceholder:
    case NodeOp::kGetAttr:
      tracker_.record(n);
      sync_roots();
      return;
    case NodeOp::kOutput:
      rewrite_uses(n);
      return;
    case NodeOp::kCallFunction:
    case NodeOp::kCallMethod:
      break;
  }
  tracker_.record(n);
  sync_roots();
  const ResolvedCall& orig_call = tracker_.call(n);
  const OpDef& op = *orig_call.op;
  if (op.kind != OpKind::kMutating) {
    rewrite_uses(n);
    const AliasInfo& a = tracker_.info(n);
    if (a.absolute && a.steps[0].params[2].kind == Value::Kind::kInt && n->args.size() > 3) {
      // as_strided on the root's current value, at the offset its input had: the input's
      // current value may be a fresh tensor that no longer shares the root's storage.
      n->args[a.parent_arg] = ref(strided_base(a.base));
      n->args[3] = a.steps[0].params[2];
    }
    if (a.kind == AliasInfo::Kind::kView || a.kind == AliasInfo::Kind::kContainer) {
      ValueState& st = values_[n];
      st.current = n;
      st.version = roots_[a.root].version;
      // Reading a newer value of the parent: it may be laid out differently.
      if (a.parent_arg < static_cast<int>(n->args.size()) && n->args[a.parent_arg].is_node() &&
          n->args[a.parent_arg].node != a.parent) {
        if (n->target == "aten.view.default" || n->target == "aten._unsafe_view.default")
          n->target = "aten.reshape.default";
        if (n->target == "aten.view_as.default") n->target = "aten.reshape_as.default";
      }
    }
    return;
  }
  FunctionalForm form = functional_form(*n, op);
  const Value& written = orig_call.args[form.mutated_arg];
  IP_CHECK(written.is_node() && tracker_.root_of(written.node) >= 0, kUnsupported,
           "[inplace_to_out_of_place] node '", n->name, "' writes into ", written.to_string(),
           ", which is not a tensor whose storage the program can trace");
  Node* target = written.node;
  rewrite_uses(n);
  ResolvedCall rc = resolve_node(*n);
  Node* target_now = rc.args[form.mutated_arg].node;
  Node* value = lower(n, form, rc, target_now);
  write(target, value);
  erase_.push_back(n);
}

std::optional<DType> Functionalizer::dtype_of_value(const Value& v) const {
  if (v.is_tensor()) return v.tensor.dtype();
  if (v.is_node())
    if (const Tensor* t = meta(v.node)) return t->dtype();
  return std::nullopt;
}

std::optional<Shape> Functionalizer::shape_of_value(const Value& v) const {
  if (v.is_tensor()) return v.tensor.shape();
  if (v.is_node())
    if (const Tensor* t = meta(v.node)) return t->shape();
  return std::nullopt;
}

}  // namespace inplace
