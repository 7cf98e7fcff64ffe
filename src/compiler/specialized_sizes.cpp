#include "compiler/specialized_sizes.h"

#include <string>

#include "core/error.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

// The graph's values at two extents of every dynamic dim: the example's (as captured) and a
// probe one more; a dim of a value that differs between the two carries a dynamic dim.
struct TwoExtents {
  MetaTable at_example, at_probe;
};

const Tensor* meta_of(const MetaTable& t, const Value& v) {
  return v.is_node() ? t.tensor(v.node) : nullptr;
}

// The size list of a view/reshape/expand: its second argument, or the ints after self
// (x.view(1, 5, 2, 4)), made into one list argument so that entries can become nodes.
std::vector<Value>* size_list(Node& n) {
  if (n.args.size() == 2 && n.args[1].is_sequence()) return &n.args[1].items;
  if (n.args.size() < 2) return nullptr;
  std::vector<Value> sizes(n.args.begin() + 1, n.args.end());
  for (const Value& v : sizes)
    if (v.kind != Value::Kind::kInt) return nullptr;
  n.args.resize(1);
  n.args.push_back(Value::list(std::move(sizes)));
  return &n.args[1].items;
}

std::string sizes_str(const std::vector<Value>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i)
    s += (i ? ", " : "") + (sizes[i].is_node() ? sizes[i].node->name : std::to_string(sizes[i].i));
  return s + "]";
}

// Dims of `in` and entries of `out` (-1 resolved) that a view maps onto each other: runs of
// equal products, dims of size 1 left out. False when the products never meet.
struct Group {
  std::vector<size_t> in, out;
};
bool view_groups(const Shape& in, const std::vector<int64_t>& out, std::vector<Group>* groups) {
  std::vector<size_t> a, b;
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k] != 1) a.push_back(k);
  for (size_t j = 0; j < out.size(); ++j)
    if (out[j] != 1) b.push_back(j);
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    Group g{{a[i]}, {b[j]}};
    int64_t pi = in[a[i++]], pj = out[b[j++]];
    while (pi != pj) {
      if (pi < pj && i < a.size()) {
        pi *= in[a[i]];
        g.in.push_back(a[i++]);
      } else if (pj < pi && j < b.size()) {
        pj *= out[b[j]];
        g.out.push_back(b[j++]);
      } else {
        return false;
      }
    }
    groups->push_back(std::move(g));
  }
  return i == a.size() && j == b.size();
}

class Resymbolizer {
 public:
  Resymbolizer(Graph& graph, const PassOptions& options, bool refuse_unclear)
      : graph_(graph), options_(options), refuse_unclear_(refuse_unclear) {}

  void run(const std::vector<Tensor>& examples, const std::vector<DynamicDim>& dims) {
    std::vector<Node*> ph = graph_.placeholders();
    for (size_t i = 0; i < ph.size() && i < examples.size(); ++i) {
      Shape probe = examples[i].shape();
      for (const DynamicDim& d : dims)
        if (d.input == static_cast<int>(i) && d.dim >= 0 &&
            d.dim < static_cast<int64_t>(probe.size()) && probe[d.dim] > 1)
          probe[d.dim] += 1;
      t_.at_example.set(ph[i],
                        Value::from_tensor(Tensor::meta(examples[i].shape(), examples[i].dtype())));
      t_.at_probe.set(ph[i], Value::from_tensor(Tensor::meta(probe, examples[i].dtype())));
    }
    for (Node* n : graph_.nodes()) {
      if (n->op == NodeOp::kPlaceholder || n->op == NodeOp::kOutput) continue;
      if (n->is_call()) rewrite(*n);
      infer(*n);
    }
  }

 private:
  void infer(Node& n) {
    for (MetaTable* t : {&t_.at_example, &t_.at_probe}) {
      try {
        if (std::optional<Value> v = infer_node_meta(graph_, n, *t, options_)) t->set(&n, *v);
      } catch (const Error&) {
        // Unknown here: nodes reading it are left as written (the engine decides about them).
      }
    }
  }

  // sym_size(self, dim) [* factor], before `n`.
  Value extent(Node& n, Node* self, size_t dim, int64_t factor) {
    Node* size = graph_.insert_before(&n, NodeOp::kCallFunction, "aten.sym_size.int",
                                      {ref(self), Value::integer(static_cast<int64_t>(dim))}, {},
                                      "sym_size_int");
    infer(*size);
    if (factor == 1) return ref(size);
    Node* mul = graph_.insert_before(&n, NodeOp::kCallFunction, "_operator.mul",
                                     {ref(size), Value::integer(factor)}, {}, "mul");
    infer(*mul);
    return ref(mul);
  }

  void rewrite(Node& n) {
    const std::string op = op_name(&n);
    const bool expand = op == "expand";
    if (!(expand || op == "view" || op == "reshape" || op == "_unsafe_view") || n.args.empty())
      return;
    const Tensor* at_example = meta_of(t_.at_example, n.args[0]);
    const Tensor* at_probe = meta_of(t_.at_probe, n.args[0]);
    if (!at_example || !at_probe || at_example->shape() == at_probe->shape()) return;
    std::vector<Value>* sizes = size_list(n);
    if (!sizes) return;
    for (const Value& v : *sizes)
      if (v.kind != Value::Kind::kInt) return;  // sizes the capture kept symbolic
    const Shape& in = at_example->shape();
    std::vector<bool> dynamic(in.size());
    for (size_t k = 0; k < in.size(); ++k) dynamic[k] = in[k] != at_probe->shape()[k];
    if (expand)
      rewrite_expand(in, dynamic, *sizes);
    else
      rewrite_view(n, in, dynamic, sizes);
  }

  // expand keeps a dim of self that is not 1: its entry follows self (-1).
  static void rewrite_expand(const Shape& in, const std::vector<bool>& dynamic,
                             std::vector<Value>& sizes) {
    if (sizes.size() < in.size()) return;
    const size_t lead = sizes.size() - in.size();
    for (size_t k = 0; k < in.size(); ++k)
      if (dynamic[k] && sizes[lead + k].i == in[k]) sizes[lead + k] = Value::integer(-1);
  }

  void rewrite_view(Node& n, const Shape& in, const std::vector<bool>& dynamic,
                    std::vector<Value>* sizes) {
    std::vector<int64_t> out;
    int64_t known = 1, inferred = -1, numel = 1;
    for (int64_t d : in) numel *= d;
    for (size_t j = 0; j < sizes->size(); ++j) {
      out.push_back((*sizes)[j].i);
      if (out.back() == -1)
        inferred = static_cast<int64_t>(j);
      else
        known *= out.back();
    }
    if (numel == 0 || known == 0) return;  // the engine's rules judge empty views
    if (inferred >= 0) out[inferred] = numel / known;
    std::vector<Group> groups;
    struct Pending {
      size_t entry, dim;
      int64_t factor;
    };
    std::vector<Pending> pending;  // entries that follow a dynamic dim k, times the static rest
    // Unclear: refused where planning at the bound needs the rewrite; where every dynamic dim's
    // example is its bound, left as written (exact at the bound, refused at bind elsewhere).
    auto refuse = [&](const std::string& why) {
      if (!refuse_unclear_) return;
      IP_FAIL(kInvalidArgument, "[compile] node '", n.name, "': the sizes ", sizes_str(*sizes),
              " were recorded at the example's extent of a dynamic dim of its input (",
              shape_str(in), "), and ", why,
              "; capture with the dim dynamic (torch.export's dynamic_shapes) or take the size "
              "from the tensor (x.size(1))");
    };
    if (!view_groups(in, out, &groups)) return refuse("the sizes do not map onto the input's dims");
    for (const Group& g : groups) {
      std::vector<size_t> dyn;
      int64_t rest = 1;  // the static dims merged with the dynamic one
      for (size_t k : g.in) {
        if (dynamic[k])
          dyn.push_back(k);
        else
          rest *= in[k];
      }
      if (dyn.empty()) continue;
      bool follows = false;  // an entry of the group is -1: it follows the input already
      for (size_t j : g.out) follows |= static_cast<int64_t>(j) == inferred;
      if (follows) continue;
      if (dyn.size() != 1) return refuse("one entry would stand for several dynamic dims");
      const size_t k = dyn[0];
      if (g.out.size() == 1) {  // k kept, or merged with static dims
        pending.push_back({g.out[0], k, rest});
        continue;
      }
      // k split: only a split into k and static 1s (left out of the groups) is clear.
      return refuse("the dynamic dim " + std::to_string(k) + " is split into " +
                    std::to_string(g.out.size()) + " entries");
    }
    for (const Pending& p : pending) {
      if (inferred < 0 && pending.size() == 1) {  // the one entry that varies: -1
        (*sizes)[p.entry] = Value::integer(-1);
        inferred = static_cast<int64_t>(p.entry);
      } else {
        Node* self = n.args[0].node;
        (*sizes)[p.entry] = extent(n, self, p.dim, p.factor);
      }
    }
  }

  Graph& graph_;
  const PassOptions& options_;
  const bool refuse_unclear_;
  TwoExtents t_;
};

}  // namespace

void resymbolize_sizes(Graph& graph, const std::vector<Tensor>& examples,
                       const std::vector<DynamicDim>& dims, const PassOptions& options) {
  bool any = false, below_bound = false;
  for (const DynamicDim& d : dims)
    if (d.input >= 0 && d.input < static_cast<int>(examples.size()) && d.dim >= 0 &&
        d.dim < examples[d.input].dim() && examples[d.input].shape()[d.dim] > 1) {
      any = true;
      below_bound |= examples[d.input].shape()[d.dim] != d.max;
    }
  if (!any) return;  // an extent of 0 or 1 is not told apart from the literals around it
  Resymbolizer(graph, options, below_bound).run(examples, dims);
}

}  // namespace inplace
