// Engines compiled for CUDA against the cpu eager interpreter: the examples and the randomised
// differential programs, aliased and copy-back, every output and the final contents of every
// input and buffer compared; caller device tensors keep their addresses; one engine reused
// across fresh values (positions read from device memory). Skipped, saying so, without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "compiler/differential.h"
#include "cuda_test_util.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "random_program.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

CompileOptions on_cuda(bool alias) {
  CompileOptions o;
  o.alias = alias;
  o.device = Device::cuda();
  return o;
}

// Runs a compiled CUDA engine on device copies of `inputs` and of the graph's buffers; checks
// every result against `ref` (eager on the cpu) and that aliased outputs are the caller's own
// device tensors.
void run_and_compare(const CompiledProgram& cp, const Graph& g, const std::vector<Tensor>& inputs,
                     const EagerRun& ref, double tol, const char* what) {
  std::vector<Tensor> dev_inputs;
  for (const Tensor& t : inputs) dev_inputs.push_back(t.to_device(Device::cuda()));
  State state = initial_state(g);
  std::map<std::string, Tensor> dev_state;
  for (const auto& [k, v] : state) dev_state[k] = v.to_device(Device::cuda());
  ExecutionContext ctx(cp.engine);
  for (int i = 0; i < cp.num_user_inputs; ++i) ctx.bind_input(i, dev_inputs[i]);
  for (const auto& [index, target] : cp.lifted_buffers) ctx.bind_input(index, dev_state.at(target));
  std::vector<Tensor> outs = ctx.execute();
  for (const Mutation& a : cp.engine->aliased_io()) {
    const Tensor& in = a.input < cp.num_user_inputs
                           ? dev_inputs[a.input]
                           : dev_state.at(cp.program.context.input_names[a.input]);
    EXPECT_EQ(outs[a.output].data_ptr(), in.data_ptr()) << what << ": aliased output " << a.output;
  }
  ASSERT_GE(outs.size(), ref.outputs.size());
  for (size_t j = 0; j < ref.outputs.size(); ++j) {
    EXPECT_EQ(outs[j].device(), Device::cuda()) << what << " output " << j;
    EXPECT_TRUE(close(outs[j].to_device(Device::cpu()), ref.outputs[j], tol))
        << what << " output " << j;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_TRUE(close(dev_inputs[i].to_device(Device::cpu()), ref.inputs[i], tol))
        << what << " input " << i;
  for (const auto& [k, v] : ref.state)
    EXPECT_TRUE(close(dev_state.at(k).to_device(Device::cpu()), v, tol)) << what << " buffer " << k;
}

// The op an engine was refused for ("... op 'cat' has no kernel for device 'cuda:0' ..."),
// counted; empty (not counted) for any other error.
std::string refused_op(const Error& e, std::map<std::string, int>* counts) {
  const std::string msg = e.what();
  const size_t end = msg.find("' has no kernel for device 'cuda");
  if (end == std::string::npos) return "";
  const size_t start = msg.rfind("op '", end);
  std::string op = msg.substr(start + 4, end - start - 4);
  ++(*counts)[op];
  return op;
}

std::string summary(const std::map<std::string, int>& counts) {
  std::string s;
  for (const auto& [op, n] : counts) s += str_cat(" ", op, " x", n);
  return s;
}

TEST(CudaEngine, ExamplesEqualEagerAliasedAndCopyBack) {
  IP_REQUIRE_CUDA();
  int ran = 0;
  for (const auto& e : std::filesystem::directory_iterator(INPLACE_SOURCE_DIR "/examples")) {
    if (!std::filesystem::exists(e.path() / "graph.json")) continue;
    SCOPED_TRACE(e.path().string());
    auto g = read_graph_json((e.path() / "graph.json").string());
    auto given = read_safetensors((e.path() / "inputs.safetensors").string());
    std::vector<Tensor> inputs;
    for (Node* n : g->placeholders()) inputs.push_back(given.at(n->name));
    const EagerRun ref = run_reference(*g, inputs);
    for (bool alias : {true, false}) {
      CompiledProgram cp = compile(*g, inputs, on_cuda(alias));
      run_and_compare(cp, *g, inputs, ref, 1e-4, alias ? "aliased" : "copy-back");
    }
    ++ran;
  }
  EXPECT_GE(ran, 4);
}

TEST(CudaEngine, RandomProgramsEqualEager) {
  IP_REQUIRE_CUDA();
  int ran = 0, refused = 0;
  std::map<std::string, int> missing;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    RandomProgram p = make_random_program(seed);
    std::vector<Tensor> inputs;
    for (Node* n : p.graph->placeholders()) inputs.push_back(p.inputs.at(n->name));
    SCOPED_TRACE(::testing::Message() << "seed " << seed << "\n" << p.graph->to_string());
    const EagerRun ref = run_reference(*p.graph, inputs);
    try {
      for (bool alias : {true, false}) {
        CompiledProgram cp = compile(*p.graph, inputs, on_cuda(alias));
        run_and_compare(cp, *p.graph, inputs, ref, 1e-5, alias ? "aliased" : "copy-back");
      }
      ++ran;
    } catch (const Error& e) {
      if (refused_op(e, &missing).empty()) ADD_FAILURE() << "seed " << seed << ": " << e.what();
      ++refused;
    }
    if (::testing::Test::HasFailure()) break;
  }
  std::printf(
      "[gpu suite] random programs: %d compiled for cuda and equal to eager, %d refused "
      "(an op without a cuda kernel)\n",
      ran, refused);
  EXPECT_GE(ran, 100);
}

// One engine per program, compiled once, run on the example and fresh draws of its positions.
TEST(CudaEngine, OneEngineServesFreshValues) {
  IP_REQUIRE_CUDA();
  int ran = 0, draws_run = 0;
  std::map<std::string, int> missing;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    RandomProgramOptions o;
    o.runtime_positions = true;
    RandomProgram p = make_random_program(seed, o);
    const std::vector<Tensor> example = in_placeholder_order(p, p.inputs);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << "\n" << p.graph->to_string());
    std::optional<CompiledProgram> engines[2];
    try {
      for (bool alias : {true, false}) engines[alias] = compile(*p.graph, example, on_cuda(alias));
    } catch (const Error& e) {
      if (refused_op(e, &missing).empty()) ADD_FAILURE() << "seed " << seed << ": " << e.what();
      continue;
    }
    ++ran;
    for (uint64_t k = 0; k < 4; ++k) {
      const std::vector<Tensor> draw =
          k == 0 ? example : in_placeholder_order(p, redraw_inputs(p, seed * 31 + k));
      EagerRun ref;
      try {
        ref = run_reference(*p.graph, draw);
      } catch (const Error&) {
        continue;  // a value eager refuses; the cpu engine tests cover the refusal
      }
      ++draws_run;
      for (bool alias : {true, false})
        run_and_compare(*engines[alias], *p.graph, draw, ref, 1e-5,
                        alias ? "aliased" : "copy-back");
    }
    if (::testing::Test::HasFailure()) break;
  }
  std::printf("[gpu suite] fresh values: %d programs, %d draws (refused:%s)\n", ran, draws_run,
              summary(missing).c_str());
  EXPECT_GE(ran, 40);
}

// cache[:, pos:pos + n] = rows with `pos` a runtime value and n a dynamic dim (up to 4), as the
// Python package's CUDA test writes it (which crashed: the planner read the device example of
// `pos` through its device pointer): one engine per kind, fresh (pos, n) at every call
// (n = 0 included), the cache against eager after each call and at the caller's address.
TEST(CudaEngine, SliceWriteAtARuntimePositionWithADynamicRowCount) {
  IP_REQUIRE_CUDA();
  const std::string json =
      R"JSON({"format": "inplace.graph", "version": 1, "name": "step", "nodes": [{"name": "cache", "op": "placeholder", "target": "cache", "args": [], "kwargs": {}, "meta": {"shape": [2, 16, 3], "dtype": "float32"}}, {"name": "rows", "op": "placeholder", "target": "rows", "args": [], "kwargs": {}, "meta": {"shape": [2, 1, 3], "dtype": "float32"}}, {"name": "pos", "op": "placeholder", "target": "pos", "args": [], "kwargs": {}, "meta": {"shape": [], "dtype": "int64"}}, {"name": "size", "op": "call_method", "target": "size", "args": [{"node": "rows"}, 1], "kwargs": {}}, {"name": "add", "op": "call_function", "target": "_operator.add", "args": [{"node": "pos"}, {"node": "size"}], "kwargs": {}, "meta": {"shape": [], "dtype": "int64"}}, {"name": "setitem", "op": "call_function", "target": "_operator.setitem", "args": [{"node": "cache"}, {"tuple": [{"slice": [null, null, null]}, {"slice": [{"node": "pos"}, {"node": "add"}, null]}]}, {"node": "rows"}], "kwargs": {}}, {"name": "sum_1", "op": "call_method", "target": "sum", "args": [{"node": "cache"}], "kwargs": {"dim": 1}, "meta": {"shape": [2, 3], "dtype": "float32"}}, {"name": "output", "op": "output", "target": "output", "args": [{"node": "sum_1"}], "kwargs": {}}], "constants": {}, "signature": {"inputs": [{"kind": "user_input", "node": "cache"}, {"kind": "user_input", "node": "rows"}, {"kind": "user_input", "node": "pos"}], "outputs": []}})JSON";
  std::unique_ptr<Graph> g = read_graph_json_string(json, ".", "slice_write");
  CompileOptions base = on_cuda(true);
  base.dynamic_dims.push_back({"rows", 1, 4});
  base.value_ranges.push_back({"pos", 0, 15});
  for (bool alias : {true, false}) {
    CompileOptions o = base;
    o.alias = alias;
    const std::vector<Tensor> example = {Tensor::empty({2, 16, 3}, DType::kFloat32),
                                         random_tensor({2, 1, 3}, DType::kFloat32, 1),
                                         Tensor::scalar(0, DType::kInt64)};
    // The examples on the device, as the Python package passes the caller's tensors (the
    // runtime position's example value is read through a host copy).
    std::vector<Tensor> dev_example;
    for (const Tensor& t : example) dev_example.push_back(t.to_device(Device::cuda()));
    CompiledProgram cp = compile(*g, dev_example, o);
    ExecutionContext ctx(cp.engine);
    Tensor cache_cpu = Tensor::empty({2, 16, 3}, DType::kFloat32);
    Tensor cache = cache_cpu.to_device(Device::cuda());
    void* addr = cache.data_ptr();
    uint32_t seed = 2;
    for (auto [pos, n] : std::vector<std::pair<int64_t, int64_t>>{
             {0, 1}, {1, 4}, {5, 2}, {15, 1}, {7, 0}, {12, 3}}) {
      SCOPED_TRACE(::testing::Message()
                   << (alias ? "aliased" : "copy-back") << " pos " << pos << " n " << n);
      Tensor rows = random_tensor({2, n, 3}, DType::kFloat32, ++seed);
      Tensor p = Tensor::scalar(pos, DType::kInt64);
      EagerRun ref = run_reference(*g, {cache_cpu, rows, p});
      ctx.bind_input(0, cache);
      ctx.bind_input(1, rows.to_device(Device::cuda()));
      ctx.bind_input(2, p.to_device(Device::cuda()));
      std::vector<Tensor> outs = ctx.execute();
      ASSERT_TRUE(close(outs[0].to_device(Device::cpu()), ref.outputs[0], 1e-6));
      cache_cpu = ref.inputs[0];
      ASSERT_TRUE(close(cache.to_device(Device::cpu()), cache_cpu, 0));
      EXPECT_EQ(cache.data_ptr(), addr);
    }
  }
}

}  // namespace
