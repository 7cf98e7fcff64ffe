// A graph node, FX style: placeholder, get_attr, call_function, call_method, output.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/value.h"

namespace inplace {

class Graph;

enum class NodeOp : uint8_t { kPlaceholder, kGetAttr, kCallFunction, kCallMethod, kOutput };
const char* node_op_name(NodeOp op);
bool parse_node_op(const std::string& s, NodeOp* out);

// Shape and dtype a frontend or a pass recorded, plus string annotations passes leave for
// later passes (e.g. "root_input").
struct Meta {
  std::optional<Shape> shape;
  std::optional<DType> dtype;
  std::map<std::string, std::string> attrs;
};

struct Node {
  std::string name;
  NodeOp op = NodeOp::kCallFunction;
  std::string target;
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;  // in written order
  Meta meta;
  Graph* graph = nullptr;

  bool is_call() const { return op == NodeOp::kCallFunction || op == NodeOp::kCallMethod; }
  const Value* kwarg(const std::string& key) const;
  // The nodes this node reads, in argument order, each once.
  std::vector<Node*> inputs() const;
  // Replaces every reference to `from` in this node's arguments with `to`.
  void replace_input(Node* from, Node* to);
  // "add_1 = call_method[target=add_](args = (%x, %y), kwargs = {})"
  std::string to_string() const;
};

}  // namespace inplace
