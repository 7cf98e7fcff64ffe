// alias_analysis: finds every write (in-place ops, setitem, copy_, any op whose schema marks an
// argument (a!)), traces it through views to the root it lands in, and records the program's
// effect on its inputs: node meta "root_input", one output per mutated input or buffer (an
// existing output when it already is that value), io_map {output -> input}.
#include <algorithm>
#include <map>
#include <set>

#include "ir/export_signature.h"
#include "passes/alias_model.h"
#include "passes/functional_forms.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

void collect_leaves(Value& v, std::vector<Value*>* out) {
  if (v.is_sequence()) {
    for (Value& x : v.items) collect_leaves(x, out);
  } else {
    out->push_back(&v);
  }
}

int index_of(const std::vector<std::string>& names, const std::string& n) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == n) return static_cast<int>(i);
  return -1;
}

class AliasAnalysisPass : public Pass {
 public:
  std::string name() const override { return "alias_analysis"; }
  void run(Graph& graph, PassContext& ctx) override {
    MetaTable& metas = cached_metas(graph, ctx);
    AliasTracker tracker(metas);
    std::set<int> mutated_roots;
    for (Node* n : graph.nodes()) {
      if (n->op == NodeOp::kOutput) break;
      tracker.record(n);
      if (!n->is_call()) continue;
      const ResolvedCall& rc = tracker.call(n);
      if (rc.op->kind != OpKind::kMutating) continue;
      FunctionalForm form;
      try {
        form = functional_form(*n, *rc.op);
      } catch (const Error& e) {
        // Custom ops with no twin are this pass's to refuse; the rest wait for the rewrite.
        if (std::string(e.what()).rfind("[alias_analysis]", 0) == 0) throw;
        form.mutated_arg = rc.op->schema.mutated_args().front();
      }
      const Value& written = rc.args[form.mutated_arg];
      IP_CHECK(written.is_node() && tracker.root_of(written.node) >= 0, kUnsupported,
               "[alias_analysis] node '", n->name, "' writes into ", written.to_string(),
               ", which is not a tensor whose storage the program can trace");
      int r = tracker.root_of(written.node);
      mutated_roots.insert(r);
      const Root& root = tracker.root(r);
      if (root.kind != Root::Kind::kIntermediate) n->meta.attrs["root_input"] = root.name;
    }

    // Inputs: placeholders in order, then mutated buffers by first get_attr.
    ctx.input_names.clear();
    ctx.mutations.clear();
    std::map<int, int> io_map;  // flat output -> input index
    std::vector<int> input_root;
    for (int r = 0; r < tracker.num_roots(); ++r)
      if (tracker.root(r).kind == Root::Kind::kInput) {
        ctx.input_names.push_back(tracker.root(r).name);
        input_root.push_back(r);
      }
    ctx.num_placeholders = static_cast<int>(ctx.input_names.size());
    for (int r = 0; r < tracker.num_roots(); ++r)
      if (tracker.root(r).kind == Root::Kind::kBuffer && mutated_roots.count(r)) {
        ctx.input_names.push_back(tracker.root(r).name);
        input_root.push_back(r);
      }

    Node* out = graph.output();
    IP_CHECK(out && out->args.size() == 1, kInvalidArgument,
             "[alias_analysis] the output node must take one argument");
    std::vector<Value*> leaves;
    collect_leaves(out->args[0], &leaves);
    ctx.original_output_count = static_cast<int>(leaves.size());
    ctx.output_wrapped = false;

    // Outputs the caller or the export signature names as new values of inputs.
    auto declare = [&](const std::string& input, int output, const char* source) {
      int i = index_of(ctx.input_names, input);
      if (i < 0 && graph.constants.count(input)) {
        ctx.input_names.push_back(input);
        i = static_cast<int>(ctx.input_names.size()) - 1;
      }
      IP_CHECK(i >= 0, kNotFound, "[alias_analysis] ", source, " names unknown input '", input,
               "'");
      IP_CHECK(output >= 0 && output < ctx.original_output_count, kOutOfRange, "[alias_analysis] ",
               source, " names output ", output, " of ", ctx.original_output_count);
      io_map[output] = i;
    };
    for (const DeclaredMutation& d : ctx.options.mutated_inputs)
      declare(d.input, d.output, "--mutated-input");
    for (const DeclaredMutation& d : signature_mutations(graph, ctx.original_output_count))
      declare(d.input, d.output, "signature");

    // One output per mutated input, in input order.
    std::vector<std::pair<int, int>> appended;  // (input index, root)
    for (size_t i = 0; i < input_root.size(); ++i) {
      int r = input_root[i];
      if (!mutated_roots.count(r)) continue;
      int found = -1;
      for (auto [o, in] : io_map)
        if (in == static_cast<int>(i)) found = o;  // declared (signature, --mutated-input)
      if (found >= 0) continue;
      for (size_t o = 0; o < leaves.size() && found < 0; ++o) {
        const Value& leaf = *leaves[o];
        if (leaf.is_node() && !io_map.count(static_cast<int>(o)) &&
            tracker.root_of(leaf.node) == r && tracker.is_whole(leaf.node))
          found = static_cast<int>(o);
      }
      if (found >= 0) {
        io_map[found] = static_cast<int>(i);
      } else {
        appended.emplace_back(static_cast<int>(i), r);
      }
    }
    if (!appended.empty()) {
      Value& res = out->args[0];
      if (!res.is_sequence()) {
        res = Value::tuple({res});
        ctx.output_wrapped = true;
      }
      int next = ctx.original_output_count;
      for (auto [i, r] : appended) {
        res.items.push_back(ref(tracker.root(r).origin));
        io_map[next++] = i;
      }
    }
    for (auto [o, i] : io_map) ctx.mutations.push_back({o, i, MutationKind::kUser});
    std::stable_sort(ctx.mutations.begin(), ctx.mutations.end(),
                     [](const Mutation& a, const Mutation& b) { return a.input < b.input; });
    std::string io;
    for (auto [o, i] : io_map)
      io += (io.empty() ? "" : ",") + std::to_string(o) + ":" + std::to_string(i);
    out->meta.attrs["io_map"] = io;
    out->meta.attrs["original_output_count"] = std::to_string(ctx.original_output_count);
  }
};

}  // namespace

std::unique_ptr<Pass> make_alias_analysis_pass() {
  return std::make_unique<AliasAnalysisPass>();
}

}  // namespace inplace
