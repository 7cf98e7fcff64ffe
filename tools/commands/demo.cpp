// inplace demo [--size S] [--prompt-len P] [--steps N] [--s-max L] [--check-steps K] [--seed X]
//              [--threads T] [--dtype f32|bf16] [--no-alias] [--device cpu|cuda]
//              [--cuda-graph on|off] [--save FILE | --load FILE]
// The main job at real size: the built-in Llama-style model prefills a prompt and decodes N
// greedy tokens into caches the caller owns, with a live progress line; the first steps are
// checked against the eager interpreter (logits and caches).
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "core/error.h"
#include "measure.h"
#include "memory_usage.h"
#include "models/llama.h"
#include "models/llama_runner.h"

namespace inplace::cli {

namespace {

using models::LlamaConfig;

// Largest |a - b| over max(1, |b|), and whether every element is within `tol` of it.
double max_rel_diff(const Tensor& a, const Tensor& b) {
  IP_CHECK(a.shape() == b.shape(), kShapeMismatch, "[demo] compared tensors differ in shape");
  double worst = 0;
  const Tensor ha = a.device().is_cpu() ? a.contiguous() : a.to_device(Device::cpu());
  const Tensor hb = b.device().is_cpu() ? b.contiguous() : b.to_device(Device::cpu());
  const float* pa = ha.data<float>();
  const float* pb = hb.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i)
    worst =
        std::max(worst, std::fabs(double(pa[i]) - pb[i]) / std::max(1.0, std::fabs(double(pb[i]))));
  return worst;
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Engines loaded with --load must be the ones these options describe.
void check_loaded_engines(const models::LlamaEngines& e, const LlamaConfig& c, int64_t prompt_len,
                          const std::string& path) {
  const std::vector<Binding>& in = e.decode->inputs();
  IP_CHECK(in.size() == static_cast<size_t>(2 + 2 * c.n_layers) && in[2].shape == c.cache_shape(),
           kInvalidArgument, "[demo] ", path, ": its decode engine takes ", in.size(),
           " inputs with caches ", in.size() > 2 ? shape_str(in[2].shape) : "(none)",
           ", but --size ", c.size, " --s-max ", c.s_max, " has ", 2 + 2 * c.n_layers,
           " inputs with caches ", shape_str(c.cache_shape()),
           "; pass the options it was saved with");
  IP_CHECK(e.prefill && e.prefill->inputs()[0].shape.back() == prompt_len, kInvalidArgument,
           "[demo] ", path, ": its prefill engine takes ",
           e.prefill ? e.prefill->inputs()[0].shape.back() : 0, " prompt tokens, not --prompt-len ",
           prompt_len);
}

}  // namespace

std::vector<int64_t> demo_prompt(const LlamaConfig& c, int64_t length) {
  std::vector<int64_t> prompt;
  for (int64_t i = 0; i < length; ++i)
    prompt.push_back((i * 7919 + 13 + static_cast<int64_t>(c.seed)) % c.vocab);
  return prompt;
}

int run_demo(const std::vector<std::string>& args) {
  std::string size = "small", prompt_s = "32", steps_s = "256", s_max_s = "1024", check_s = "3",
              seed_s = "0", threads_s = "1", dtype_s = "f32", device_s = "cpu", graph_s = "on";
  std::string save_path, load_path;
  bool no_alias = false;
  ArgParser p("demo",
              "Prefills a prompt and decodes greedy tokens with the built-in Llama-style model\n"
              "(caches owned by the caller, written in place), checking the first steps against\n"
              "the eager interpreter; prints tokens/s, per-step p50/p90 and peak memory.");
  p.option("--size", "tiny|small|medium|large", &size, "model size (default small: 111 MB in f32)");
  p.option("--prompt-len", "P", &prompt_s, "prompt tokens (default 32)");
  p.option("--steps", "N", &steps_s, "greedy decode steps (default 256)");
  p.option("--s-max", "L", &s_max_s, "cache slots (default 1024)");
  p.option("--check-steps", "K", &check_s,
           "decode steps checked against the eager interpreter (default 3)");
  p.option("--seed", "X", &seed_s, "weights and prompt seed (default 0)");
  p.option("--dtype", "f32|bf16", &dtype_s,
           "weight dtype (default f32; bf16 halves the bytes read, compute stays f32)");
  p.option("--threads", "T", &threads_s, "threads the engines' kernels share (default 1)");
  p.flag("--no-alias", &no_alias, "the copy-back engines (every new cache copied back)");
  p.option("--device", "cpu|cuda", &device_s, "where the engines run (default cpu)");
  p.option("--cuda-graph", "on|off", &graph_s,
           "on a GPU: capture the step once and replay it (default on)");
  p.option("--save", "FILE", &save_path,
           "also save both engines as one program file (the weights once)");
  p.option("--load", "FILE", &load_path,
           "decode with the engines of FILE (from --save; memory-mapped) instead of compiling; "
           "weights are made only for the eager check");
  if (!p.parse(args)) return 0;
  if (!save_path.empty() && !load_path.empty())
    throw UsageError("demo: give --save or --load, not both");
  single_threaded_blas();
  const int64_t s_max = parse_int_option("--s-max", s_max_s, 2, 1 << 20);
  const int64_t prompt_len = parse_int_option("--prompt-len", prompt_s, 1, s_max - 1);
  const int64_t steps = parse_int_option("--steps", steps_s, 1, s_max - prompt_len);
  const int64_t check_steps = parse_int_option("--check-steps", check_s, 0, steps);
  const auto seed = static_cast<uint64_t>(parse_int_option("--seed", seed_s, 0, 1 << 30));
  const int threads = static_cast<int>(parse_int_option("--threads", threads_s, 1, 256));
  const Device device = Device::parse(device_s);
  if (graph_s != "on" && graph_s != "off") throw UsageError("--cuda-graph expects on or off");
  const bool cuda_graph = !device.is_cpu() && graph_s == "on";

  const LlamaConfig c = models::llama_config(size, s_max, seed, parse_weight_dtype(dtype_s));
  std::printf(
      "model %s: %lld layers, d_model %lld, %lld heads (%lld kv), ffn %lld, vocab %lld: "
      "%.1fM parameters, %s of weights (%s)\n",
      size.c_str(), (long long)c.n_layers, (long long)c.d_model, (long long)c.n_heads,
      (long long)c.n_kv_heads, (long long)c.ffn, (long long)c.vocab,
      static_cast<double>(c.parameters()) / 1e6, mib(c.weight_bytes()).c_str(),
      dtype_name(c.weight_dtype));
  // The weights the graphs are built from: the engines' own when compiled here (shared, not
  // copied); with --load only the eager check needs them (a second copy, dropped after it).
  std::unique_ptr<models::LlamaWeights> w;
  if (load_path.empty() || check_steps > 0) {
    const int64_t t0 = now_ns();
    w = std::make_unique<models::LlamaWeights>(models::llama_weights(c));
    std::printf("weights made in %.0f ms\n", ms_since(t0));
  }
  models::LlamaEngines engines;
  const int64_t t1 = now_ns();
  if (load_path.empty()) {
    engines = models::compile_llama(c, *w, prompt_len, !no_alias, device);
    std::printf("compiled the %s prefill (%lld tokens) and decode engines in %.0f ms\n",
                no_alias ? "copy-back" : "aliased", (long long)prompt_len, ms_since(t1));
  } else {
    engines = models::load_llama_engines(load_path);
    IP_CHECK(engines.decode->device() == device, kInvalidArgument, "[demo] ", load_path,
             " holds engines for device '", engines.decode->device().str(), "'; give --device ",
             engines.decode->device().str());
    std::printf("loaded %s (memory-mapped) in %.1f ms\n", load_path.c_str(), ms_since(t1));
    check_loaded_engines(engines, c, prompt_len, load_path);
  }
  if (!save_path.empty()) {
    const int64_t ts = now_ns();
    models::save_llama_engines(engines, save_path);
    std::printf("saved both engines to %s in %.0f ms\n", save_path.c_str(), ms_since(ts));
  }
  const int64_t weight_bytes = models::llama_engine_weight_bytes(engines);
  const int64_t arena_bytes = engines.decode->plan().arena_bytes +
                              (engines.prefill ? engines.prefill->plan().arena_bytes : 0);
  std::printf("engine weights %s, arenas %s (prefill and decode)\n", mib(weight_bytes).c_str(),
              mib(arena_bytes).c_str());

  std::vector<Tensor> caches = models::llama_new_caches(c, device);
  std::vector<const void*> addresses;
  for (const Tensor& t : caches) addresses.push_back(t.data_ptr());
  const int64_t cache_bytes = 2 * c.n_layers * c.cache_shape_elements() * 4;
  std::printf("caches: %lld x [1, %lld, %lld, %lld] float32 = %s, owned by the caller (%s)\n",
              (long long)(2 * c.n_layers), (long long)c.n_kv_heads, (long long)s_max,
              (long long)c.head_dim(), mib(cache_bytes).c_str(), device.str().c_str());
  models::LlamaEngineRunner engine(c, engines, caches, threads);
  engine.set_cuda_graph(cuda_graph);
  std::unique_ptr<models::LlamaEagerRunner> eager;
  if (check_steps > 0)
    eager =
        std::make_unique<models::LlamaEagerRunner>(c, *w, prompt_len, models::llama_new_caches(c));

  const std::vector<int64_t> prompt = demo_prompt(c, prompt_len);
  double worst = 0;
  const int64_t tp = now_ns();
  Tensor logits = engine.prefill(prompt);
  const double prefill_ms = ms_since(tp);
  if (eager) worst = std::max(worst, max_rel_diff(logits, eager->prefill(prompt)));
  int64_t token = models::argmax_token(logits);
  std::vector<int64_t> generated{token};
  std::vector<double> step_ms;
  const bool tty = isatty(fileno(stdout));
  bool decode_peak = false;
  int64_t peak_before_decode = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t pos = prompt_len + i;
    if (i == check_steps) {
      // The eager check is over: its caches and weights go, and the peak restarts here.
      eager.reset();
      w.reset();
      peak_before_decode = peak_rss_since_reset_bytes();
      decode_peak = reset_peak_rss();
    }
    const int64_t ts = now_ns();
    logits = engine.decode(token, pos);
    if (!device.is_cpu()) engine.session().synchronize();  // the step, done
    step_ms.push_back(ms_since(ts));
    if (i < check_steps) {
      const Tensor ref = eager->decode(token, pos);
      worst = std::max(worst, max_rel_diff(logits, ref));
      IP_CHECK(models::argmax_token(ref) == models::argmax_token(logits), kInternal,
               "[demo] the engine chose token ", models::argmax_token(logits), " at position ", pos,
               ", the eager interpreter ", models::argmax_token(ref));
      if (i + 1 == check_steps)
        for (size_t j = 0; j < caches.size(); ++j)
          worst = std::max(worst, max_rel_diff(caches[j], eager->caches()[j]));
    }
    token = models::argmax_token(logits);
    generated.push_back(token);
    if (tty && (i % 8 == 7 || i + 1 == steps)) {
      std::printf("\r  decoding: step %lld/%lld  position %lld  token %5lld  %.2f ms/step   ",
                  (long long)(i + 1), (long long)steps, (long long)pos, (long long)token,
                  step_ms.back());
      std::fflush(stdout);
    }
  }
  if (tty) std::printf("\n");
  bool same_address = true;
  for (size_t j = 0; j < caches.size(); ++j) same_address &= caches[j].data_ptr() == addresses[j];

  double total = 0;
  for (double v : step_ms) total += v;
  std::printf("prefill: %lld tokens in %.1f ms\n", (long long)prompt_len, prefill_ms);
  std::printf(
      "decode: %lld steps on %d thread(s), %.1f tokens/s, per step p50 %.2f ms, p90 %.2f "
      "ms\n",
      (long long)steps, threads, 1000.0 * static_cast<double>(steps) / total,
      percentile(step_ms, 0.5), percentile(step_ms, 0.9));
  std::printf(
      "bytes written to the caches per step: %lld (%lld layers x k,v x %lld heads x "
      "%lld floats)%s\n",
      (long long)(2 * c.n_layers * c.n_kv_heads * c.head_dim() * 4), (long long)c.n_layers,
      (long long)c.n_kv_heads, (long long)c.head_dim(),
      no_alias ? "; the copy-back engine also copies every cache back" : "");
  // getrusage's peak restarts with the reset: the whole run's is the larger of the two phases.
  std::printf(
      "peak memory: %s (the whole run: making or loading weights, compiling, the eager "
      "check)\n",
      mib(std::max({peak_rss_bytes(), peak_before_decode,
                    decode_peak ? peak_rss_since_reset_bytes() : 0}))
          .c_str());
  if (decode_peak) {
    const int64_t peak = peak_rss_since_reset_bytes();
    const int64_t floor = weight_bytes + cache_bytes + arena_bytes;
    std::printf(
        "peak memory while decoding (steps %lld-%lld): %s = %.2fx (weights %s + caches %s + "
        "arenas %s = %s)\n",
        (long long)check_steps + 1, (long long)steps, mib(peak).c_str(),
        static_cast<double>(peak) / static_cast<double>(floor), mib(weight_bytes).c_str(),
        mib(cache_bytes).c_str(), mib(arena_bytes).c_str(), mib(floor).c_str());
  }
  std::printf("caches still the caller's tensors (same addresses): %s\n",
              same_address ? "yes" : "NO");
  if (!device.is_cpu()) {
    const ContextStats st = engine.session().stats("decode");
    std::printf(
        "on %s: CUDA graph %s (%lld capture(s), %lld replays); runtime scalars evaluated on the "
        "%s (%lld host reads)\n",
        device.str().c_str(), cuda_graph ? "on" : "off", (long long)st.counter("graph_captures"),
        (long long)st.counter("graph_replays"), st.counter("scalars_on_device") ? "device" : "host",
        (long long)st.host_scalar_reads);
  }
  if (check_steps > 0)
    std::printf(
        "checked against the eager interpreter: prefill + %lld decode steps, same tokens, "
        "largest logit/cache difference %.2g (relative)\n",
        (long long)check_steps, worst);
  std::printf("tokens:");
  for (size_t j = 0; j < generated.size() && j < 24; ++j)
    std::printf(" %lld", (long long)generated[j]);
  std::printf("%s\n", generated.size() > 24 ? " ..." : "");
  IP_CHECK(same_address, kInternal, "[demo] a cache moved: the engine did not write in place");
  const double tol = device.is_cpu() ? 1e-4 : 1e-3;  // a GPU sums in another order
  IP_CHECK(worst <= tol, kInternal, "[demo] the engine differs from the eager interpreter by ",
           worst, " (relative), over the ", tol, " tolerance");
  return 0;
}

}  // namespace inplace::cli
