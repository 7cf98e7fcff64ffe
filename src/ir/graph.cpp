#include "ir/graph.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_set>

namespace inplace {

namespace {
std::string default_hint(NodeOp op, const std::string& target) {
  if (op == NodeOp::kOutput) return "output";
  std::string t = target;
  size_t dot = t.find_last_of('.');
  // aten.add_.Tensor -> add_ ; torch.add -> add ; _operator.setitem -> setitem
  if (t.rfind("aten.", 0) == 0 || t.rfind("torch.ops.aten.", 0) == 0) {
    std::string rest = t.substr(t.find("aten.") + 5);
    t = rest.substr(0, rest.find('.'));
  } else if (dot != std::string::npos) {
    t = t.substr(dot + 1);
  }
  std::string out;
  for (char c : t) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  while (!out.empty() && out.front() == '_') out.erase(out.begin());
  return out.empty() ? "node" : out;
}
}  // namespace

std::string Graph::unique_name(const std::string& hint) const {
  if (!by_name_.count(hint)) return hint;
  int& k = next_suffix_[hint];
  for (k = std::max(k, 1);; ++k) {
    std::string n = hint + "_" + std::to_string(k);
    if (!by_name_.count(n)) return n;
  }
}

void Graph::rename(Node* n, const std::string& new_name) {
  if (n->name == new_name) return;
  IP_CHECK(!by_name_.count(new_name), kInvalidArgument, "[graph] name '", new_name,
           "' is already taken");
  by_name_.erase(n->name);
  n->name = new_name;
  by_name_[new_name] = n;
}

Graph::NodeList::iterator Graph::iter_of(const Node* n) {
  auto it = where_.find(n);
  if (it != where_.end()) return it->second;
  IP_FAIL(kNotFound, "[graph] node '", n ? n->name : "<null>", "' is not in graph '", name, "'");
}

Node* Graph::insert_before(Node* pos, NodeOp op, std::string target, std::vector<Value> args,
                           std::vector<std::pair<std::string, Value>> kwargs,
                           const std::string& name_hint) {
  auto node = std::make_unique<Node>();
  node->name = unique_name(name_hint.empty() ? default_hint(op, target) : name_hint);
  node->op = op;
  node->target = std::move(target);
  node->args = std::move(args);
  node->kwargs = std::move(kwargs);
  node->graph = this;
  Node* raw = node.get();
  by_name_[raw->name] = raw;
  auto at = pos == nullptr ? nodes_.end() : iter_of(pos);
  where_[raw] = nodes_.insert(at, std::move(node));
  return raw;
}

Node* Graph::add_node(NodeOp op, std::string target, std::vector<Value> args,
                      std::vector<std::pair<std::string, Value>> kwargs,
                      const std::string& name_hint) {
  Node* out = op == NodeOp::kOutput ? nullptr : output();
  return insert_before(out, op, std::move(target), std::move(args), std::move(kwargs), name_hint);
}

void Graph::move_before(Node* n, Node* pos) {
  if (n == pos) return;
  auto from = iter_of(n);
  auto to = pos ? iter_of(pos) : nodes_.end();
  nodes_.splice(to, nodes_, from);
}

void Graph::erase(Node* n) {
  auto us = users(n);
  IP_CHECK(us.empty(), kInvalidArgument, "[graph] cannot erase '", n->name, "': used by '",
           us.empty() ? "" : us[0]->name, "'");
  auto it = iter_of(n);
  by_name_.erase(n->name);
  where_.erase(n);
  nodes_.erase(it);
}

void Graph::erase_all(const std::vector<Node*>& dead) {
  std::unordered_set<const Node*> gone(dead.begin(), dead.end());
  for (auto& n : nodes_) {
    if (gone.count(n.get())) continue;
    const Node* used = nullptr;
    auto check = [&](Node* m) {
      if (!used && gone.count(m)) used = m;
    };
    for (const Value& a : n->args) for_each_node(a, check);
    for (const auto& kv : n->kwargs) for_each_node(kv.second, check);
    IP_CHECK(used == nullptr, kInvalidArgument, "[graph] cannot erase '", used ? used->name : "",
             "': used by '", n->name, "'");
  }
  for (Node* n : dead) {
    auto it = iter_of(n);
    by_name_.erase(n->name);
    where_.erase(n);
    nodes_.erase(it);
  }
}

void Graph::replace_all_uses_with(Node* from, Node* to, const Node* only_after) {
  bool active = only_after == nullptr;
  for (auto& n : nodes_) {
    if (active && n.get() != to) n->replace_input(from, to);
    if (n.get() == only_after) active = true;
  }
}

std::vector<Node*> Graph::users(const Node* target) const {
  std::vector<Node*> out;
  for (auto& n : nodes_) {
    bool uses = false;
    auto check = [&](Node* m) { uses |= m == target; };
    for (const Value& a : n->args) for_each_node(a, check);
    for (const auto& kv : n->kwargs) for_each_node(kv.second, check);
    if (uses) out.push_back(n.get());
  }
  return out;
}

Node* Graph::find(const std::string& n) const {
  auto it = by_name_.find(n);
  return it == by_name_.end() ? nullptr : it->second;
}

Node* Graph::output() const {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it)
    if ((*it)->op == NodeOp::kOutput) return it->get();
  return nullptr;
}

std::vector<Node*> Graph::placeholders() const {
  std::vector<Node*> out;
  for (auto& n : nodes_)
    if (n->op == NodeOp::kPlaceholder) out.push_back(n.get());
  return out;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::map<const Node*, size_t> Graph::order() const {
  std::map<const Node*, size_t> out;
  size_t i = 0;
  for (auto& n : nodes_) out[n.get()] = i++;
  return out;
}

void Graph::verify() const {
  std::set<const Node*> defined;
  std::set<std::string> names;
  int outputs = 0;
  for (auto& n : nodes_) {
    IP_CHECK(!n->name.empty(), kInvalidArgument, "[verify] graph '", name,
             "' has a node with no name");
    IP_CHECK(names.insert(n->name).second, kInvalidArgument, "[verify] node name '", n->name,
             "' is used twice");
    IP_CHECK(outputs == 0, kInvalidArgument, "[verify] node '", n->name,
             "' comes after the output node; the output node must be last");
    auto check = [&](Node* m) {
      IP_CHECK(m != nullptr, kInvalidArgument, "[verify] node '", n->name,
               "' has a dangling reference");
      IP_CHECK(defined.count(m), kInvalidArgument, "[verify] node '", n->name, "' uses '", m->name,
               "' before it is defined");
    };
    for (const Value& a : n->args) for_each_node(a, check);
    for (const auto& kv : n->kwargs) for_each_node(kv.second, check);
    if (n->op == NodeOp::kOutput) ++outputs;
    if (n->op == NodeOp::kGetAttr)
      IP_CHECK(constants.count(n->target), kNotFound, "[verify] get_attr '", n->name,
               "' names unknown constant '", n->target, "'");
    defined.insert(n.get());
  }
  IP_CHECK(outputs == 1, kInvalidArgument, "[verify] graph '", name, "' has ", outputs,
           " output nodes; expected exactly one");
}

std::string Graph::to_string() const {
  std::ostringstream os;
  os << "graph " << name << "():\n";
  for (auto& n : nodes_) os << "    %" << n->to_string() << "\n";
  return os.str();
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->name = name;
  g->constants = constants;
  g->signature = signature;
  std::map<const Node*, Node*> remap;
  for (auto& n : nodes_) {
    auto c = std::make_unique<Node>(*n);
    c->graph = g.get();
    auto fix = [&](Node*& m) { m = remap.at(m); };
    for (Value& a : c->args) for_each_node_mut(a, fix);
    for (auto& kv : c->kwargs) for_each_node_mut(kv.second, fix);
    remap[n.get()] = c.get();
    g->by_name_[c->name] = c.get();
    Node* raw = c.get();
    g->where_[raw] = g->nodes_.insert(g->nodes_.end(), std::move(c));
  }
  return g;
}

}  // namespace inplace
