// fused_pointwise on CUDA. Each graph is compiled for cuda twice, with fuse_pointwise (cuda's
// fusion choice: one fused_pointwise launch per chain) and without it (one launch per op), both
// with strict_device (a fused step the cuda kernel refused would have to run on the host: an
// error here). The two engines' outputs must be BITWISE equal: the fused kernel runs the unfused
// kernels' own device functions at their compute types, with their rounding between ops. The
// results are also compared with the cpu eager interpreter within the dtype's tolerance (the
// random chains: 9 in 10 within 5%, as cuda's math differs from the cpu's in the last place).
//  - RandomChains: 2-12 op chains (tests/passes/pointwise_chains.h) over float32, bfloat16,
//    float16, int32, int64 and bool, with broadcast, 0-dim, transposed and strided inputs.
//  - EveryOp: every unary op (gelu both forms), binary op (tensor and Python-number operands,
//    rounding modes, pow by a number's fast-path exponents), comparison, logical op, where,
//    masked_fill and cast, at float32, bfloat16, float16, float64, int64, int32 and bool
//    wherever eager runs it: every opcode of the program at least once.
//  - HfChains: the chains fuse_pointwise takes from Hugging Face decoders (the rotary cos/sin
//    preamble in bf16, GELU-tanh, GeGLU, a scaled embedding, a causal mask).
//  - RandomRowChains: the same chains with row reductions (sum, mean, amax, amin over the last
//    dim, rows of 1 to 600) at float32, bfloat16, float16 and float64: fused_rows steps.
// Skipped, saying so, without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "compiler/differential.h"
#include "compiler/rewrite_differential.h"
#include "cuda_test_util.h"
#include "passes/pointwise_chains.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

struct CudaRun {
  std::string plan;
  std::vector<Tensor> outputs;  // on the host
};

CudaRun run_on_cuda(const Graph& g, const std::vector<Tensor>& inputs, bool fuse) {
  CompileOptions o;
  o.device = Device::cuda();
  o.strict_device = true;
  if (!fuse) o.skip_passes = {"fuse_pointwise"};
  o.fuse_rows = true;  // row reductions fused where the chains have them
  CompiledProgram cp = compile(g, clones(inputs), o);
  std::vector<Tensor> dev;
  for (const Tensor& t : inputs) dev.push_back(t.to_device(Device::cuda()));
  ExecutionContext ctx(cp.engine);
  for (int i = 0; i < cp.num_user_inputs; ++i) ctx.bind_input(i, dev[i]);
  CudaRun r;
  r.plan = cp.engine->describe();
  for (const Tensor& t : ctx.execute()) r.outputs.push_back(t.to_device(Device::cpu()));
  return r;
}

struct Compared {
  bool fused = false;      // the fused engine has a fused_pointwise step
  bool cpu_close = true;   // every output within the tolerance of the cpu's eager run
  std::string cpu_report;  // what was not
};

// Fused == unfused bitwise on cuda (expected), and how close both are to the cpu's eager run.
// `cpu_tol` < 0: the dtype's tolerance.
Compared compare_fused_unfused(const Graph& g, const std::vector<Tensor>& inputs,
                               double cpu_tol = -1) {
  const CudaRun fused = run_on_cuda(g, inputs, true), unfused = run_on_cuda(g, inputs, false);
  const EagerRun ref = run_reference(g, inputs);
  Compared c;
  c.fused = count_of(fused.plan, "= fused_pointwise(") + count_of(fused.plan, "= fused_rows(") > 0;
  EXPECT_EQ(fused.outputs.size(), unfused.outputs.size());
  for (size_t j = 0; j < std::min(fused.outputs.size(), unfused.outputs.size()); ++j) {
    EXPECT_TRUE(bitwise_equal(fused.outputs[j], unfused.outputs[j]))
        << "output " << j << ", fused:\n"
        << fused.plan << "\nunfused:\n"
        << unfused.plan;
    if (j >= ref.outputs.size()) continue;
    const double tol = cpu_tol >= 0 ? cpu_tol : dtype_tolerance(ref.outputs[j].dtype());
    ::testing::AssertionResult near = close(fused.outputs[j], ref.outputs[j], tol);
    if (!near) {
      c.cpu_close = false;
      c.cpu_report += str_cat("output ", j, ": ", near.message(), "\n", unfused.plan);
    }
  }
  return c;
}

// Fused == unfused bitwise, both close to the cpu; whether the chain was fused.
bool expect_fused_equals_unfused(const Graph& g, const std::vector<Tensor>& inputs,
                                 double cpu_tol = -1) {
  const Compared c = compare_fused_unfused(g, inputs, cpu_tol);
  EXPECT_TRUE(c.cpu_close) << "against the cpu: " << c.cpu_report;
  return c.fused;
}

TEST(CudaFusedPointwise, RandomChainsEqualTheUnfusedKernelsBitwise) {
  IP_REQUIRE_CUDA();
  int fused = 0, drawn = 0, close_to_cpu = 0;
  std::string far;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE(str_cat("seed ", seed));
    std::vector<Tensor> inputs;
    ChainWriter w(seed, {.zero_dim_inputs = seed % 2 == 0, .strided_inputs = seed % 3 != 0});
    std::unique_ptr<Graph> g = w.write(&inputs);
    set_cast_dtypes(*g, seed);
    try {
      run_reference(*g, inputs);
    } catch (const Error&) {
      continue;  // a draw eager refuses (a dtype an op lacks)
    }
    ++drawn;
    // Fused against unfused stays bitwise. Against the cpu, a last-place difference of cuda's
    // math (sinf, expf, ...) may grow through up to 12 ops (a cancellation, an integer cast):
    // most chains, not all, must be close.
    const Compared c = compare_fused_unfused(*g, inputs, 0.05);
    fused += c.fused;
    if (c.cpu_close)
      ++close_to_cpu;
    else
      far += str_cat("seed ", seed, ": ", c.cpu_report);
  }
  std::printf(
      "[gpu suite] fused_pointwise, random chains: %d drawn, %d fused, %d close to the cpu\n",
      drawn, fused, close_to_cpu);
  EXPECT_GT(fused, drawn / 2) << fused << " of " << drawn << " chains fused";
  EXPECT_GE(close_to_cpu, drawn * 9 / 10) << far;
}

TEST(CudaFusedPointwise, RandomRowChainsEqualTheUnfusedKernelsBitwise) {
  IP_REQUIRE_CUDA();
  int fused = 0, drawn = 0, close_to_cpu = 0;
  std::string far;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE(str_cat("seed ", seed));
    std::vector<Tensor> inputs;
    ChainWriter w(seed, {.strided_inputs = seed % 3 == 0, .row_reductions = true});
    std::unique_ptr<Graph> g = w.write(&inputs);
    set_cast_dtypes(*g, seed);
    try {
      run_reference(*g, inputs);
    } catch (const Error&) {
      continue;
    }
    ++drawn;
    const CudaRun rows = run_on_cuda(*g, inputs, true);
    if (count_of(rows.plan, "= fused_rows(") == 0) continue;
    ++fused;
    const Compared c = compare_fused_unfused(*g, inputs, 0.05);
    if (c.cpu_close)
      ++close_to_cpu;
    else
      far += str_cat("seed ", seed, ": ", c.cpu_report);
  }
  std::printf(
      "[gpu suite] fused_rows, random chains: %d drawn, %d with row reductions fused, %d "
      "of those close to the cpu\n",
      drawn, fused, close_to_cpu);
  EXPECT_GT(fused, drawn / 4) << fused << " of " << drawn << " chains fused rows";
  EXPECT_GE(close_to_cpu, fused * 9 / 10) << far;
}

using Call = std::function<Node*(const char*, std::vector<Arg>, KwArgs)>;

// A graph of x [3, 1, 8] and y [5, 8] (broadcast to [3, 5, 8]) and a 0-dim z, all of `t`, whose
// output is body(...) followed by an op that fuses with it (so the chain has two members).
std::unique_ptr<Graph> chain(DType t, const std::function<Node*(Call, Node*, Node*, Node*)>& body,
                             std::vector<Tensor>* inputs, uint32_t seed) {
  GraphBuilder b("chain");
  Node* x = b.set_meta(b.placeholder("x"), {3, 1, 8}, t);
  Node* y = b.set_meta(b.placeholder("y"), {5, 8}, t);
  Node* z = b.set_meta(b.placeholder("z"), {}, t);
  Call call = [&](const char* target, std::vector<Arg> a, KwArgs kw) {
    return b.call_function(target, std::move(a), std::move(kw));
  };
  Node* r = body(call, x, y, z);
  b.output(arg::tuple({r}));
  *inputs = {random_tensor({3, 1, 8}, t, seed), random_tensor({5, 8}, t, seed + 1),
             random_tensor({}, t, seed + 2)};
  return b.build();
}

// `op` then a second op over its result: neg (abs at bool, logical_not at bool results).
Node* then_more(Call c, Node* r, DType out) {
  if (out == DType::kBool) return c("aten.logical_not.default", {r}, {});
  return c("aten.abs.default", {r}, {});
}

struct OpCase {
  std::string name;
  std::function<Node*(Call, Node*, Node*, Node*)> body;
};

std::vector<OpCase> every_op() {
  std::vector<OpCase> cases;
  auto add = [&](std::string name, std::function<Node*(Call, Node*, Node*, Node*)> f) {
    cases.push_back({std::move(name), std::move(f)});
  };
  for (const UnaryDecl& d : kUnaryOps) {
    const std::string target = str_cat("aten.", d.name, ".default");
    add(target, [target](Call c, Node* x, Node*, Node*) { return c(target.c_str(), {x}, {}); });
  }
  add("gelu tanh", [](Call c, Node* x, Node*, Node*) {
    return c("aten.gelu.default", {x}, {{"approximate", Arg(std::string("tanh"))}});
  });
  for (const char* op :
       {"aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor",
        "aten.floor_divide.default", "aten.remainder.Tensor", "aten.fmod.Tensor",
        "aten.pow.Tensor_Tensor", "aten.maximum.default", "aten.minimum.default",
        "aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor", "aten.bitwise_xor.Tensor"}) {
    const std::string target = op;
    add(target + " (x, y)", [target](Call c, Node* x, Node* y, Node*) {
      return c(target.c_str(), {x, y}, {});
    });
    add(target + " (y, 0-dim z)", [target](Call c, Node*, Node* y, Node* z) {
      return c(target.c_str(), {y, z}, {});
    });
  }
  for (const char* mode : {"trunc", "floor"})
    add(str_cat("div ", mode), [mode](Call c, Node* x, Node* y, Node*) {
      return c("aten.div.Tensor_mode", {x, y}, {{"rounding_mode", Arg(std::string(mode))}});
    });
  // Python numbers: kept in the compute type (mul, div and the others alike on cuda).
  for (const char* op : {"aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor",
                         "aten.rsub.Scalar"})
    for (double v : {0.1, 3.0, -2.5}) {
      const std::string target = op;
      add(str_cat(target, " by ", v), [target, v](Call c, Node* x, Node*, Node*) {
        return c(target.c_str(), {x, v}, {});
      });
      add(str_cat(target, " by int ", int(v)), [target, v](Call c, Node* x, Node*, Node*) {
        return c(target.c_str(), {x, static_cast<int64_t>(v)}, {});
      });
    }
  for (double e : {2.0, 0.5, 3.0, -1.0, 1.7, -2.0, -0.5})
    add(str_cat("pow ", e), [e](Call c, Node* x, Node*, Node*) {
      return c("aten.pow.Tensor_Scalar", {x, e}, {});
    });
  add("pow int 3", [](Call c, Node* x, Node*, Node*) {
    return c("aten.pow.Tensor_Scalar", {x, int64_t{3}}, {});
  });
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    const std::string t = str_cat("aten.", op, ".Tensor"), s = str_cat("aten.", op, ".Scalar");
    add(t, [t](Call c, Node* x, Node* y, Node*) { return c(t.c_str(), {x, y}, {}); });
    add(s, [s](Call c, Node* x, Node*, Node*) { return c(s.c_str(), {x, 0.5}, {}); });
  }
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) {
    const std::string t = str_cat("aten.", op, ".default");
    add(t, [t](Call c, Node* x, Node* y, Node*) { return c(t.c_str(), {x, y}, {}); });
  }
  add("where", [](Call c, Node* x, Node* y, Node*) {
    return c("aten.where.self", {c("aten.gt.Tensor", {x, y}, {}), x, y}, {});
  });
  add("where with a number", [](Call c, Node* x, Node* y, Node*) {
    return c("aten.where.ScalarOther", {c("aten.lt.Tensor", {x, y}, {}), x, 0.3}, {});
  });
  add("masked_fill", [](Call c, Node* x, Node* y, Node*) {
    return c("aten.masked_fill.Scalar", {y, c("aten.ge.Scalar", {x, 0}, {}), -1.5}, {});
  });
  for (DType to :
       {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt64,
        DType::kInt32, DType::kInt16, DType::kInt8, DType::kUInt8, DType::kBool})
    add(str_cat("cast to ", dtype_name(to)), [to](Call c, Node* x, Node*, Node*) {
      return c("aten._to_copy.default", {c("aten.mul.Tensor", {x, x}, {})}, {{"dtype", Arg(to)}});
    });
  return cases;
}

TEST(CudaFusedPointwise, EveryOpAtEveryDtypeEqualsTheUnfusedKernelsBitwise) {
  IP_REQUIRE_CUDA();
  int fused = 0, run = 0;
  uint32_t seed = 1;
  std::string skipped;
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat16, DType::kFloat64,
                  DType::kInt64, DType::kInt32, DType::kBool})
    for (const OpCase& c : every_op()) {
      SCOPED_TRACE(str_cat(c.name, " at ", dtype_name(t)));
      std::vector<Tensor> inputs;
      std::unique_ptr<Graph> g = chain(
          t,
          [&](Call call, Node* x, Node* y, Node* z) {
            Node* r = c.body(call, x, y, z);
            return r;
          },
          &inputs, seed += 3);
      // The op's result dtype decides the op after it.
      DType out;
      try {
        out = run_reference(*g, inputs).outputs.at(0).dtype();
      } catch (const Error&) {
        skipped += str_cat(" ", c.name, "@", dtype_name(t));
        continue;  // eager does not run this op at this dtype
      }
      g = chain(
          t,
          [&](Call call, Node* x, Node* y, Node* z) {
            return then_more(call, c.body(call, x, y, z), out);
          },
          &inputs, seed);
      // The unfused bitwise ops have no CUDA kernel (strict_device refuses them): compare the
      // fused engine with the cpu alone, where integer results are exact.
      if (c.name.find("bitwise_") != std::string::npos) {
        if (t != DType::kInt64 && t != DType::kInt32 && t != DType::kBool) continue;
        const CudaRun f = run_on_cuda(*g, inputs, true);
        EXPECT_TRUE(bitwise_equal(f.outputs[0], run_reference(*g, inputs).outputs[0])) << f.plan;
        fused += count_of(f.plan, "= fused_pointwise(") > 0;
        ++run;
        continue;
      }
      ++run;
      fused += expect_fused_equals_unfused(*g, inputs, is_floating(out) ? -1 : 0.25);
    }
  std::printf("[gpu suite] fused_pointwise, every op: %d chains, %d fused; eager refuses:%s\n", run,
              fused, skipped.c_str());
  EXPECT_GT(fused, run * 3 / 4) << fused << " of " << run << " chains fused";
}

TEST(CudaFusedPointwise, HuggingFaceChainsAreOneLaunchAndEqualTheUnfusedKernels) {
  IP_REQUIRE_CUDA();
  std::vector<Tensor> inputs;
  // The rotary preamble in bf16: cos(emb) * scaling, cast to the activations' dtype.
  auto g = chain(
      DType::kFloat32,
      [](Call c, Node* x, Node*, Node*) {
        Node* cos = c("aten.mul.Tensor", {c("aten.cos.default", {x}, {}), 1.0}, {});
        return c("aten._to_copy.default", {cos}, {{"dtype", Arg(DType::kBFloat16)}});
      },
      &inputs, 7);
  EXPECT_TRUE(expect_fused_equals_unfused(*g, inputs));
  // GPT-2's GELU-tanh spelled out: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    g = chain(
        t,
        [](Call c, Node* x, Node*, Node*) {
          Node* cube = c("aten.pow.Tensor_Scalar", {x, 3.0}, {});
          Node* inner = c("aten.add.Tensor", {x, c("aten.mul.Tensor", {cube, 0.044715}, {})}, {});
          Node* th = c("aten.tanh.default", {c("aten.mul.Tensor", {inner, 0.7978845608}, {})}, {});
          return c("aten.mul.Tensor",
                   {c("aten.mul.Tensor", {x, 0.5}, {}), c("aten.add.Tensor", {th, 1.0}, {})}, {});
        },
        &inputs, 11);
    EXPECT_TRUE(expect_fused_equals_unfused(*g, inputs));
    // Gemma's GeGLU: gelu_tanh(gate) * up, and its scaled embedding x * sqrt(d) in the dtype.
    g = chain(
        t,
        [](Call c, Node* x, Node* y, Node*) {
          Node* act = c("aten.gelu.default", {x}, {{"approximate", Arg(std::string("tanh"))}});
          return c("aten.mul.Tensor", {c("aten.mul.Tensor", {act, y}, {}), 45.25}, {});
        },
        &inputs, 13);
    EXPECT_TRUE(expect_fused_equals_unfused(*g, inputs));
  }
  // A causal mask: (arange-like y > x) as a float, times the dtype's minimum.
  g = chain(
      DType::kFloat32,
      [](Call c, Node* x, Node* y, Node*) {
        Node* m = c("aten.gt.Tensor", {y, x}, {});
        return c("aten.mul.Tensor",
                 {c("aten._to_copy.default", {m}, {{"dtype", Arg(DType::kFloat32)}}), -3.4e38}, {});
      },
      &inputs, 17);
  EXPECT_TRUE(expect_fused_equals_unfused(*g, inputs));
}

}  // namespace
