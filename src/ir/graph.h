// An FX-like graph: nodes in program order (output last), constants for get_attr targets,
// and the optional torch.export signature.
#pragma once
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/node.h"

namespace inplace {

struct SignatureInput {
  std::string kind;  // user_input | parameter | buffer | constant
  std::string node;  // placeholder name
  std::string target;
};
struct SignatureOutput {
  std::string kind;  // user_output | buffer_mutation | user_input_mutation
  std::string target;
};
struct Signature {
  std::vector<SignatureInput> inputs;
  std::vector<SignatureOutput> outputs;
  bool empty() const { return inputs.empty() && outputs.empty(); }
};

class Graph {
 public:
  using NodeList = std::list<std::unique_ptr<Node>>;

  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  std::unique_ptr<Graph> clone() const;

  std::string name = "graph";
  std::map<std::string, Tensor> constants;  // get_attr target -> value
  Signature signature;

  // Appends at the end (or before the output node if one exists and `op` is not output).
  Node* add_node(NodeOp op, std::string target, std::vector<Value> args = {},
                 std::vector<std::pair<std::string, Value>> kwargs = {},
                 const std::string& name_hint = "");
  // Inserts before `pos`.
  Node* insert_before(Node* pos, NodeOp op, std::string target, std::vector<Value> args = {},
                      std::vector<std::pair<std::string, Value>> kwargs = {},
                      const std::string& name_hint = "");
  // Moves `n` to just before `pos` (null: the end). The caller keeps uses after definitions.
  void move_before(Node* n, Node* pos);
  // Erases a node that nothing uses any more.
  void erase(Node* n);
  // Erases every node of `dead` (in one pass over the graph: a pass removing thousands of nodes
  // stays linear); refuses, erasing nothing, if a node that stays uses one of them.
  void erase_all(const std::vector<Node*>& dead);
  // Every use of `from` (after it in program order, or everywhere if `only_after` is null)
  // now refers to `to`.
  void replace_all_uses_with(Node* from, Node* to, const Node* only_after = nullptr);
  std::vector<Node*> users(const Node* n) const;

  Node* find(const std::string& name) const;
  Node* output() const;  // null when the graph has none
  std::vector<Node*> placeholders() const;
  std::vector<Node*> nodes() const;  // snapshot in program order
  size_t size() const { return nodes_.size(); }
  // Position in program order (for "is a before b"): recomputed on demand.
  std::map<const Node*, size_t> order() const;

  // A name not yet taken: hint, hint_1, hint_2, ...
  std::string unique_name(const std::string& hint) const;
  void rename(Node* n, const std::string& new_name);

  // Throws naming the node: uses before definition, dangling references, duplicate names,
  // not exactly one output node or it is not last.
  void verify() const;
  // FX-like listing.
  std::string to_string() const;

 private:
  NodeList::iterator iter_of(const Node* n);
  NodeList nodes_;
  std::map<std::string, Node*> by_name_;
  // Where each node sits in nodes_ (list iterators stay valid across inserts and splices), and
  // the next suffix to try for each name hint: both keep graph edits O(1) (a 10k-node graph).
  std::unordered_map<const Node*, NodeList::iterator> where_;
  mutable std::unordered_map<std::string, int> next_suffix_;
};

}  // namespace inplace
