// Writes graph JSON version 1: one node per line so diffs and reviews stay readable.
#include <cmath>
#include <filesystem>

#include "core/file_io.h"
#include "core/file_sink.h"
#include "frontend/graph_json.h"
#include "frontend/json_util.h"
#include "frontend/safetensors.h"

namespace inplace {

namespace {

using json_util::Json;

Json float_json(double v) {
  if (std::isnan(v)) return Json{{"float", "nan"}};
  if (std::isinf(v)) return Json{{"float", v > 0 ? "inf" : "-inf"}};
  return Json(v);  // nlohmann writes the shortest round-trip form, with ".0" when integral
}

Json tensor_data_json(const Tensor& t) {
  IP_CHECK(t.defined() && !t.is_meta(), kInvalidArgument, "[graph_json] tensor of shape ",
           shape_str(t.shape()), " has no data (undefined or meta) and cannot be written");
  Tensor c = t.contiguous();
  Json data = Json::array();
  visit_dtype(c.dtype(), [&]<typename T>() {
    const T* p = c.data<T>();
    for (int64_t i = 0; i < c.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>)
        data.push_back(p[i]);
      else if constexpr (kIsFloat<T>)
        data.push_back(float_json(static_cast<double>(static_cast<opmath_t<T>>(p[i]))));
      else
        data.push_back(static_cast<int64_t>(p[i]));
    }
  });
  return Json{{"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}, {"data", std::move(data)}};
}

Json value_json(const Value& v) {
  using K = Value::Kind;
  auto items = [&] {
    Json a = Json::array();
    for (const Value& x : v.items) a.push_back(value_json(x));
    return a;
  };
  switch (v.kind) {
    case K::kNone:
      return Json(nullptr);
    case K::kBool:
      return Json(v.b);
    case K::kInt:
      return Json(v.i);
    case K::kFloat:
      return float_json(v.f);
    case K::kString:
      return Json(v.s);
    case K::kList:
      return items();
    case K::kTuple:
      return Json{{"tuple", items()}};
    case K::kDict: {
      Json d = Json::object();
      for (size_t k = 0; k < v.keys.size(); ++k) d[v.keys[k]] = value_json(v.items[k]);
      return Json{{"dict", std::move(d)}};
    }
    case K::kNode:
      IP_CHECK(v.node != nullptr, kInvalidArgument, "[graph_json] dangling node reference");
      return Json{{"node", v.node->name}};
    case K::kSlice:
      return Json{{"slice", items()}};
    case K::kEllipsis:
      return Json{{"ellipsis", true}};
    case K::kDType:
      return Json{{"dtype", dtype_name(v.dtype)}};
    case K::kDevice:
      return Json{{"device", v.s}};
    case K::kTensor:
      return Json{{"tensor", tensor_data_json(v.tensor)}};
  }
  IP_ASSERT(false, "every Value kind has a JSON form");
}

Json node_json(const Node& n) {
  Json j = Json::object();
  j["name"] = n.name;
  j["op"] = node_op_name(n.op);
  j["target"] = n.target;
  Json args = Json::array();
  for (const Value& a : n.args) args.push_back(value_json(a));
  j["args"] = std::move(args);
  Json kwargs = Json::object();
  for (const auto& [k, v] : n.kwargs) kwargs[k] = value_json(v);
  j["kwargs"] = std::move(kwargs);
  if (n.meta.shape || n.meta.dtype || !n.meta.attrs.empty()) {
    Json m = Json::object();
    if (n.meta.shape) m["shape"] = *n.meta.shape;
    if (n.meta.dtype) m["dtype"] = dtype_name(*n.meta.dtype);
    for (const auto& [k, v] : n.meta.attrs)
      if (k != "shape" && k != "dtype") m[k] = v;
    j["meta"] = std::move(m);
  }
  return j;
}

Json signature_json(const Signature& sig) {
  Json inputs = Json::array(), outputs = Json::array();
  for (const SignatureInput& in : sig.inputs) {
    Json e = {{"kind", in.kind}, {"node", in.node}};
    if (!in.target.empty()) e["target"] = in.target;
    inputs.push_back(std::move(e));
  }
  for (const SignatureOutput& out : sig.outputs) {
    Json e = {{"kind", out.kind}};
    if (!out.target.empty()) e["target"] = out.target;
    outputs.push_back(std::move(e));
  }
  return Json{{"inputs", std::move(inputs)}, {"outputs", std::move(outputs)}};
}

std::string dump(const Json& j) {
  try {
    return j.dump();
  } catch (const Json::exception& e) {
    IP_FAIL(kInvalidArgument, "[graph_json] cannot encode: ", e.what());
  }
}

// `constants` maps each get_attr target to its JSON form (inline data or a file reference).
std::string write_with(const Graph& graph, const std::map<std::string, Json>& constants) {
  std::string out = "{\n";
  out += "  \"format\": \"inplace.graph\",\n  \"version\": 1,\n";
  out += "  \"name\": " + dump(Json(graph.name)) + ",\n";
  out += "  \"nodes\": [";
  bool first = true;
  for (const Node* n : graph.nodes()) {
    out += first ? "\n    " : ",\n    ";
    out += dump(node_json(*n));
    first = false;
  }
  out += first ? "],\n" : "\n  ],\n";
  out += "  \"constants\": {";
  first = true;
  for (const auto& [target, j] : constants) {
    out += first ? "\n    " : ",\n    ";
    out += dump(Json(target)) + ": " + dump(j);
    first = false;
  }
  out += first ? "}" : "\n  }";
  if (!graph.signature.empty())
    out += ",\n  \"signature\": " + dump(signature_json(graph.signature));
  out += "\n}\n";
  return out;
}

// Through a temporary file renamed over `path` (core/file_io.h), as every writer here.
void write_text(const std::string& path, const std::string& text) {
  write_file_atomically(path, "graph_json", [&](FileSink& out) { out.write(text); });
}

}  // namespace

std::string write_graph_json(const Graph& graph) {
  std::map<std::string, Json> constants;
  for (const auto& [target, t] : graph.constants) constants[target] = tensor_data_json(t);
  return write_with(graph, constants);
}

void write_graph_json_file(const Graph& graph, const std::string& path,
                           const GraphJsonFileOptions& options) {
  if (options.constants_file.empty()) {
    write_text(path, write_graph_json(graph));
    return;
  }
  std::map<std::string, Json> constants;
  for (const auto& [target, t] : graph.constants)
    constants[target] = Json{{"dtype", dtype_name(t.dtype())},
                             {"shape", t.shape()},
                             {"file", options.constants_file},
                             {"key", target}};
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  write_safetensors((parent / options.constants_file).string(), graph.constants);
  write_text(path, write_with(graph, constants));
}

}  // namespace inplace
