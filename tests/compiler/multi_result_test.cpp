// A graph that returns a multi-result op as it is (torch.max(x, -1), sort, topk, unbind, a
// tuple around one) returns every result, as eager flattens them (output.<i>): the compiled
// engine (aliased and copy-back) and the engine saved and loaded back agree with eager on the
// count and on every value, and the mutated input's output comes after them.
#include "compiler/differential.h"
#include "engine/engine_file.h"
#include "frontend/graph_json.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// x: [3, 5] float32; `body` are the nodes after the placeholder (x_1 = x + 0 first, so the
// results are fresh), `result` the output node's argument.
std::unique_ptr<Graph> graph_of(const std::string& body, const std::string& result) {
  std::string text = R"({"format": "inplace.graph", "version": 1, "name": "multi", "nodes": [
    {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {},
     "meta": {"shape": [3, 5], "dtype": "float32"}},
    )" + body + R"(,
    {"name": "output", "op": "output", "target": "output", "args": [)" +
                     result + R"(], "kwargs": {}}]})";
  return read_graph_json_string(text);
}

std::string call(const std::string& name, const std::string& op, const std::string& target,
                 const std::string& args) {
  return R"({"name": ")" + name + R"(", "op": ")" + op + R"(", "target": ")" + target +
         R"(", "args": [)" + args + R"(], "kwargs": {}})";
}

struct Case {
  std::string what, body, result;
};

std::vector<Case> cases() {
  const std::string fn = "call_function", method = "call_method";
  std::vector<Case> c;
  auto both = [&](const std::string& what, const std::string& torch_node,
                  const std::string& aten_node) {
    c.push_back({what + " (torch level)", torch_node, R"({"node": "r"})"});
    c.push_back({what + " (aten level)", aten_node, R"({"node": "r"})"});
  };
  both("max", call("r", fn, "torch.max", R"({"node": "x"}, -1)"),
       call("r", fn, "aten.max.dim", R"({"node": "x"}, -1)"));
  both("sort", call("r", method, "sort", R"({"node": "x"}, -1)"),
       call("r", fn, "aten.sort.default", R"({"node": "x"}, -1)"));
  both("topk", call("r", fn, "torch.topk", R"({"node": "x"}, 2)"),
       call("r", fn, "aten.topk.default", R"({"node": "x"}, 2)"));
  both("unbind", call("r", fn, "torch.unbind", R"({"node": "x"}, 0)"),
       call("r", fn, "aten.unbind.int", R"({"node": "x"}, 0)"));
  // return (torch.max(x, -1),)
  c.push_back({"a tuple around max", call("r", fn, "torch.max", R"({"node": "x"}, -1)"),
               R"({"tuple": [{"node": "r"}]})"});
  // x.add_(1); return x.sort(-1): the mutated input's output follows both results.
  c.push_back({"sort after an in-place add",
               call("a", method, "add_", R"({"node": "x"}, 1.0)") + ",\n" +
                   call("r", method, "sort", R"({"node": "x"}, -1)"),
               R"({"node": "r"})"});
  c.push_back({"max after an in-place add (aten level)",
               call("a", fn, "aten.add_.Tensor", R"({"node": "x"}, 1.0)") + ",\n" +
                   call("r", fn, "aten.max.dim", R"({"node": "x"}, 0)"),
               R"({"node": "r"})"});
  return c;
}

// What every caller gets from an engine: its first original_output_count() outputs.
void expect_user_outputs_equal(const std::shared_ptr<const Engine>& engine, const Graph& g,
                               const Tensor& x) {
  EagerRun ref = run_reference(g, {x});
  ASSERT_GE(ref.outputs.size(), 2u) << "eager flattens every result";
  EXPECT_EQ(engine->original_output_count(), static_cast<int>(ref.outputs.size()));
  Tensor in = x.clone();
  ExecutionContext ctx(engine);
  ctx.bind_input(0, in);
  std::vector<Tensor> outs = ctx.execute();
  outs.resize(std::min<size_t>(outs.size(), engine->original_output_count()));
  ASSERT_EQ(outs.size(), ref.outputs.size());
  for (size_t j = 0; j < outs.size(); ++j)
    EXPECT_TRUE(tensor_equal(outs[j], ref.outputs[j])) << "output " << j;
  EXPECT_TRUE(tensor_equal(in, ref.inputs[0])) << "input x after the call";
}

TEST(MultiResultOutput, EveryResultOfAMultiResultOpIsAnOutputLikeEager) {
  const Tensor x = seeded_uniform({3, 5}, 11);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.what);
    std::unique_ptr<Graph> g = graph_of(c.body, c.result);
    for (bool alias : {true, false}) {
      CompileOptions o;
      o.alias = alias;
      CompiledProgram cp = compile(*g, {x.clone()}, o);
      expect_user_outputs_equal(cp.engine, *g, x);
      if (alias)
        expect_user_outputs_equal(deserialize_engine(serialize_engine(*cp.engine), "test"), *g, x);
    }
    // And on a fresh value: the engine is not frozen at the example.
    expect_engine_exact_on_draws(*g, {x}, {{seeded_uniform({3, 5}, 12)}});
  }
}

// return x.size(0) / x.size() / (x.size(), x * 2): Python ints, as 0-d int64 tensors.
TEST(MultiResultOutput, SizesReturnedAreIntOutputsLikeEager) {
  const Tensor x = seeded_uniform({3, 5}, 13);
  const std::string fn = "call_function", method = "call_method";
  std::vector<Case> sizes = {
      {"x.size(0)", call("r", method, "size", R"({"node": "x"}, 0)"), R"({"node": "r"})"},
      {"x.size()", call("r", method, "size", R"({"node": "x"})"), R"({"node": "r"})"},
      {"(x.size(), x * 2)",
       call("r", method, "size", R"({"node": "x"})") + ",\n" +
           call("m", fn, "_operator.mul", R"({"node": "x"}, 2)"),
       R"({"tuple": [{"node": "r"}, {"node": "m"}]})"},
      {"aten.sym_size.int", call("r", fn, "aten.sym_size.int", R"({"node": "x"}, 1)"),
       R"({"node": "r"})"},
  };
  for (const Case& c : sizes) {
    SCOPED_TRACE(c.what);
    std::unique_ptr<Graph> g = graph_of(c.body, c.result);
    EagerRun ref = run_reference(*g, {x});
    CompiledProgram cp = compile(*g, {x.clone()});
    for (const auto& engine :
         {cp.engine, deserialize_engine(serialize_engine(*cp.engine), "test")}) {
      EXPECT_EQ(engine->original_output_count(), static_cast<int>(ref.outputs.size()));
      Tensor in = x.clone();
      ExecutionContext ctx(engine);
      ctx.bind_input(0, in);
      std::vector<Tensor> outs = ctx.execute();
      ASSERT_EQ(outs.size(), ref.outputs.size());
      for (size_t j = 0; j < outs.size(); ++j)
        EXPECT_TRUE(tensor_equal(outs[j], ref.outputs[j])) << "output " << j;
    }
  }
}

}  // namespace
