#include "ir/builder.h"

#include <cctype>

namespace inplace {

namespace {
std::vector<Value> values_of(std::vector<Arg> args) {
  std::vector<Value> out;
  out.reserve(args.size());
  for (Arg& a : args) out.push_back(std::move(a.value));
  return out;
}

// FX names a get_attr node after its target with dots made underscores: "layer.cache" ->
// "layer_cache".
std::string attr_hint(const std::string& target) {
  std::string out;
  for (char c : target) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out.empty() ? "attr" : out;
}
}  // namespace

namespace arg {
Value none() {
  return Value::none();
}
Value list(std::vector<Arg> items) {
  return Value::list(values_of(std::move(items)));
}
Value tuple(std::vector<Arg> items) {
  return Value::tuple(values_of(std::move(items)));
}
Value ints(const std::vector<int64_t>& values) {
  return Value::int_list(values);
}
Value dict(KwArgs items) {
  std::vector<std::string> keys;
  std::vector<Value> values;
  for (auto& [k, v] : items) {
    keys.push_back(k);
    values.push_back(std::move(v.value));
  }
  return Value::dict(std::move(keys), std::move(values));
}
Value slice(Arg start, Arg stop, Arg step) {
  return Value::slice(std::move(start.value), std::move(stop.value), std::move(step.value));
}
Value ellipsis() {
  return Value::ellipsis();
}
Value device(std::string name) {
  return Value::device(std::move(name));
}
}  // namespace arg

GraphBuilder::GraphBuilder(std::string name) : graph_(std::make_unique<Graph>()) {
  graph_->name = std::move(name);
}

Node* GraphBuilder::add(NodeOp op, const std::string& target, std::vector<Arg> args, KwArgs kwargs,
                        const std::string& name_hint) {
  IP_CHECK(graph_ != nullptr, kInvalidArgument,
           "[graph_builder] build() already handed the graph over");
  std::vector<std::pair<std::string, Value>> kw;
  for (auto& [k, v] : kwargs) kw.emplace_back(k, std::move(v.value));
  return graph_->add_node(op, target, values_of(std::move(args)), std::move(kw), name_hint);
}

Node* GraphBuilder::placeholder(const std::string& name, std::optional<Arg> default_value) {
  IP_CHECK(graph_ != nullptr, kInvalidArgument,
           "[graph_builder] build() already handed the graph over");
  IP_CHECK(!name.empty(), kInvalidArgument, "[graph_builder] a placeholder needs a name");
  IP_CHECK(graph_->find(name) == nullptr, kInvalidArgument, "[graph_builder] placeholder '", name,
           "': the name is already taken");
  std::vector<Arg> args;
  if (default_value) args.push_back(std::move(*default_value));
  Node* n = add(NodeOp::kPlaceholder, name, std::move(args), {}, name);
  IP_ASSERT(n->name == name, "a free placeholder name is kept");
  return n;
}

Node* GraphBuilder::get_attr(const std::string& target, Tensor value) {
  IP_CHECK(graph_ != nullptr, kInvalidArgument,
           "[graph_builder] build() already handed the graph over");
  IP_CHECK(!target.empty(), kInvalidArgument, "[graph_builder] get_attr needs a target");
  IP_CHECK(!graph_->constants.count(target), kInvalidArgument, "[graph_builder] constant '", target,
           "' is already registered; use get_attr(target) to read it again");
  IP_CHECK(value.defined(), kInvalidArgument, "[graph_builder] constant '", target,
           "' is an undefined tensor");
  graph_->constants[target] = std::move(value);
  return add(NodeOp::kGetAttr, target, {}, {}, attr_hint(target));
}

Node* GraphBuilder::get_attr(const std::string& target) {
  IP_CHECK(graph_ != nullptr && graph_->constants.count(target), kNotFound,
           "[graph_builder] get_attr: no constant '", target, "' registered");
  return add(NodeOp::kGetAttr, target, {}, {}, attr_hint(target));
}

Node* GraphBuilder::call_function(const std::string& target, std::vector<Arg> args, KwArgs kwargs,
                                  const std::string& name_hint) {
  return add(NodeOp::kCallFunction, target, std::move(args), std::move(kwargs), name_hint);
}

Node* GraphBuilder::call_method(const std::string& method, std::vector<Arg> args, KwArgs kwargs,
                                const std::string& name_hint) {
  IP_CHECK(!args.empty(), kInvalidArgument, "[graph_builder] call_method '", method,
           "' needs self as its first argument");
  return add(NodeOp::kCallMethod, method, std::move(args), std::move(kwargs), name_hint);
}

Node* GraphBuilder::output(Arg value) {
  IP_CHECK(graph_ != nullptr && graph_->output() == nullptr, kInvalidArgument,
           "[graph_builder] the graph already has an output node");
  return add(NodeOp::kOutput, "output", {std::move(value)}, {}, "output");
}

Node* GraphBuilder::outputs(std::vector<Arg> values) {
  return output(arg::tuple(std::move(values)));
}

Node* GraphBuilder::set_meta(Node* n, Shape shape, DType dtype) {
  n->meta.shape = std::move(shape);
  n->meta.dtype = dtype;
  return n;
}

void GraphBuilder::set_signature(Signature signature) {
  IP_CHECK(graph_ != nullptr, kInvalidArgument,
           "[graph_builder] build() already handed the graph over");
  graph_->signature = std::move(signature);
}

std::unique_ptr<Graph> GraphBuilder::build() {
  IP_CHECK(graph_ != nullptr, kInvalidArgument,
           "[graph_builder] build() already handed the graph over");
  graph_->verify();
  return std::move(graph_);
}

}  // namespace inplace
