#include "interpreter/interpreter.h"

#include <map>
#include <vector>

#include "backend/eager_call.h"
#include "ops/registry.h"

namespace inplace {

State initial_state(const Graph& graph) {
  State s;
  for (const auto& [k, v] : graph.constants) s[k] = v.clone();
  return s;
}

namespace {
Value substitute(const Value& v, const std::map<const Node*, Value>& env) {
  if (v.is_node()) return env.at(v.node);
  if (v.items.empty()) return v;
  Value r = v;
  for (Value& x : r.items) x = substitute(x, env);
  return r;
}
}  // namespace

RunOutput run_eager(const Graph& graph, const std::map<std::string, Value>& inputs, State* state,
                    std::map<const Node*, Value>* env_out) {
  std::map<const Node*, Value> local_env;
  std::map<const Node*, Value>& env = env_out ? *env_out : local_env;
  // Without env_out, each value is dropped after its last use (a bf16 weight widened to float32
  // for one linear is freed right after it, not kept to the end of the run); tensors a later
  // value views stay alive through their shared storage.
  std::vector<std::vector<const Node*>> dying;
  if (!env_out) {
    std::map<const Node*, size_t> last_use;
    size_t i = 0;
    for (Node* n : graph.nodes()) {
      last_use[n] = i;
      for (Node* m : n->inputs()) last_use[m] = i;
      ++i;
    }
    dying.resize(i);
    for (const auto& [n, at] : last_use) dying[at].push_back(n);
  }
  RunOutput out;
  size_t index = 0;
  for (Node* n : graph.nodes()) {
    switch (n->op) {
      case NodeOp::kPlaceholder: {
        auto it = inputs.find(n->name);
        if (it != inputs.end()) {
          env[n] = it->second;
        } else {
          IP_CHECK(!n->args.empty(), kNotFound, "[exec] missing input '", n->name, "'");
          env[n] = n->args[0];
        }
        break;
      }
      case NodeOp::kGetAttr: {
        auto it = state->find(n->target);
        IP_CHECK(it != state->end(), kNotFound, "[node ", n->name, "] unknown attribute '",
                 n->target, "'");
        env[n] = Value::from_tensor(it->second);
        break;
      }
      case NodeOp::kCallFunction:
      case NodeOp::kCallMethod: {
        std::vector<Value> args;
        for (const Value& a : n->args) args.push_back(substitute(a, env));
        std::vector<std::pair<std::string, Value>> kwargs;
        for (const auto& [k, v] : n->kwargs) kwargs.emplace_back(k, substitute(v, env));
        ResolvedCall rc = resolve_call(n->target, args, kwargs, n->name);
        try {
          env[n] = eager_call(*rc.op, rc.args);
        } catch (const Error& e) {
          std::string msg = e.what();
          if (msg.rfind("[node ", 0) == 0) throw;
          throw Error(e.code(), str_cat("[node ", n->name, "] ", msg));
        }
        break;
      }
      case NodeOp::kOutput: {
        IP_CHECK(n->args.size() == 1, kInvalidArgument, "[node ", n->name,
                 "] the output node takes one argument, got ", n->args.size());
        out.result = substitute(n->args[0], env);
        flatten_value(out.result, &out.flat);
        break;
      }
    }
    if (!env_out)
      for (const Node* d : dying[index]) env.erase(d);
    ++index;
  }
  return out;
}

}  // namespace inplace
