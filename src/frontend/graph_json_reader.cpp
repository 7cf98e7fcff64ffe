// Reads graph JSON version 1. Every check names the file and the node (and the argument path
// inside it) so a bad file from any writer can be fixed from the message alone.
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "core/file_io.h"
#include "frontend/graph_json.h"
#include "frontend/json_util.h"
#include "frontend/safetensors.h"

namespace inplace {

namespace {

using json_util::Json;

// Python data nests a few levels (a tuple of slices in a list); far deeper is a broken file.
constexpr int kMaxValueDepth = 64;

// Leaves of nested tuples/lists: the outputs a signature lists one by one.
size_t count_leaves(const Value& v) {
  if (!v.is_sequence()) return 1;
  size_t n = 0;
  for (const Value& x : v.items) n += count_leaves(x);
  return n;
}

const char* const kValueTags = "tuple, dict, node, slice, ellipsis, dtype, device, float, tensor";

class Reader {
 public:
  Reader(std::string label, std::string base_dir)
      : label_(std::move(label)), base_dir_(std::move(base_dir)) {}

  std::unique_ptr<Graph> read(const Json& root);
  std::vector<std::string> files_read() const {
    std::vector<std::string> out;
    for (const auto& [path, tensors] : files_) out.push_back(path);
    return out;
  }

 private:
  // Path of what is being read, e.g. {"node 'add_1'", "args[1]", "[0]"}.
  struct Scope {
    Scope(Reader* r, std::string part) : r(r) { r->path_.push_back(std::move(part)); }
    ~Scope() { r->path_.pop_back(); }
    Reader* r;
  };

  [[noreturn]] void fail(const std::string& message) const;
  void check(bool cond, const std::string& message) const {
    if (!cond) fail(message);
  }

  std::string read_string(const Json& obj, const char* key, bool required,
                          const std::string& fallback = "");
  std::vector<int64_t> read_shape(const Json& j);
  Value read_value(const Json& j, int depth);
  Value read_tagged(const Json& j, int depth);
  Value read_slice_part(const Json& j, int depth);
  Node* resolve_node(const Json& j);
  Tensor read_tensor(const Json& j);
  Tensor read_inline_data(const Json& data, DType dtype, const Shape& shape);
  Tensor read_file_tensor(const Json& j, const std::string& file);
  void read_node(const Json& j, size_t index);
  void read_meta(const Json& j, Meta* meta);
  void read_signature(const Json& j);

  std::string label_, base_dir_;
  std::vector<std::string> path_;
  std::unique_ptr<Graph> graph_;
  std::map<std::string, Node*> defined_;
  std::map<std::string, size_t> all_names_;  // name -> first index, for "defined later"
  // Loaded safetensors files, and which (file, key) pairs constants already took.
  std::map<std::string, std::map<std::string, Tensor>> files_;
  std::set<std::pair<std::string, std::string>> used_keys_;
};

void Reader::fail(const std::string& message) const {
  // Deeply nested values would make a long path; keep its head and tail.
  std::vector<std::string> parts = path_;
  if (parts.size() > 8) {
    parts.erase(parts.begin() + 4, parts.end() - 2);
    parts.insert(parts.begin() + 4, "...");
  }
  std::string where;
  for (const std::string& p : parts) {
    if (!where.empty() && p[0] != '[' && p != "...") where += ": ";
    where += p;
  }
  throw Error(ErrorCode::kParse,
              str_cat("[graph_json] ", label_, ": ", where, where.empty() ? "" : ": ", message));
}

std::string Reader::read_string(const Json& obj, const char* key, bool required,
                                const std::string& fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || (!required && it->is_null())) {
    check(!required, str_cat("missing field \"", key, "\""));
    return fallback;
  }
  check(it->is_string(),
        str_cat("field \"", key, "\" must be a string, got ", json_util::type_name(*it)));
  return it->get<std::string>();
}

std::vector<int64_t> Reader::read_shape(const Json& j) {
  check(j.is_array(),
        str_cat("\"shape\" must be an array of integers, got ", json_util::type_name(j)));
  std::vector<int64_t> shape;
  for (const Json& d : j) {
    int64_t n = -1;
    check(json_util::get_int64(d, &n) && n >= 0,
          str_cat("\"shape\" entries must be non-negative integers, got ", d.dump()));
    shape.push_back(n);
  }
  return shape;
}

Node* Reader::resolve_node(const Json& j) {
  check(j.is_string(),
        str_cat("{\"node\": ...} must hold a node name, got ", json_util::type_name(j)));
  const std::string& name = j.get_ref<const std::string&>();
  auto it = defined_.find(name);
  if (it != defined_.end()) return it->second;
  check(!all_names_.count(name),
        str_cat("refers to node '", name, "' before it is defined (nodes are in program order)"));
  fail(str_cat("refers to unknown node '", name, "'"));
}

Value Reader::read_slice_part(const Json& j, int depth) {
  if (j.is_null()) return Value::none();
  int64_t v = 0;
  if (json_util::get_int64(j, &v)) return Value::integer(v);
  if (j.is_object() && j.size() == 1 && j.contains("node")) return read_value(j, depth);
  fail(str_cat("slice bounds must be integers, null or {\"node\": name}, got ", j.dump()));
}

Value Reader::read_tagged(const Json& j, int depth) {
  if (j.size() != 1) {
    std::string keys;
    for (auto it = j.begin(); it != j.end(); ++it) keys += (keys.empty() ? "" : ", ") + it.key();
    fail(str_cat("a value object has exactly one key (", kValueTags, "), got {", keys, "}"));
  }
  const std::string& tag = j.begin().key();
  const Json& v = j.begin().value();
  if (tag == "tuple" || tag == "list") {
    check(tag == "tuple", "lists are JSON arrays, not {\"list\": ...}");
    check(v.is_array(),
          str_cat("{\"tuple\": ...} must hold an array, got ", json_util::type_name(v)));
    std::vector<Value> items;
    for (size_t i = 0; i < v.size(); ++i) {
      Scope s(this, str_cat("[", i, "]"));
      items.push_back(read_value(v[i], depth + 1));
    }
    return Value::tuple(std::move(items));
  }
  if (tag == "dict") {
    check(v.is_object(),
          str_cat("{\"dict\": ...} must hold an object, got ", json_util::type_name(v)));
    std::vector<std::string> keys;
    std::vector<Value> items;
    for (auto it = v.begin(); it != v.end(); ++it) {
      Scope s(this, str_cat("['", it.key(), "']"));
      keys.push_back(it.key());
      items.push_back(read_value(it.value(), depth + 1));
    }
    return Value::dict(std::move(keys), std::move(items));
  }
  if (tag == "node") return Value::node_ref(resolve_node(v));
  if (tag == "slice") {
    check(v.is_array() && v.size() == 3,
          str_cat("{\"slice\": ...} must hold [start, stop, step], got ", v.dump()));
    return Value::slice(read_slice_part(v[0], depth + 1), read_slice_part(v[1], depth + 1),
                        read_slice_part(v[2], depth + 1));
  }
  if (tag == "ellipsis") {
    check(v.is_boolean() && v.get<bool>(),
          str_cat("{\"ellipsis\": ...} must be true, got ", v.dump()));
    return Value::ellipsis();
  }
  if (tag == "dtype") {
    check(v.is_string(),
          str_cat("{\"dtype\": ...} must hold a string, got ", json_util::type_name(v)));
    DType t;
    check(parse_dtype(v.get_ref<const std::string&>(), &t),
          str_cat("unknown dtype '", v.get_ref<const std::string&>(), "'"));
    return Value::dtype_value(t);
  }
  if (tag == "device") {
    check(v.is_string(),
          str_cat("{\"device\": ...} must hold a string, got ", json_util::type_name(v)));
    return Value::device(v.get<std::string>());
  }
  if (tag == "float") {
    std::string s = v.is_string() ? v.get<std::string>() : "";
    if (s == "inf") return Value::floating(std::numeric_limits<double>::infinity());
    if (s == "-inf") return Value::floating(-std::numeric_limits<double>::infinity());
    if (s == "nan") return Value::floating(std::numeric_limits<double>::quiet_NaN());
    fail(str_cat("{\"float\": ...} must be \"inf\", \"-inf\" or \"nan\", got ", v.dump()));
  }
  if (tag == "tensor") {
    Scope s(this, "tensor");
    return Value::from_tensor(read_tensor(v));
  }
  fail(str_cat("unknown value object {\"", tag, "\": ...} (expected one of ", kValueTags, ")"));
}

Value Reader::read_value(const Json& j, int depth) {
  check(depth <= kMaxValueDepth, str_cat("values nest deeper than ", kMaxValueDepth, " levels"));
  switch (j.type()) {
    case Json::value_t::null:
      return Value::none();
    case Json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: {
      int64_t v = 0;
      check(json_util::get_int64(j, &v), str_cat("integer ", j.dump(), " does not fit in int64"));
      return Value::integer(v);
    }
    case Json::value_t::number_float:
      return Value::floating(j.get<double>());
    case Json::value_t::binary:  // an integer literal beyond 64 bits (json_util::parse_strict)
      fail(str_cat("integer ", json_util::integer_literal(j), " does not fit in int64"));
    case Json::value_t::string:
      return Value::string(j.get<std::string>());
    case Json::value_t::array: {
      std::vector<Value> items;
      for (size_t i = 0; i < j.size(); ++i) {
        Scope s(this, str_cat("[", i, "]"));
        items.push_back(read_value(j[i], depth + 1));
      }
      return Value::list(std::move(items));
    }
    case Json::value_t::object:
      return read_tagged(j, depth);
    default:
      fail(str_cat("unsupported JSON value ", json_util::type_name(j)));
  }
}

Tensor Reader::read_inline_data(const Json& data, DType dtype, const Shape& shape) {
  check(data.is_array(),
        str_cat("\"data\" must be a flat array of numbers, got ", json_util::type_name(data)));
  int64_t numel = 0;
  if (!json_util::checked_numel(shape, static_cast<int64_t>(data.size()), &numel) ||
      numel != static_cast<int64_t>(data.size())) {
    bool countable = json_util::checked_numel(shape, INT64_MAX, &numel);
    fail(str_cat("\"data\" has ", data.size(), data.size() == 1 ? " value" : " values",
                 " but shape ", shape_str(shape), " needs ",
                 countable ? std::to_string(numel) : std::string("more than int64 can count")));
  }
  Tensor t = Tensor::empty(shape, dtype);
  visit_dtype(dtype, [&]<typename T>() {
    T* p = t.data<T>();
    for (size_t i = 0; i < data.size(); ++i) {
      const Json& e = data[i];
      auto bad = [&](const char* why) {
        fail(str_cat("\"data\"[", i, "] = ", e.dump(), ": ", why, " for ", dtype_name(dtype)));
      };
      if (e.is_boolean()) {
        p[i] = convert<T>(static_cast<int>(e.get<bool>()));
        continue;
      }
      if (e.is_binary())
        fail(str_cat("\"data\"[", i, "] = ", json_util::integer_literal(e),
                     ": integer does not fit in int64"));
      if constexpr (kIsFloat<T>) {
        double v = 0;
        int64_t iv = 0;
        if (e.is_number_float()) {
          v = e.get<double>();
        } else if (json_util::get_int64(e, &iv)) {
          v = static_cast<double>(iv);
        } else if (e.is_object() && e.size() == 1 && e.contains("float")) {
          std::string s = e["float"].is_string() ? e["float"].get<std::string>() : "";
          if (s == "inf")
            v = std::numeric_limits<double>::infinity();
          else if (s == "-inf")
            v = -std::numeric_limits<double>::infinity();
          else if (s == "nan")
            v = std::numeric_limits<double>::quiet_NaN();
          else
            bad("expected {\"float\": \"inf\" | \"-inf\" | \"nan\"}");
        } else {
          bad("expected a number");
        }
        p[i] = convert<T>(v);
      } else {
        int64_t v = 0;
        if (!json_util::get_int64(e, &v)) bad("expected an integer");
        if constexpr (std::is_same_v<T, bool>) {
          if (v != 0 && v != 1) bad("expected true, false, 0 or 1");
          p[i] = v != 0;
        } else {
          if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
              v > static_cast<int64_t>(std::numeric_limits<T>::max()))
            bad("out of range");
          p[i] = static_cast<T>(v);
        }
      }
    }
  });
  return t;
}

Tensor Reader::read_file_tensor(const Json& j, const std::string& file) {
  check(j.contains("key") && j["key"].is_string(),
        "a tensor stored in a file needs a string field \"key\"");
  const std::string key = j["key"].get<std::string>();
  std::filesystem::path p(file);
  std::string full = p.is_absolute() ? file : (std::filesystem::path(base_dir_) / p).string();
  auto it = files_.find(full);
  if (it == files_.end()) {
    try {
      it = files_.emplace(full, read_safetensors(full)).first;
    } catch (const Error& e) {
      fail(e.what());
    }
  }
  auto t = it->second.find(key);
  if (t == it->second.end()) {
    std::string keys;
    size_t shown = 0;
    for (const auto& [k, v] : it->second)
      if (shown++ < 8) keys += (keys.empty() ? "" : ", ") + k;
    if (it->second.size() > 8) keys += ", ...";
    fail(str_cat("key '", key, "' not found in '", full, "' (it has: ", keys, ")"));
  }
  // Two constants naming one key must not share storage: a mutation of one is not the other's.
  bool first_use = used_keys_.insert({full, key}).second;
  return first_use ? t->second : t->second.clone();
}

Tensor Reader::read_tensor(const Json& j) {
  check(j.is_object(), str_cat("a tensor must be an object {\"dtype\", \"shape\", \"data\"} or "
                               "{\"dtype\", \"shape\", \"file\", \"key\"}, got ",
                               json_util::type_name(j)));
  bool has_data = j.contains("data"), has_file = j.contains("file");
  check(has_data != has_file, has_data
                                  ? "a tensor has either \"data\" or \"file\", not both"
                                  : "a tensor needs \"data\" (inline) or \"file\" and \"key\"");
  std::optional<DType> dtype;
  std::optional<Shape> shape;
  if (has_data || j.contains("dtype")) {
    std::string name = read_string(j, "dtype", true);
    DType t;
    check(parse_dtype(name, &t), str_cat("unknown dtype '", name, "'"));
    dtype = t;
  }
  if (has_data || j.contains("shape")) {
    check(j.contains("shape"), "missing field \"shape\"");
    shape = read_shape(j["shape"]);
  }
  if (has_data) return read_inline_data(j["data"], *dtype, *shape);
  check(j["file"].is_string(),
        str_cat("field \"file\" must be a string, got ", json_util::type_name(j["file"])));
  Tensor t = read_file_tensor(j, j["file"].get<std::string>());
  check(!dtype || *dtype == t.dtype(), str_cat("declared dtype ", dtype ? dtype_name(*dtype) : "",
                                               " but the file holds ", dtype_name(t.dtype())));
  check(!shape || *shape == t.shape(), str_cat("declared shape ", shape ? shape_str(*shape) : "",
                                               " but the file holds ", shape_str(t.shape())));
  return t;
}

void Reader::read_meta(const Json& j, Meta* meta) {
  if (j.is_null()) return;
  check(j.is_object(), str_cat("\"meta\" must be an object, got ", json_util::type_name(j)));
  for (auto it = j.begin(); it != j.end(); ++it) {
    Scope s(this, str_cat("meta['", it.key(), "']"));
    if (it.key() == "shape") {
      if (!it->is_null()) meta->shape = read_shape(*it);
    } else if (it.key() == "dtype") {
      if (it->is_null()) continue;
      check(it->is_string(), str_cat("must be a dtype name, got ", json_util::type_name(*it)));
      DType t;
      check(parse_dtype(it->get_ref<const std::string&>(), &t),
            str_cat("unknown dtype '", it->get_ref<const std::string&>(), "'"));
      meta->dtype = t;
    } else if (it->is_string()) {
      meta->attrs[it.key()] = it->get<std::string>();  // annotations passes leave
    }
    // Other entries (FX's val, stack_trace, ...) carry nothing inplace uses.
  }
}

void Reader::read_node(const Json& j, size_t index) {
  Scope where(this, str_cat("nodes[", index, "]"));
  check(j.is_object(), str_cat("a node must be an object, got ", json_util::type_name(j)));
  std::string name = read_string(j, "name", true);
  check(!name.empty(), "node name is empty");
  path_.back() = str_cat("node '", name, "'");
  check(!defined_.count(name), str_cat("node name '", name, "' is used twice"));
  std::string op_name = read_string(j, "op", true);
  NodeOp op;
  check(parse_node_op(op_name, &op),
        str_cat("unknown op '", op_name,
                "' (expected placeholder, get_attr, call_function, call_method or output)"));
  bool needs_target =
      op == NodeOp::kGetAttr || op == NodeOp::kCallFunction || op == NodeOp::kCallMethod;
  std::string target =
      read_string(j, "target", needs_target, op == NodeOp::kOutput ? "output" : name);
  check(!target.empty(), "field \"target\" is empty");

  std::vector<Value> args;
  if (auto it = j.find("args"); it != j.end() && !it->is_null()) {
    check(it->is_array(),
          str_cat("field \"args\" must be an array, got ", json_util::type_name(*it)));
    for (size_t i = 0; i < it->size(); ++i) {
      Scope s(this, str_cat("args[", i, "]"));
      args.push_back(read_value((*it)[i], 1));
    }
  }
  std::vector<std::pair<std::string, Value>> kwargs;
  if (auto it = j.find("kwargs"); it != j.end() && !it->is_null()) {
    check(it->is_object(),
          str_cat("field \"kwargs\" must be an object, got ", json_util::type_name(*it)));
    for (auto kv = it->begin(); kv != it->end(); ++kv) {
      Scope s(this, str_cat("kwargs['", kv.key(), "']"));
      kwargs.emplace_back(kv.key(), read_value(kv.value(), 1));
    }
  }
  if (op == NodeOp::kOutput)
    check(args.size() == 1, str_cat("the output node takes exactly one argument (the returned "
                                    "value or tuple), got ",
                                    args.size()));
  if (op == NodeOp::kGetAttr)
    check(graph_->constants.count(target),
          str_cat("get_attr target '", target, "' has no entry in \"constants\""));

  Meta meta;
  if (auto it = j.find("meta"); it != j.end()) read_meta(*it, &meta);

  // insert_before(nullptr) appends: nodes keep the file's order, so verify() sees it as is.
  Node* n = graph_->insert_before(nullptr, op, target, std::move(args), std::move(kwargs), name);
  IP_ASSERT(n->name == name, "a fresh node name is kept as given");
  n->meta = std::move(meta);
  defined_[name] = n;
}

void Reader::read_signature(const Json& j) {
  Scope where(this, "signature");
  check(j.is_object(), str_cat("must be an object, got ", json_util::type_name(j)));
  static const std::set<std::string> kInputKinds = {"user_input", "parameter", "buffer",
                                                    "constant"};
  static const std::set<std::string> kOutputKinds = {"user_output", "buffer_mutation",
                                                     "user_input_mutation"};
  Signature& sig = graph_->signature;
  std::set<std::string> seen_nodes, buffers;
  if (auto it = j.find("inputs"); it != j.end()) {
    check(it->is_array(), "\"inputs\" must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      Scope s(this, str_cat("inputs[", i, "]"));
      const Json& e = (*it)[i];
      check(e.is_object(), str_cat("must be an object, got ", json_util::type_name(e)));
      SignatureInput in;
      in.kind = read_string(e, "kind", true);
      check(kInputKinds.count(in.kind), str_cat("unknown kind '", in.kind,
                                                "' (expected user_input, parameter, buffer or "
                                                "constant)"));
      in.node = read_string(e, "node", true);
      Node* n = graph_->find(in.node);
      check(n && n->op == NodeOp::kPlaceholder,
            str_cat("\"node\" '", in.node, "' is not a placeholder of the graph"));
      check(seen_nodes.insert(in.node).second,
            str_cat("placeholder '", in.node, "' is listed twice"));
      in.target = read_string(e, "target", in.kind != "user_input", "");
      if (in.kind == "buffer") buffers.insert(in.target);
      sig.inputs.push_back(std::move(in));
    }
  }
  if (auto it = j.find("outputs"); it != j.end()) {
    check(it->is_array(), "\"outputs\" must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      Scope s(this, str_cat("outputs[", i, "]"));
      const Json& e = (*it)[i];
      check(e.is_object(), str_cat("must be an object, got ", json_util::type_name(e)));
      SignatureOutput out;
      out.kind = read_string(e, "kind", true);
      check(kOutputKinds.count(out.kind), str_cat("unknown kind '", out.kind,
                                                  "' (expected user_output, buffer_mutation or "
                                                  "user_input_mutation)"));
      out.target = read_string(e, "target", out.kind != "user_output", "");
      if (out.kind == "buffer_mutation")
        check(buffers.count(out.target), str_cat("buffer_mutation target '", out.target,
                                                 "' is not the target of a \"buffer\" input"));
      if (out.kind == "user_input_mutation") {
        Node* n = graph_->find(out.target);
        check(n && n->op == NodeOp::kPlaceholder,
              str_cat("user_input_mutation target '", out.target,
                      "' is not a placeholder of the graph"));
      }
      sig.outputs.push_back(std::move(out));
    }
    if (Node* o = graph_->output(); o && !sig.outputs.empty()) {
      size_t returned = count_leaves(o->args[0]);
      check(
          returned == sig.outputs.size(),
          str_cat("lists ", sig.outputs.size(), " outputs but the output node returns ", returned));
    }
  }
}

std::unique_ptr<Graph> Reader::read(const Json& root) {
  check(root.is_object(),
        str_cat("the top level must be an object, got ", json_util::type_name(root)));
  auto fmt = root.find("format");
  check(fmt != root.end(), "missing field \"format\" (expected \"inplace.graph\")");
  check(fmt->is_string() && fmt->get_ref<const std::string&>() == "inplace.graph",
        str_cat("\"format\" must be \"inplace.graph\", got ", fmt->dump()));
  auto ver = root.find("version");
  check(ver != root.end(), "missing field \"version\" (expected 1)");
  int64_t version = 0;
  check(json_util::get_int64(*ver, &version),
        str_cat("\"version\" must be an integer, got ", ver->dump()));
  check(version == 1, str_cat("unsupported version ", version, " (this reader reads version 1)"));

  graph_ = std::make_unique<Graph>();
  graph_->name = read_string(root, "name", false, "graph");

  if (auto it = root.find("constants"); it != root.end() && !it->is_null()) {
    check(it->is_object(),
          str_cat("\"constants\" must be an object, got ", json_util::type_name(*it)));
    for (auto c = it->begin(); c != it->end(); ++c) {
      Scope s(this, str_cat("constant '", c.key(), "'"));
      graph_->constants[c.key()] = read_tensor(c.value());
    }
  }

  auto nodes = root.find("nodes");
  check(nodes != root.end(), "missing field \"nodes\"");
  check(nodes->is_array(),
        str_cat("\"nodes\" must be an array, got ", json_util::type_name(*nodes)));
  for (size_t i = 0; i < nodes->size(); ++i) {
    const Json& n = (*nodes)[i];
    if (n.is_object() && n.contains("name") && n["name"].is_string())
      all_names_.emplace(n["name"].get<std::string>(), i);
  }
  for (size_t i = 0; i < nodes->size(); ++i) read_node((*nodes)[i], i);

  if (auto it = root.find("signature"); it != root.end() && !it->is_null()) read_signature(*it);

  try {
    graph_->verify();
  } catch (const Error& e) {
    fail(e.what());
  }
  return std::move(graph_);
}

}  // namespace

std::unique_ptr<Graph> read_graph_json_string(const std::string& text, const std::string& base_dir,
                                              const std::string& label,
                                              std::vector<std::string>* constant_files) {
  Json root = json_util::parse_strict(text, "graph_json", label);
  try {
    Reader reader(label, base_dir);
    std::unique_ptr<Graph> graph = reader.read(root);
    if (constant_files) *constant_files = reader.files_read();
    return graph;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // A nlohmann accessor used on the wrong type, or an allocation failure: still a bad file.
    IP_FAIL(kParse, "[graph_json] ", label, ": ", e.what());
  }
}

std::unique_ptr<Graph> read_graph_json(const std::string& path,
                                       std::vector<std::string>* constant_files) {
  std::string text = read_regular_file(path, "graph_json");
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return read_graph_json_string(text, parent.empty() ? "." : parent.string(), path, constant_files);
}

}  // namespace inplace
