// fuse_pointwise (an engine pass, after the named fusions so it takes only what they left): a
// chain of elementwise ops whose intermediates nothing else reads becomes one fused_pointwise
// step, whose program (ops/pointwise_program.h) replays the chain with eager PyTorch's
// conversions: each operand converted to the op's compute dtype as its kernel would, a Python
// number kept in opmath where the kernel keeps it (mul, div), every result rounded to its dtype.
// So the fused step is bitwise the unfused chain on the cpu, for every dtype the kernels take.
// A chain that also reduces rows (sum, mean, amax or amin of a floating tensor over its last dim
// with keepdim, whose operand has the chain's result shape: an RMSNorm, LayerNorm or softmax
// written out by hand) becomes one fused_rows step the same way.
//
// A group grows from a root (a fusable node, latest first) through operands that are fusable
// and read only by its members (an intermediate several members read is one register), within
// kMaxInstructions and kMaxInputs; a node read outside the group roots its own. A group never spans
// a mutating node (its inputs are read at the root). A program the engine's backend does not run
// (PassOptions::kernel_supports: cuda's kernel refuses what it cannot compute bitwise as its
// unfused kernels) drops members until it runs.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ops/elementwise_args.h"
#include "ops/fused_pointwise_args.h"
#include "ops/reduction_args.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

using pointwise::Instr;
using pointwise::Opcode;

// Nodes a group takes at most (each makes an instruction or more, within kMaxInstructions), so
// a chain of thousands of ops becomes steps of this many, in time linear in its length.
constexpr size_t kMaxMembers = 24;

// An operand of a fusable node: a tensor node or a Python number.
struct Input {
  Node* node = nullptr;
  Scalar number;
};

// What a fusable node computes, in the terms of the program.
struct Member {
  Opcode op = Opcode::kCast;
  int code = 0;                     // UnaryOp, BinaryOp, CompareOp or ReduceOp
  DType out = DType::kFloat32;      // the node's dtype
  DType compute = DType::kFloat32;  // the dtype its operands are converted to
  bool number_in_opmath = false;    // mul and div keep a number's precision
  std::vector<Input> inputs;        // kWhere: cond, a, b
  Scalar exponent;                  // kPowScalar
};

bool literal_number(const Value& v) {
  return !v.is_node() && v.is_number();
}

bool number_equals(const Value& v, double want) {
  return literal_number(v) && v.as_double("fuse_pointwise") == want;
}

// The operand at args[i]: a tensor node with a known meta or a literal number.
std::optional<Input> input_of(const Value& v, const MetaTable& metas) {
  Input in;
  if (v.is_node()) {
    if (!metas.tensor(v.node)) return std::nullopt;
    in.node = v.node;
    return in;
  }
  if (!literal_number(v)) return std::nullopt;
  in.number = v.as_scalar("fuse_pointwise");
  return in;
}

elementwise::Operand meta_operand(const Input& in, const MetaTable& metas) {
  if (in.node) return elementwise::Operand(*metas.tensor(in.node));
  return elementwise::Operand(in.number);
}

const BinaryDecl* binary_decl(const OpDef& op) {
  for (const BinaryDecl& d : kBinaryOps)
    if (op.schema.full_name() == d.name || op.schema.name == d.name) return &d;
  return nullptr;
}

// A row reduction the program runs as its kernel does: sum, mean, amax or amin of a floating
// tensor over its last dim only, with keepdim, the result of the input's dtype.
std::optional<Member> describe_reduction(const ResolvedCall& rc, const Tensor& out,
                                         const MetaTable& metas) {
  static const std::pair<const char*, pointwise::ReduceOp> kReductions[] = {
      {"sum.dim_IntList", pointwise::ReduceOp::kSum},
      {"mean.dim", pointwise::ReduceOp::kMean},
      {"amax", pointwise::ReduceOp::kMax},
      {"amin", pointwise::ReduceOp::kMin}};
  const std::string full = rc.op->schema.full_name();
  const Args& a = rc.args;
  for (const auto& [name, op] : kReductions) {
    if (full != name) continue;
    if (a.size() < 3 || !a[0].is_node() || (a.size() > 3 && !a[3].is_none())) return std::nullopt;
    const Tensor* x = metas.tensor(a[0].node);
    if (!x || x->dim() == 0 || !is_floating(x->dtype()) || out.dtype() != x->dtype())
      return std::nullopt;
    if (a[2].kind != Value::Kind::kBool || !a[2].as_bool("fuse_pointwise")) return std::nullopt;
    // The dims it folds, decoded as the op's declaration decodes them: the last one only.
    reduction::DimMask mask;
    try {
      mask = reduction::plan_reduction(*x, a[1], true, name).mask;
    } catch (const Error&) {
      return std::nullopt;
    }
    if (std::count(mask.begin(), mask.end(), true) != 1 || !mask.back()) return std::nullopt;
    Member m;
    m.op = Opcode::kReduce;
    m.code = static_cast<int>(op);
    m.out = m.compute = out.dtype();
    m.inputs.push_back(Input{a[0].node, Scalar()});
    return m;
  }
  return std::nullopt;
}

// The member a call node makes, or nullopt when it is not an elementwise op (or a row reduction)
// the program runs exactly as its kernel does.
std::optional<Member> describe(Node* n, const MetaTable& metas, bool rows) {
  if (!n->is_call()) return std::nullopt;
  const Tensor* meta = metas.tensor(n);
  if (!meta) return std::nullopt;
  const std::string name = op_name(n);
  if (name.empty()) return std::nullopt;
  ResolvedCall rc;
  try {
    rc = resolve_node(*n);
  } catch (const Error&) {
    return std::nullopt;
  }
  const Args& args = rc.args;
  if (rows)
    if (std::optional<Member> r = describe_reduction(rc, *meta, metas)) return r;
  Member m;
  m.out = m.compute = meta->dtype();
  auto take = [&](const Value& v) {
    std::optional<Input> in = input_of(v, metas);
    if (in) m.inputs.push_back(*in);
    return in.has_value();
  };
  for (const UnaryDecl& d : kUnaryOps) {
    if (name != d.name || args.size() != 1 || !args[0].is_node()) continue;
    if (!pointwise::unary_supports(d.op, m.out) || !take(args[0])) return std::nullopt;
    m.op = Opcode::kUnary;
    m.code = static_cast<int>(d.op);
    return m;
  }
  if (name == "gelu" && args.size() == 2 && args[0].is_node() &&
      args[1].kind == Value::Kind::kString) {
    const UnaryOp k = elementwise::gelu_kind(args[1]);
    if (!pointwise::unary_supports(k, m.out) || !take(args[0])) return std::nullopt;
    m.op = Opcode::kUnary;
    m.code = static_cast<int>(k);
    return m;
  }
  if (const BinaryDecl* d = binary_decl(*rc.op)) {
    if (d->alpha >= 0 && !number_equals(args[d->alpha], 1)) return std::nullopt;
    if (d->mode >= 0 && args[d->mode].is_node()) return std::nullopt;
    if (d->mode >= 0 && !args[d->mode].is_none() && args[d->mode].kind != Value::Kind::kString)
      return std::nullopt;
    const BinaryOp k = d->mode >= 0 ? elementwise::div_mode(args, d->mode) : d->op;
    if (!take(args[d->a]) || !take(args[d->b])) return std::nullopt;
    const Input &a = m.inputs[0], &b = m.inputs[1];
    if (!a.node && !b.node) return std::nullopt;
    if (k == BinaryOp::kPow && a.node && !b.node) {  // pow_scalar and its fast paths
      const double e = b.number.to_double();
      if (e == 0.0 || e == 1.0 || m.out == DType::kBool) return std::nullopt;
      m.op = Opcode::kPowScalar;
      m.exponent = b.number;
      m.inputs.pop_back();
      return m;
    }
    if (k == BinaryOp::kPow && !a.node && a.number.to_double() == 1.0) return std::nullopt;
    if (!pointwise::binary_supports(k, m.out)) return std::nullopt;
    m.op = Opcode::kBinary;
    m.code = static_cast<int>(k);
    m.number_in_opmath = k == BinaryOp::kMul || k == BinaryOp::kDiv;
    return m;
  }
  for (const CompareDecl& d : kCompareOps) {
    if (name != d.name || args.size() != 2) continue;
    if (!take(args[0]) || !take(args[1]) || (!m.inputs[0].node && !m.inputs[1].node))
      return std::nullopt;
    const bool logical =
        d.op == CompareOp::kAnd || d.op == CompareOp::kOr || d.op == CompareOp::kXor;
    const elementwise::Operand a = meta_operand(m.inputs[0], metas),
                               b = meta_operand(m.inputs[1], metas);
    m.compute = logical ? DType::kBool : elementwise::result_type({&a, &b});
    m.op = Opcode::kCompare;
    m.code = static_cast<int>(d.op);
    return m.out == DType::kBool ? std::optional<Member>(m) : std::nullopt;
  }
  if ((name == "where" && args.size() == 3) || (name == "masked_fill" && args.size() == 3)) {
    const bool where = name == "where";
    const Value& cond = where ? args[0] : args[1];
    if (!cond.is_node() || !take(cond) || !take(where ? args[1] : args[2]) ||
        !take(where ? args[2] : args[0]))
      return std::nullopt;
    const DType c = metas.tensor(cond.node)->dtype();
    if (c != DType::kBool && c != DType::kUInt8) return std::nullopt;
    m.op = Opcode::kWhere;
    return m;
  }
  if ((name == "to" || name == "_to_copy") && !args.empty() && args[0].is_node() &&
      cast_only_to_dtype(rc, m.out) && take(args[0])) {
    m.op = Opcode::kCast;
    return m;
  }
  return std::nullopt;
}

// Builds the program of one group (members in program order, the root last).
class ProgramBuilder {
 public:
  ProgramBuilder(const MetaTable& metas, const std::unordered_map<Node*, Member>& members)
      : metas_(metas), members_(members) {}

  // False when the group needs more registers or inputs than a backend holds.
  bool build(const std::vector<Node*>& group) {
    for (Node* n : group) {
      const Member& m = members_.at(n);
      int r = -1;
      switch (m.op) {
        case Opcode::kUnary:
          r = emit(Opcode::kUnary, m.out, reg(m.inputs[0], m.out, false), m.code);
          break;
        case Opcode::kBinary:
          r = emit(Opcode::kBinary, m.out, reg(m.inputs[0], m.out, m.number_in_opmath),
                   reg(m.inputs[1], m.out, m.number_in_opmath), m.code);
          break;
        case Opcode::kPowScalar: {
          int32_t kind, lo, hi;
          pointwise::split_number(m.exponent, &kind, &lo, &hi);
          r = emit(Opcode::kPowScalar, m.out, reg(m.inputs[0], m.out, false), kind, lo, hi);
          break;
        }
        case Opcode::kCompare:
          r = emit(Opcode::kCompare, m.compute, reg(m.inputs[0], m.compute, false),
                   reg(m.inputs[1], m.compute, false), m.code);
          dtype_.back() = DType::kBool;
          break;
        case Opcode::kWhere:
          r = emit(Opcode::kWhere, m.out, reg(m.inputs[0], DType::kBool, false),
                   reg(m.inputs[1], m.out, false), reg(m.inputs[2], m.out, false));
          break;
        case Opcode::kReduce:
          r = emit(Opcode::kReduce, m.out, reg(m.inputs[0], m.out, false), m.code);
          reduces_ = true;
          break;
        default:  // kCast
          r = reg(m.inputs[0], m.out, false);
          break;
      }
      node_reg_[n] = r;
    }
    emit(Opcode::kStore, members_.at(group.back()).out, node_reg_.at(group.back()));
    return code_.size() <= static_cast<size_t>(pointwise::kMaxInstructions) &&
           inputs_.size() <= static_cast<size_t>(pointwise::kMaxInputs);
  }
  const std::vector<Instr>& code() const { return code_; }
  const std::vector<Node*>& inputs() const { return inputs_; }
  // Whether the program reduces rows: a fused_rows step, not fused_pointwise.
  bool reduces() const { return reduces_; }

 private:
  int emit(Opcode op, DType t, int32_t a = 0, int32_t b = 0, int32_t c = 0, int32_t d = 0) {
    Instr in;
    in.op = op;
    in.dtype = static_cast<uint8_t>(t);
    in.a = a, in.b = b, in.c = c, in.d = d;
    code_.push_back(in);
    dtype_.push_back(t);
    return static_cast<int>(code_.size()) - 1;
  }

  // The register holding `in` converted to `t`, as the kernel's operand preparation does.
  int reg(const Input& in, DType t, bool number_in_opmath) {
    if (!in.node) {
      int32_t kind, lo, hi;
      pointwise::split_number(in.number, &kind, &lo, &hi);
      return emit(Opcode::kConst, t, kind | (number_in_opmath ? pointwise::kConstInOpmath : 0), lo,
                  hi);
    }
    auto cast = cast_.find({in.node, t});
    if (cast != cast_.end()) return cast->second;
    int r;
    auto own = node_reg_.find(in.node);
    if (own != node_reg_.end()) {
      r = own->second;
    } else {
      auto at = std::find(inputs_.begin(), inputs_.end(), in.node);
      const int k = static_cast<int>(at - inputs_.begin());
      if (at == inputs_.end()) inputs_.push_back(in.node);
      r = emit(Opcode::kLoad, metas_.tensor(in.node)->dtype(), k);
      node_reg_[in.node] = r;
    }
    if (dtype_[r] != t) r = emit(Opcode::kCast, t, r);
    cast_[{in.node, t}] = r;
    return r;
  }

  const MetaTable& metas_;
  const std::unordered_map<Node*, Member>& members_;
  std::vector<Instr> code_;
  std::vector<DType> dtype_;
  std::vector<Node*> inputs_;
  std::unordered_map<Node*, int> node_reg_;
  std::map<std::pair<Node*, DType>, int> cast_;
  bool reduces_ = false;
};

// Why the engine's backend does not run the fused step of `b`'s program ("" when it does).
std::string refused_by_backend(const ProgramBuilder& b, const OpDef& fused_op,
                               const MetaTable& metas, const PassOptions& options) {
  if (!options.kernel_supports) return "";
  std::vector<Value> inputs;
  for (Node* x : b.inputs()) inputs.push_back(Value::from_tensor(*metas.tensor(x)));
  return options.kernel_supports(
      fused_op, {Value::list(std::move(inputs)), Value::int_list(pointwise::encode(b.code()))});
}

class FusePointwisePass : public Pass {
 public:
  std::string name() const override { return "fuse_pointwise"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable metas = infer_metas(g, ctx.options);
    const std::vector<Node*> nodes = g.nodes();
    std::unordered_map<const Node*, size_t> order;
    std::unordered_map<const Node*, std::vector<Node*>> users;
    std::vector<size_t> mutating;  // positions of mutating calls
    for (size_t i = 0; i < nodes.size(); ++i) {
      Node* n = nodes[i];
      order[n] = i;
      std::unordered_set<Node*> seen;
      auto add = [&](Node* m) {
        if (seen.insert(m).second) users[m].push_back(n);
      };
      for (const Value& a : n->args) for_each_node(a, add);
      for (const auto& kv : n->kwargs) for_each_node(kv.second, add);
      if (n->is_call()) {
        try {
          if (resolve_node(*n).op->kind == OpKind::kMutating) mutating.push_back(i);
        } catch (const Error&) {
        }
      }
    }
    std::unordered_map<Node*, Member> members;
    for (Node* n : nodes)
      if (std::optional<Member> m = describe(n, metas, ctx.options.fuse_rows))
        members.emplace(n, std::move(*m));

    std::unordered_set<Node*> taken;
    std::vector<Node*> dead;
    const OpDef* pointwise_op = Registry::get().find("fused_pointwise");
    const OpDef* rows_op = Registry::get().find("fused_rows");
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* root = *it;
      // A reduction's result is a row's value: it joins a group whose result is its rows.
      if (!members.count(root) || taken.count(root) || members.at(root).op == Opcode::kReduce)
        continue;
      taken.insert(root);
      const Shape& root_shape = metas.tensor(root)->shape();
      // An operand joins once every node that reads it is in the group (its register then
      // serves them all), so passes repeat until none joins.
      std::vector<Node*> group{root};
      std::unordered_set<Node*> in_group{root};
      for (bool grew = true; grew;) {
        grew = false;
        for (size_t k = 0; k < group.size(); ++k)
          for (const Input& in : members.at(group[k]).inputs) {
            Node* x = in.node;
            if (group.size() >= kMaxMembers) break;
            if (!x || !members.count(x) || taken.count(x)) continue;
            const std::vector<Node*>& u = users[x];
            if (!std::all_of(u.begin(), u.end(), [&](Node* m) { return in_group.count(m); }))
              continue;
            const Member& mx = members.at(x);
            if (mx.op == Opcode::kReduce && metas.tensor(mx.inputs[0].node)->shape() != root_shape)
              continue;  // its rows are not the result's
            taken.insert(x);
            in_group.insert(x);
            group.push_back(x);
            grew = true;
          }
      }
      // The group in the order it grew: its last member is a leaf (none joined through it), so
      // dropping members from the back keeps it connected.
      std::vector<Node*> grown = group;
      std::optional<ProgramBuilder> built;
      Shape shape;
      bool fuse = false;
      const OpDef* fused_op = pointwise_op;
      while (grown.size() >= 2) {
        group = grown;
        std::sort(group.begin(), group.end(),
                  [&](Node* a, Node* b) { return order.at(a) < order.at(b); });
        const size_t first = order.at(group.front()), last = order.at(root);
        built.emplace(metas, members);
        shape = {};
        fuse = std::none_of(mutating.begin(), mutating.end(),
                            [&](size_t p) { return p > first && p < last; }) &&
               built->build(group);
        if (fuse) {
          for (Node* x : built->inputs())
            shape = broadcast_shapes(shape, metas.tensor(x)->shape(), "");
          fuse = shape == root_shape && (!built->reduces() || !shape.empty());
          fused_op = built->reduces() ? rows_op : pointwise_op;
        }
        if (!fuse || refused_by_backend(*built, *fused_op, metas, ctx.options).empty()) break;
        // The backend's kernel does not run this program: a smaller group may be one it runs.
        fuse = false;
        taken.erase(grown.back());
        grown.pop_back();
      }
      if (!fuse) {  // the operands it took may root groups of their own
        for (Node* x : grown)
          if (x != root) taken.erase(x);
        continue;
      }
      const ProgramBuilder& b = *built;
      std::vector<Value> inputs;
      for (Node* x : b.inputs()) inputs.push_back(ref(x));
      Node* fused = g.insert_before(
          root, NodeOp::kCallFunction, canonical_target(*fused_op),
          {Value::list(std::move(inputs)), Value::int_list(pointwise::encode(b.code()))}, {},
          root->name + "_fused");
      fused->meta = root->meta;
      fused->meta.shape = shape;
      fused->meta.dtype = metas.tensor(root)->dtype();
      // The users map stays current without a walk of the graph per group (linear in a chain of
      // thousands): the fused node reads the inputs in its members' place.
      const std::unordered_set<Node*> members_of(group.begin(), group.end());
      for (Node* x : b.inputs()) {
        std::vector<Node*>& u = users[x];
        u.erase(std::remove_if(u.begin(), u.end(), [&](Node* m) { return members_of.count(m); }),
                u.end());
        u.push_back(fused);
      }
      for (Node* u : users[root]) u->replace_input(root, fused);
      users[fused] = users[root];
      dead.insert(dead.end(), group.begin(), group.end());
    }
    g.erase_all(dead);
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_pointwise_pass() {
  return std::make_unique<FusePointwisePass>();
}

}  // namespace inplace
