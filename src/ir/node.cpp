#include "ir/node.h"

#include <algorithm>
#include <sstream>

namespace inplace {

const char* node_op_name(NodeOp op) {
  switch (op) {
    case NodeOp::kPlaceholder:
      return "placeholder";
    case NodeOp::kGetAttr:
      return "get_attr";
    case NodeOp::kCallFunction:
      return "call_function";
    case NodeOp::kCallMethod:
      return "call_method";
    case NodeOp::kOutput:
      return "output";
  }
  return "?";
}

bool parse_node_op(const std::string& s, NodeOp* out) {
  static const std::pair<const char*, NodeOp> kOps[] = {{"placeholder", NodeOp::kPlaceholder},
                                                        {"get_attr", NodeOp::kGetAttr},
                                                        {"call_function", NodeOp::kCallFunction},
                                                        {"call_method", NodeOp::kCallMethod},
                                                        {"output", NodeOp::kOutput}};
  for (auto& [n, op] : kOps)
    if (s == n) {
      *out = op;
      return true;
    }
  return false;
}

const Value* Node::kwarg(const std::string& key) const {
  for (const auto& [k, v] : kwargs)
    if (k == key) return &v;
  return nullptr;
}

std::vector<Node*> Node::inputs() const {
  std::vector<Node*> out;
  auto add = [&](Node* n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const Value& a : args) for_each_node(a, add);
  for (const auto& kv : kwargs) for_each_node(kv.second, add);
  return out;
}

void Node::replace_input(Node* from, Node* to) {
  auto fix = [&](Node*& n) {
    if (n == from) n = to;
  };
  for (Value& a : args) for_each_node_mut(a, fix);
  for (auto& kv : kwargs) for_each_node_mut(kv.second, fix);
}

std::string Node::to_string() const {
  std::ostringstream os;
  os << name << " = " << node_op_name(op) << "[target=" << target << "](args = (";
  for (size_t i = 0; i < args.size(); ++i) os << (i ? ", " : "") << args[i].to_string();
  if (args.size() == 1) os << ",";
  os << "), kwargs = {";
  for (size_t i = 0; i < kwargs.size(); ++i)
    os << (i ? ", " : "") << kwargs[i].first << ": " << kwargs[i].second.to_string();
  os << "})";
  return os.str();
}

std::string Value::to_string() const {
  std::ostringstream os;
  auto seq = [&](const char* open, const char* close, bool tuple) {
    os << open;
    for (size_t k = 0; k < items.size(); ++k) os << (k ? ", " : "") << items[k].to_string();
    if (tuple && items.size() == 1) os << ",";
    os << close;
  };
  switch (kind) {
    case Kind::kNone:
      os << "None";
      break;
    case Kind::kBool:
      os << (b ? "True" : "False");
      break;
    case Kind::kInt:
      os << i;
      break;
    case Kind::kFloat:
      os << Scalar(f).to_string();
      break;
    case Kind::kString:
      os << "'" << s << "'";
      break;
    case Kind::kList:
      seq("[", "]", false);
      break;
    case Kind::kTuple:
      seq("(", ")", true);
      break;
    case Kind::kDict:
      os << "{";
      for (size_t k = 0; k < items.size(); ++k)
        os << (k ? ", " : "") << "'" << keys[k] << "': " << items[k].to_string();
      os << "}";
      break;
    case Kind::kNode:
      os << "%" << (node ? node->name : std::string("<null>"));
      break;
    case Kind::kSlice:
      os << "slice(" << items[0].to_string() << ", " << items[1].to_string() << ", "
         << items[2].to_string() << ")";
      break;
    case Kind::kEllipsis:
      os << "Ellipsis";
      break;
    case Kind::kDType:
      os << "torch." << dtype_name(dtype);
      break;
    case Kind::kDevice:
      os << "device(type='" << s << "')";
      break;
    case Kind::kTensor:
      os << tensor.to_string(8);
      break;
  }
  return os.str();
}

}  // namespace inplace
