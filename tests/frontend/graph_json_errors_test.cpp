// Malformed graph JSON: every case is an inplace::Error (kParse) whose message names the
// file, the node and what is wrong, each case with its own message.
#include <filesystem>
#include <fstream>
#include <set>

#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "test_util.h"

namespace inplace {
namespace {

using namespace inplace::testing;

// A graph whose nodes are `nodes` (JSON array body), with `extra` top-level fields.
std::string graph_with(const std::string& nodes, const std::string& extra = "") {
  return R"({"format": "inplace.graph", "version": 1, "name": "g", "nodes": [)" + nodes + "]" +
         (extra.empty() ? "" : ", " + extra) + "}";
}
const std::string kX = R"({"name": "x", "op": "placeholder", "target": "x"})";
const std::string kOut = R"({"name": "output", "op": "output", "args": [{"node": "x"}]})";
std::string call(const std::string& args, const std::string& kwargs = "{}") {
  return R"({"name": "y", "op": "call_function", "target": "torch.add", "args": )" + args +
         R"(, "kwargs": )" + kwargs + "}";
}
std::string with_call(const std::string& args, const std::string& kwargs = "{}") {
  return graph_with(kX + ", " + call(args, kwargs) + ", " + kOut);
}
std::string with_constant(const std::string& tensor) {
  return graph_with(kX + R"(, {"name": "w", "op": "get_attr", "target": "w"}, )" + kOut,
                    R"("constants": {"w": )" + tensor + "}");
}
std::string with_signature(const std::string& sig) {
  return graph_with(kX + ", " + kOut, R"("signature": )" + sig);
}

struct Case {
  const char* what;
  std::string text;
  std::vector<std::string> expected;  // substrings of the message
};

std::string error_message(const std::string& text, const std::string& base_dir, ErrorCode* code) {
  try {
    read_graph_json_string(text, base_dir, "case.json");
  } catch (const Error& e) {
    *code = e.code();
    return e.what();
  }
  return "";
}

TEST(GraphJsonErrors, EveryMalformedCaseHasItsOwnMessage) {
  auto dir = std::filesystem::temp_directory_path() /
             ("inplace_graph_json_errors_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  write_safetensors((dir / "w.safetensors").string(), {{"w", ft({1, 2, 3}, {3})}});
  std::ofstream(dir / "bad.safetensors") << "garbage";

  std::string deep = "1";
  for (int i = 0; i < 70; ++i) deep = "[" + deep + "]";

  const std::vector<Case> cases = {
      {"not JSON", "{\"format\": ", {"case.json: invalid JSON", "parse error"}},
      {"top level array", "[]", {"top level must be an object, got array"}},
      {"no format", R"({"version": 1, "nodes": []})", {"missing field \"format\""}},
      {"wrong format",
       R"({"format": "onnx", "version": 1, "nodes": []})",
       {"\"format\" must be \"inplace.graph\", got \"onnx\""}},
      {"no version", R"({"format": "inplace.graph", "nodes": []})", {"missing field \"version\""}},
      {"version 2",
       R"({"format": "inplace.graph", "version": 2, "nodes": []})",
       {"unsupported version 2"}},
      {"version string",
       R"({"format": "inplace.graph", "version": "1", "nodes": []})",
       {"\"version\" must be an integer, got \"1\""}},
      {"no nodes", R"({"format": "inplace.graph", "version": 1})", {"missing field \"nodes\""}},
      {"nodes not array",
       R"({"format": "inplace.graph", "version": 1, "nodes": {}})",
       {"\"nodes\" must be an array, got object"}},
      {"node not object", graph_with("3"), {"nodes[0]: a node must be an object, got integer"}},
      {"node without name",
       graph_with(R"({"op": "placeholder"})"),
       {"nodes[0]: missing field \"name\""}},
      {"name not string",
       graph_with(R"({"name": 7, "op": "placeholder"})"),
       {"nodes[0]: field \"name\" must be a string, got integer"}},
      {"no op", graph_with(R"({"name": "x"})"), {"node 'x': missing field \"op\""}},
      {"unknown op",
       graph_with(R"({"name": "x", "op": "call_module", "target": "m"})"),
       {"node 'x': unknown op 'call_module'"}},
      {"call without target",
       graph_with(kX + R"(, {"name": "y", "op": "call_function"})"),
       {"node 'y': missing field \"target\""}},
      {"duplicate name", graph_with(kX + ", " + kX), {"node 'x': node name 'x' is used twice"}},
      {"later node",
       graph_with(kX + ", " + call(R"([{"node": "z"}])") +
                  R"(, {"name": "z", "op": "placeholder"}, )" + kOut),
       {"node 'y': args[0]: refers to node 'z' before it is defined"}},
      {"unknown node",
       with_call(R"([{"node": "x"}, [1, {"node": "nope"}]])"),
       {"node 'y': args[1][1]: refers to unknown node 'nope'"}},
      {"self reference",
       with_call(R"([{"node": "y"}])"),
       {"node 'y': args[0]: refers to node 'y' before it is defined"}},
      {"args not array",
       with_call("{}"),
       {"node 'y': field \"args\" must be an array, got object"}},
      {"kwargs not object",
       with_call("[]", "[]"),
       {"node 'y': field \"kwargs\" must be an object, got array"}},
      {"unknown value tag",
       with_call(R"([{"foo": 1}])"),
       {"node 'y': args[0]: unknown value object {\"foo\": ...}"}},
      {"two-key value",
       with_call(R"([{"node": "x", "tuple": []}])"),
       {"args[0]: a value object has exactly one key", "got {node, tuple}"}},
      {"list object", with_call(R"([{"list": []}])"), {"lists are JSON arrays"}},
      {"tuple not array", with_call(R"([{"tuple": 3}])"), {"{\"tuple\": ...} must hold an array"}},
      {"dict not object", with_call(R"([{"dict": []}])"), {"{\"dict\": ...} must hold an object"}},
      {"node ref not string",
       with_call(R"([{"node": 1}])"),
       {"{\"node\": ...} must hold a node name, got integer"}},
      {"short slice",
       with_call(R"([{"slice": [1, 2]}])"),
       {"{\"slice\": ...} must hold [start, stop, step], got [1,2]"}},
      {"slice bound",
       with_call(R"([{"slice": [1, "a", null]}])"),
       {"slice bounds must be integers, null or {\"node\": name}, got \"a\""}},
      {"ellipsis false",
       with_call(R"([{"ellipsis": false}])"),
       {"{\"ellipsis\": ...} must be true, got false"}},
      {"unknown dtype value",
       with_call(R"([{"dtype": "float8"}])"),
       {"node 'y': args[0]: unknown dtype 'float8'"}},
      {"dtype not string",
       with_call(R"([{"dtype": 3}])"),
       {"{\"dtype\": ...} must hold a string, got integer"}},
      {"device not string",
       with_call(R"([{"device": null}])"),
       {"{\"device\": ...} must hold a string, got null"}},
      {"bad float word",
       with_call(R"([{"float": "infinity"}])"),
       {"{\"float\": ...} must be \"inf\", \"-inf\" or \"nan\", got \"infinity\""}},
      {"integer too big",
       with_call("[18446744073709551615]"),
       {"integer 18446744073709551615 does not fit in int64"}},
      {"integer of 2^64, which JSON parsers read as a float",
       with_call("[18446744073709551616]"),
       {"node 'y': args[0]: integer 18446744073709551616 does not fit in int64"}},
      {"integer below int64",
       with_call("[{\"node\": \"x\"}, -9223372036854775809]"),
       {"node 'y': args[1]: integer -9223372036854775809 does not fit in int64"}},
      {"integer beyond 64 bits in inline data",
       with_constant(R"({"dtype": "float32", "shape": [1], "data": [100000000000000000000]})"),
       {"\"data\"[0] = 100000000000000000000: integer does not fit in int64"}},
      {"nesting too deep", with_call("[" + deep + "]"), {"values nest deeper than 64 levels"}},
      {"duplicate key",
       graph_with(R"({"name": "x", "op": "placeholder", "name": "z"})"),
       {"key 'name' appears twice in one object"}},
      {"constants not object",
       graph_with(kX + ", " + kOut, R"("constants": [])"),
       {"\"constants\" must be an object, got array"}},
      {"tensor not object", with_constant("[1, 2]"), {"constant 'w': a tensor must be an object"}},
      {"tensor unknown dtype",
       with_constant(R"({"dtype": "complex64", "shape": [1], "data": [1]})"),
       {"constant 'w': unknown dtype 'complex64'"}},
      {"tensor without dtype",
       with_constant(R"({"shape": [1], "data": [1]})"),
       {"constant 'w': missing field \"dtype\""}},
      {"tensor without shape",
       with_constant(R"({"dtype": "float32", "data": [1]})"),
       {"constant 'w': missing field \"shape\""}},
      {"shape not array",
       with_constant(R"({"dtype": "float32", "shape": 3, "data": [1]})"),
       {"\"shape\" must be an array of integers, got integer"}},
      {"negative dim",
       with_constant(R"({"dtype": "float32", "shape": [-1], "data": []})"),
       {"\"shape\" entries must be non-negative integers, got -1"}},
      {"data count",
       with_constant(R"({"dtype": "float32", "shape": [2, 3], "data": [1, 2, 3, 4, 5]})"),
       {"constant 'w': \"data\" has 5 values but shape [2,3] needs 6"}},
      {"data count overflow",
       with_constant(R"({"dtype": "int8", "shape": [4294967296, 4294967296, 4], "data": [1]})"),
       {"needs more than int64 can count"}},
      {"data not array",
       with_constant(R"({"dtype": "float32", "shape": [1], "data": 1})"),
       {"\"data\" must be a flat array of numbers, got integer"}},
      {"int8 range",
       with_constant(R"({"dtype": "int8", "shape": [2], "data": [1, 300]})"),
       {"\"data\"[1] = 300: out of range for int8"}},
      {"float in int data",
       with_constant(R"({"dtype": "int64", "shape": [1], "data": [1.5]})"),
       {"\"data\"[0] = 1.5: expected an integer for int64"}},
      {"string in float data",
       with_constant(R"({"dtype": "float32", "shape": [1], "data": ["1"]})"),
       {"\"data\"[0] = \"1\": expected a number for float32"}},
      {"bool data 2",
       with_constant(R"({"dtype": "bool", "shape": [1], "data": [2]})"),
       {"expected true, false, 0 or 1 for bool"}},
      {"data and file",
       with_constant(
           R"({"dtype": "float32", "shape": [3], "data": [1, 2, 3], "file": "w.safetensors", "key": "w"})"),
       {"a tensor has either \"data\" or \"file\", not both"}},
      {"neither data nor file",
       with_constant(R"({"dtype": "float32", "shape": [3]})"),
       {"a tensor needs \"data\" (inline) or \"file\" and \"key\""}},
      {"file without key",
       with_constant(R"({"file": "w.safetensors"})"),
       {"needs a string field \"key\""}},
      {"missing file",
       with_constant(R"({"file": "nope.safetensors", "key": "w"})"),
       {"constant 'w': [safetensors] cannot open", "nope.safetensors"}},
      {"corrupt file",
       with_constant(R"({"file": "bad.safetensors", "key": "w"})"),
       {"constant 'w': [safetensors]", "bad.safetensors", "header length"}},
      {"missing key",
       with_constant(R"({"file": "w.safetensors", "key": "v"})"),
       {"key 'v' not found in", "(it has: w)"}},
      {"file dtype",
       with_constant(R"({"dtype": "float64", "file": "w.safetensors", "key": "w"})"),
       {"declared dtype float64 but the file holds float32"}},
      {"file shape",
       with_constant(R"({"shape": [4], "file": "w.safetensors", "key": "w"})"),
       {"declared shape [4] but the file holds [3]"}},
      {"get_attr unknown",
       graph_with(kX + R"(, {"name": "w", "op": "get_attr", "target": "v"}, )" + kOut),
       {"node 'w': get_attr target 'v' has no entry in \"constants\""}},
      {"output two args",
       graph_with(kX + R"(, {"name": "output", "op": "output", "args": [1, 2]})"),
       {"node 'output': the output node takes exactly one argument", "got 2"}},
      {"no output", graph_with(kX), {"[verify] graph 'g' has 0 output nodes"}},
      {"node after output",
       graph_with(kX + ", " + kOut + R"(, {"name": "z", "op": "placeholder"})"),
       {"[verify] node 'z' comes after the output node"}},
      {"meta not object",
       graph_with(R"({"name": "x", "op": "placeholder", "meta": 1}, )" + kOut),
       {"node 'x': \"meta\" must be an object, got integer"}},
      {"meta dtype",
       graph_with(R"({"name": "x", "op": "placeholder", "meta": {"dtype": "f32"}}, )" + kOut),
       {"node 'x': meta['dtype']: unknown dtype 'f32'"}},
      {"meta shape",
       graph_with(R"({"name": "x", "op": "placeholder", "meta": {"shape": [1.5]}}, )" + kOut),
       {"node 'x': meta['shape']: \"shape\" entries must be non-negative integers, got 1.5"}},
      {"signature not object", with_signature("[]"), {"signature: must be an object, got array"}},
      {"signature input kind",
       with_signature(R"({"inputs": [{"kind": "weight", "node": "x"}]})"),
       {"signature: inputs[0]: unknown kind 'weight'"}},
      {"signature input node",
       with_signature(R"({"inputs": [{"kind": "user_input", "node": "output"}]})"),
       {"signature: inputs[0]: \"node\" 'output' is not a placeholder"}},
      {"signature buffer target",
       with_signature(R"({"inputs": [{"kind": "buffer", "node": "x"}]})"),
       {"signature: inputs[0]: missing field \"target\""}},
      {"signature input twice",
       with_signature(
           R"({"inputs": [{"kind": "user_input", "node": "x"}, {"kind": "user_input", "node": "x"}]})"),
       {"signature: inputs[1]: placeholder 'x' is listed twice"}},
      {"signature output kind",
       with_signature(R"({"outputs": [{"kind": "loss"}]})"),
       {"signature: outputs[0]: unknown kind 'loss'"}},
      {"signature mutation target",
       with_signature(R"({"outputs": [{"kind": "buffer_mutation", "target": "cache"}]})"),
       {"buffer_mutation target 'cache' is not the target of a \"buffer\" input"}},
      {"signature input mutation",
       with_signature(R"({"outputs": [{"kind": "user_input_mutation", "target": "q"}]})"),
       {"user_input_mutation target 'q' is not a placeholder"}},
      {"signature output count",
       with_signature(R"({"outputs": [{"kind": "user_output"}, {"kind": "user_output"}]})"),
       {"signature: lists 2 outputs but the output node returns 1"}},
  };

  std::set<std::string> messages;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ErrorCode code = ErrorCode::kInternal;
    std::string msg = error_message(c.text, dir.string(), &code);
    ASSERT_FALSE(msg.empty()) << "no error for: " << c.text;
    EXPECT_EQ(code, ErrorCode::kParse) << msg;
    EXPECT_EQ(msg.rfind("[graph_json] case.json: ", 0), 0u) << msg;
    for (const std::string& want : c.expected)
      EXPECT_NE(msg.find(want), std::string::npos) << "message: " << msg << "\nwanted: " << want;
    EXPECT_TRUE(messages.insert(msg).second) << "message repeats: " << msg;
  }
  std::filesystem::remove_all(dir);
}

TEST(GraphJsonErrors, FloatLiteralsBeyondInt64StayFloats) {
  // Only integer literals are refused: 1e19 and 18446744073709551616.0 are floats, as in Python.
  auto g = read_graph_json_string(with_call(R"([{"node": "x"}, 1e19])"));
  auto g2 = read_graph_json_string(with_call(R"([{"node": "x"}, 18446744073709551616.0])"));
  for (const Graph* graph : {g.get(), g2.get()}) {
    const Node* y = graph->find("y");
    ASSERT_NE(y, nullptr);
    ASSERT_EQ(y->args.at(1).kind, Value::Kind::kFloat);
    EXPECT_DOUBLE_EQ(y->args.at(1).f, 1e19 * (graph == g.get() ? 1.0 : 1.8446744073709551616));
  }
}

TEST(GraphJsonErrors, FileErrorsNameThePath) {
  try {
    read_graph_json("/nonexistent/dir/g.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIO);
    EXPECT_NE(std::string(e.what()).find("cannot open '/nonexistent/dir/g.json'"),
              std::string::npos);
  }
  auto path = std::filesystem::temp_directory_path() /
              ("inplace_bad_graph_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << graph_with(kX + R"(, {"name": "y", "op": "call_method"}, )" + kOut);
  try {
    read_graph_json(path.string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "[graph_json] " + path.string() + ": node 'y': missing field \"target\"");
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace inplace
