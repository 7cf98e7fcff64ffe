// The streaming decoder demo: greedy decoding with a tiny GPT-style decoder whose KV caches are
// owned by the caller and updated in place every step (examples/streaming_decoder/README.md).
//
// The same program (graph.json, traced from the PyTorch model by make_model.py) runs three ways
// on three sets of caches: the eager interpreter, the copy-back engine and the aliased engine.
// Every step's tokens and logits are compared across the three and with PyTorch's own decoding
// (reference.safetensors); at the end the caches are compared too, and the aliased engine's
// caches must still be the caller's very tensors. Then the per-step time of each is measured,
// next to the memory-bandwidth floor of the copy the aliased engine removes.
//
//   build/examples/streaming_decoder [--dir examples/streaming_decoder] [--steps N] [--reps R]
//                                    [--json FILE]
// --json writes the timings (bench/decoder_bench.py collects them). Exit status 0 only when
// everything matched.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <inplace/inplace.h>

using namespace inplace;

namespace {

using Clock = std::chrono::steady_clock;

struct DemoArgs {
  std::string dir = "examples/streaming_decoder";
  int steps = 0;  // 0: every step of the reference
  int reps = 5;
  std::string json;  // where to write the timings, if anywhere
};

DemoArgs parse_args(int argc, char** argv) {
  DemoArgs a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "streaming_decoder: %s needs a value\n", s.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (s == "--dir") {
      a.dir = value();
    } else if (s == "--steps") {
      a.steps = std::atoi(value().c_str());
    } else if (s == "--reps") {
      a.reps = std::max(1, std::atoi(value().c_str()));
    } else if (s == "--json") {
      a.json = value();
    } else {
      std::fprintf(stderr,
                   "usage: streaming_decoder [--dir DIR] [--steps N] [--reps R] [--json FILE]\n"
                   "  DIR holds graph.json, weights.safetensors, inputs.safetensors and\n"
                   "  reference.safetensors (examples/streaming_decoder/make_model.py)\n");
      std::exit(s == "--help" || s == "-h" ? 0 : 2);
    }
  }
  return a;
}

// One way of running a decode step: binds the token, position and caches once, then steps.
struct Runner {
  std::string name;
  std::map<std::string, Tensor> tensors;  // token, pos and the caches, by placeholder name
  // Runs one step on `tensors` (engines bound them once; the eager interpreter reads them).
  std::function<std::vector<Tensor>(const std::map<std::string, Tensor>&)> step;
  std::vector<Tensor> operator()() const { return step(tensors); }
};

std::map<std::string, Tensor> fresh_inputs(const std::map<std::string, Tensor>& example) {
  std::map<std::string, Tensor> t;
  for (const auto& [name, x] : example) t[name] = x.clone();
  return t;
}

Runner eager_runner(const Graph& graph, const std::map<std::string, Tensor>& example) {
  Runner r{"eager", fresh_inputs(example), {}};
  auto state = std::make_shared<State>(initial_state(graph));
  r.step = [&graph, state](const std::map<std::string, Tensor>& tensors) {
    std::map<std::string, Value> in;
    for (const auto& [name, t] : tensors) in[name] = Value::from_tensor(t);
    RunOutput out = run_eager(graph, in, state.get());
    std::vector<Value> leaves;
    flatten_value(out.result, &leaves);
    std::vector<Tensor> flat;
    for (const Value& v : leaves) flat.push_back(v.tensor);
    return flat;
  };
  return r;
}

Runner engine_runner(const std::string& name, const CompiledProgram& cp, const Graph& graph,
                     const std::map<std::string, Tensor>& example) {
  Runner r{name, fresh_inputs(example), {}};
  auto ctx = std::make_shared<ExecutionContext>(cp.engine);
  std::vector<Node*> ph = graph.placeholders();
  for (int i = 0; i < cp.num_user_inputs; ++i) ctx->bind_input(i, r.tensors.at(ph[i]->name));
  r.step = [ctx, n = cp.engine->original_output_count()](const std::map<std::string, Tensor>&) {
    std::vector<Tensor> outs = ctx->execute();
    outs.resize(n);
    return outs;
  };
  return r;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  if (x.size() != y.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

// Bytes per second of a large memcpy on this machine: the floor of any copy.
double copy_bandwidth(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  double best = 0;
  for (int rep = 0; rep < 20; ++rep) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0) best = std::max(best, 2.0 * static_cast<double>(bytes) / s);
    a[rep] = b[bytes - 1 - rep];
  }
  return best;
}

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

int run(const DemoArgs& args) {
  const std::string dir = args.dir + "/";
  auto graph = read_graph_json(dir + "graph.json");
  std::map<std::string, Tensor> example = read_safetensors(dir + "inputs.safetensors");
  std::map<std::string, std::string> meta;
  std::map<std::string, Tensor> ref = read_safetensors(dir + "reference.safetensors", &meta);
  const Tensor& ref_tokens = ref.at("tokens");
  const Tensor& ref_logits = ref.at("logits");
  const int total = static_cast<int>(ref_tokens.numel());
  const int steps = args.steps > 0 ? std::min(args.steps, total) : total;

  // Which placeholders are the caches: those the aliased engine writes in place.
  std::vector<Tensor> examples;
  for (Node* n : graph->placeholders()) {
    auto it = example.find(n->name);
    IP_CHECK(it != example.end(), kNotFound, "[streaming_decoder] ", dir,
             "inputs.safetensors has no tensor '", n->name, "'");
    examples.push_back(it->second);
  }
  CompiledProgram aliased = compile(*graph, examples);
  CompileOptions copy_back_options;
  copy_back_options.alias = false;
  CompiledProgram copy_back = compile(*graph, examples, copy_back_options);

  std::vector<std::string> caches;
  double cache_bytes = 0;
  for (const Mutation& a : aliased.engine->aliased_io()) {
    const Binding& b = aliased.engine->inputs()[a.input];
    caches.push_back(b.name);
    cache_bytes += static_cast<double>(example.at(b.name).nbytes());
  }
  std::printf("inplace streaming decoder: %s (%s)\n", dir.c_str(), graph->name.c_str());
  std::printf("  caches owned by the caller: %zu tensors, %s; aliased I/O:", caches.size(),
              mib(cache_bytes).c_str());
  for (const Mutation& a : aliased.engine->aliased_io())
    std::printf(" %s<-output.%d(%s)", aliased.engine->inputs()[a.input].name.c_str(), a.output,
                mutation_kind_name(a.kind));
  std::printf(
      "\n  aliased engine: %zu steps, arena %lld B; copy-back engine: %zu steps, arena "
      "%lld B\n",
      aliased.engine->plan().steps.size(),
      static_cast<long long>(aliased.engine->plan().arena_bytes),
      copy_back.engine->plan().steps.size(),
      static_cast<long long>(copy_back.engine->plan().arena_bytes));
  IP_CHECK(!caches.empty(), kUnsupported,
           "[streaming_decoder] the aliased engine writes no input in place");

  std::vector<Runner> runners;
  runners.push_back(eager_runner(*graph, example));
  runners.push_back(engine_runner("copy-back", copy_back, *graph, example));
  runners.push_back(engine_runner("aliased", aliased, *graph, example));
  std::vector<const void*> cache_addresses;
  for (const std::string& c : caches)
    cache_addresses.push_back(runners[2].tensors.at(c).data_ptr());

  // Decode: prompt token from inputs.safetensors at position 0, then each step's argmax.
  bool ok = true;
  double logit_vs_torch = 0, logit_vs_eager = 0;
  int token_mismatches = 0;
  std::printf("\ndecoding %d tokens (greedy) from token %lld:\n  ", steps,
              static_cast<long long>(example.at("token").item().to_int()));
  for (int s = 0; s < steps; ++s) {
    std::vector<std::vector<Tensor>> outs;
    for (Runner& r : runners) {
      r.tensors.at("pos").fill(Scalar(int64_t{s}));
      outs.push_back(r());
    }
    const int64_t want = static_cast<int64_t>(ref_tokens.at(s));
    for (size_t i = 0; i < runners.size(); ++i) {
      int64_t got = outs[i][1].item().to_int();
      if (got != want) ++token_mismatches;
      logit_vs_torch = std::max(logit_vs_torch, max_abs_diff(outs[i][0], ref_logits.select(0, s)));
      if (i > 0) logit_vs_eager = std::max(logit_vs_eager, max_abs_diff(outs[i][0], outs[0][0]));
      runners[i].tensors.at("token").copy_from(outs[i][1]);
    }
    std::printf("%lld%s", static_cast<long long>(want), s + 1 < steps ? " " : "\n");
  }
  std::printf("\nchecks:\n");
  auto check = [&](bool pass, const std::string& what) {
    std::printf("  [%s] %s\n", pass ? "ok" : "FAIL", what.c_str());
    ok &= pass;
  };
  check(token_mismatches == 0,
        str_cat("tokens: eager, copy-back and aliased all equal PyTorch's at every step (",
                token_mismatches, " mismatches)"));
  check(logit_vs_eager == 0,
        str_cat("logits: both engines bit-exact with the eager interpreter (max diff ",
                logit_vs_eager, ")"));
  check(logit_vs_torch < 1e-4,
        str_cat("logits: within 1e-4 of PyTorch ", meta.count("torch") ? meta.at("torch") : "",
                " (max diff ", logit_vs_torch, ")"));
  double cache_vs_eager = 0, cache_vs_torch = 0;
  for (const std::string& c : caches) {
    for (size_t i = 1; i < runners.size(); ++i)
      cache_vs_eager = std::max(cache_vs_eager,
                                max_abs_diff(runners[i].tensors.at(c), runners[0].tensors.at(c)));
    if (steps == total && ref.count(c))
      cache_vs_torch = std::max(cache_vs_torch, max_abs_diff(runners[2].tensors.at(c), ref.at(c)));
  }
  check(cache_vs_eager == 0, str_cat("caches: final contents bit-exact across the three (max diff ",
                                     cache_vs_eager, ")"));
  if (steps == total)
    check(cache_vs_torch < 1e-4,
          str_cat("caches: within 1e-4 of PyTorch's (max diff ", cache_vs_torch, ")"));
  bool same_memory = true;
  for (size_t i = 0; i < caches.size(); ++i)
    same_memory &= runners[2].tensors.at(caches[i]).data_ptr() == cache_addresses[i];
  check(same_memory, "caches: the aliased engine wrote into the caller's tensors (same address)");

  // Timing: the whole decode, `reps` times; per-step median over all steps of all reps.
  std::printf("\nper-step time, median of %d steps x %d runs:\n", steps, args.reps);
  std::vector<double> median_us;
  for (Runner& r : runners) {
    std::vector<double> us;
    for (int rep = 0; rep < args.reps; ++rep)
      for (int s = 0; s < steps; ++s) {
        r.tensors.at("pos").fill(Scalar(int64_t{s}));
        auto t0 = Clock::now();
        std::vector<Tensor> out = r();
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        r.tensors.at("token").copy_from(out[1]);
      }
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    median_us.push_back(us[us.size() / 2]);
  }
  const double bw = copy_bandwidth(static_cast<size_t>(cache_bytes) * 4 + (1 << 20));
  // The copy-back engine moves every cache twice more than the aliased one: into fresh memory
  // and back (read + write each): 4 x cache bytes at the machine's copy bandwidth.
  const double copy_floor_us = 4 * cache_bytes / bw * 1e6;
  for (size_t i = 0; i < runners.size(); ++i)
    std::printf("  %-10s %10.1f us\n", runners[i].name.c_str(), median_us[i]);
  std::printf(
      "  aliased saves %.1f us per step (%.2fx vs copy-back); the copy it removes moves "
      "%s, at least %.1f us at this machine's %.1f GB/s copy bandwidth\n",
      median_us[1] - median_us[2], median_us[1] / median_us[2], mib(4 * cache_bytes).c_str(),
      copy_floor_us, bw / 1e9);
  if (!args.json.empty()) {
    FILE* f = std::fopen(args.json.c_str(), "w");
    IP_CHECK(f, kIO, "[streaming_decoder] cannot write ", args.json);
    std::fprintf(f,
                 "{\"steps\": %d, \"reps\": %d, \"cache_bytes\": %.0f, \"eager_us\": %.3f, "
                 "\"copy_back_us\": %.3f, \"aliased_us\": %.3f, \"copy_floor_us\": %.3f, "
                 "\"copy_bandwidth_gbs\": %.3f, \"checks_passed\": %s}\n",
                 steps, args.reps, cache_bytes, median_us[0], median_us[1], median_us[2],
                 copy_floor_us, bw / 1e9, ok ? "true" : "false");
    std::fclose(f);
  }
  std::printf("\n%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  DemoArgs args = parse_args(argc, argv);
  try {
    return run(args);
  } catch (const Error& e) {
    std::fprintf(stderr, "streaming_decoder: %s\n", e.what());
    return 1;
  }
}
