// `inplace run`: call.<i> holds each output's value when call i returned, also where the output
// is a view of session state that later calls and a reset overwrite (compared with the eager
// interpreter run call by call); a calls file naming one session both as 1 and as "1" is
// refused, naming both entries.
#include "cli/cli_util.h"
#include "frontend/safetensors.h"
#include "interpreter/interpreter.h"
#include "ir/builder.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// cache[:, :, pos:pos+1] = k; return cache[:, :, 0:2], a view of the runtime-owned cache.
std::unique_ptr<Graph> write_and_peek() {
  GraphBuilder b("step");
  Node* k = b.placeholder("k");
  b.set_meta(k, {1, 1, 1, 2}, DType::kFloat32);
  Node* pos = b.placeholder("pos");
  b.set_meta(pos, {}, DType::kInt64);
  Node* cache = b.get_attr("cache", Tensor::zeros({1, 1, 4, 2}, DType::kFloat32));
  Node* end = b.call_function("_operator.add", {pos, 1});
  b.call_function("_operator.setitem",
                  {cache, arg::tuple({arg::slice(), arg::slice(), arg::slice(pos, end)}), k});
  b.output(b.call_function("_operator.getitem",
                           {cache, arg::tuple({arg::slice(), arg::slice(), arg::slice(0, 2)})}));
  return b.build();
}

using CliRun = Cli;

TEST_F(CliRun, EachCallsOutputIsItsValueAtThatCallEvenAViewOfState) {
  std::unique_ptr<Graph> g = write_and_peek();
  write_graph(*g, "step.json");
  CliResult c = run("compile --method step=" + path("step.json") + " -o " + path("p.inplace"));
  ASSERT_EQ(c.code, 0) << c.err;
  // Session a: rows 0 and 1 written, a reset, row 1 written again.
  struct Call {
    float k;
    int64_t pos;
    bool reset_before;
  };
  std::vector<Call> calls = {{1, 0, false}, {2, 1, false}, {3, 1, true}};
  std::vector<std::string> entries;
  std::vector<size_t> index;  // the script entry of each call
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].reset_before) entries.push_back(R"({"session": "a", "reset": true})");
    index.push_back(entries.size());
    write_safetensors(path(str_cat("in", i, ".safetensors")),
                      {{"k", Tensor::full({1, 1, 1, 2}, calls[i].k, DType::kFloat32)},
                       {"pos", Tensor::scalar(calls[i].pos, DType::kInt64)}});
    entries.push_back(
        str_cat(R"({"session": "a", "method": "step", "inputs": "in)", i, R"(.safetensors"})"));
  }
  std::string script = "[";
  for (size_t e = 0; e < entries.size(); ++e) script += (e ? ", " : "") + entries[e];
  script += "]";
  std::ofstream(path("calls.json")) << script;
  CliResult r = run("run " + path("p.inplace") + " --calls " + path("calls.json") + " --out " +
                    path("out.safetensors"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::map<std::string, Tensor> out = read_safetensors(path("out.safetensors"));

  // Eager, call by call, each output copied when its call returns.
  State state = initial_state(*g);
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].reset_before) state = initial_state(*g);
    std::map<std::string, Value> in = {
        {"k", Value::from_tensor(Tensor::full({1, 1, 1, 2}, calls[i].k, DType::kFloat32))},
        {"pos", Value::from_tensor(Tensor::scalar(calls[i].pos, DType::kInt64))}};
    Tensor want = run_eager(*g, in, &state).flat.at(0).tensor.clone();
    EXPECT_TRUE(tensor_equal(out.at(str_cat("call.", index[i], ".output.0")), want))
        << "call " << i << ": " << out.at(str_cat("call.", index[i], ".output.0")).to_string()
        << " vs eager " << want.to_string();
  }
  // The first call saw row 0 only: not the cache after the later calls or the reset.
  EXPECT_TRUE(tensor_equal(out.at("call.0.output.0"),
                           Tensor::from_vector<float>({1, 1, 0, 0}, {1, 1, 2, 2})));
  EXPECT_TRUE(tensor_equal(out.at("session.a.state.cache"), state.at("cache")));
}

TEST_F(CliRun, OneSessionNamedAsAnIntegerAndAsAStringIsRefused) {
  std::unique_ptr<Graph> g = write_and_peek();
  write_graph(*g, "step.json");
  ASSERT_EQ(run("compile --method step=" + path("step.json") + " -o " + path("p.inplace")).code, 0);
  write_safetensors(path("in.safetensors"),
                    {{"k", Tensor::full({1, 1, 1, 2}, 1.0, DType::kFloat32)},
                     {"pos", Tensor::scalar(int64_t{0}, DType::kInt64)}});
  std::ofstream(path("calls.json"))
      << R"([{"session": 1, "method": "step", "inputs": "in.safetensors"},
            {"session": "1", "method": "step", "inputs": "in.safetensors"}])";
  CliResult r = run("run " + path("p.inplace") + " --calls " + path("calls.json") + " --out " +
                    path("out.safetensors"));
  EXPECT_TRUE(one_line_error(r, 1, {"calls.json", "entry 1", "\"1\"", "entry 0", "integer 1"}));
  // Spelled one way throughout, both spellings work.
  for (const char* s : {"1", "\"1\""}) {
    std::ofstream(path("calls.json"))
        << str_cat(R"([{"session": )", s, R"(, "method": "step", "inputs": "in.safetensors"}, )",
                   R"({"session": )", s, R"(, "method": "step", "inputs": "in.safetensors"}])");
    CliResult ok = run("run " + path("p.inplace") + " --calls " + path("calls.json") + " --out " +
                       path("out.safetensors"));
    EXPECT_EQ(ok.code, 0) << ok.err;
  }
}

}  // namespace
