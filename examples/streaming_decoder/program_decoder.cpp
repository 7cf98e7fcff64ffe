// The streaming decoder as a program: one `prefill` method (prefill.json, any prompt length up
// to --max-prompt) and one `decode` method (graph.json) over the same four KV caches and one
// copy of the weights. The caches are runtime-owned: each Session allocates its own, so two
// conversations run side by side without the caller holding any cache.
//
// Session A prefills the prompt [1] (one token), session B the prompt [1, t1, t2, t3, t4] (the
// reference's own first tokens); then both decode greedily, their calls interleaved. Both must
// reproduce PyTorch's greedy decoding (reference.safetensors): every token, every logit within
// 1e-4, and after the last step the caches. Then A is reset and prefilled again with a longer
// prompt, which must continue the same sequence.
//
//   build/examples/program_decoder [--dir examples/streaming_decoder] [--steps N]
//                                  [--max-prompt P] [--save FILE]
// Exit status 0 only when everything matched.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <inplace/inplace.h>

using namespace inplace;

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string dir = "examples/streaming_decoder";
  int steps = 0;  // 0: as many as the reference has
  int max_prompt = 32;
  std::string save;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "program_decoder: %s needs a value\n", s.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (s == "--dir") {
      a.dir = value();
    } else if (s == "--steps") {
      a.steps = std::atoi(value().c_str());
    } else if (s == "--max-prompt") {
      a.max_prompt = std::max(5, std::atoi(value().c_str()));
    } else if (s == "--save") {
      a.save = value();
    } else {
      std::fprintf(stderr,
                   "usage: program_decoder [--dir DIR] [--steps N] [--max-prompt P] [--save F]\n"
                   "  DIR holds graph.json, prefill.json, weights.safetensors,\n"
                   "  inputs.safetensors and reference.safetensors\n");
      std::exit(s == "--help" || s == "-h" ? 0 : 2);
    }
  }
  return a;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  if (x.size() != y.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

Tensor ints(const std::vector<int64_t>& v, Shape shape) {
  return Tensor::from_vector<int64_t>(v, std::move(shape));
}

// One conversation: its session, the tokens it has seen, and how it compares to the reference.
struct Conversation {
  std::string name;
  std::unique_ptr<Session> session;
  int64_t position = 0;  // the next position to write
  int64_t next = 0;      // the token to feed next
  double worst_logit = 0;
  int wrong_tokens = 0;
};

// Checks one call's (logits, next_token) against reference step `step`.
void check(Conversation& c, const std::vector<Tensor>& out, const Tensor& ref_logits,
           const Tensor& ref_tokens, int64_t step) {
  Tensor want = ref_logits.select(0, step);
  c.worst_logit = std::max(c.worst_logit, max_abs_diff(out[0].reshape({-1}), want));
  c.next = static_cast<int64_t>(out[1].at(0));
  if (c.next != static_cast<int64_t>(ref_tokens.at(step))) ++c.wrong_tokens;
}

std::vector<Tensor> prefill(Conversation& c, int64_t length, const Tensor& ref_tokens) {
  std::vector<int64_t> prompt{1}, positions;
  for (int64_t i = 1; i < length; ++i) prompt.push_back(static_cast<int64_t>(ref_tokens.at(i - 1)));
  for (int64_t i = 0; i < length; ++i) positions.push_back(i);
  c.position = length;
  return c.session->run(
      "prefill", {{"tokens", ints(prompt, {1, length})}, {"positions", ints(positions, {length})}});
}

std::vector<Tensor> decode(Conversation& c) {
  std::vector<Tensor> out = c.session->run(
      "decode", {{"token", ints({c.next}, {1, 1})}, {"pos", ints({c.position}, {1})}});
  ++c.position;
  return out;
}

int run(const Args& args) {
  const std::string dir = args.dir + "/";
  std::map<std::string, Tensor> ref = read_safetensors(dir + "reference.safetensors");
  const Tensor &ref_tokens = ref.at("tokens"), &ref_logits = ref.at("logits");
  const int64_t total = ref_tokens.numel();
  const int64_t steps = args.steps > 0 ? std::min<int64_t>(args.steps, total) : total;

  // Compile both methods into one program; the caches (k0 v0 k1 v1) become runtime-owned state.
  auto decode_graph = read_graph_json(dir + "graph.json");
  auto prefill_graph = read_graph_json(dir + "prefill.json");
  std::map<std::string, Tensor> step = read_safetensors(dir + "inputs.safetensors");
  std::vector<Tensor> decode_ex, prefill_ex;
  for (Node* n : decode_graph->placeholders()) decode_ex.push_back(step.at(n->name));
  prefill_ex = {ints({1, 2, 3}, {1, 3}), ints({0, 1, 2}, {3}), step.at("k0"),
                step.at("v0"),           step.at("k1"),        step.at("v1")};
  MethodSource p{"prefill", prefill_graph.get(), prefill_ex, {}};
  p.options.dynamic_dims = {{"tokens", 1, args.max_prompt}, {"positions", 0, args.max_prompt}};
  MethodSource d{"decode", decode_graph.get(), decode_ex, {}};
  ProgramOptions options;
  options.name = "streaming_decoder";
  options.runtime_owned = {"k0", "v0", "k1", "v1"};
  auto t0 = Clock::now();
  std::shared_ptr<const Program> program = compile_program({p, d}, options);
  double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!args.save.empty()) {
    save_program(*program, args.save);
    program = load_program(args.save);  // and run what was saved
  }
  std::printf("inplace program decoder: %s, compiled in %.0f ms\n", dir.c_str(), compile_ms);
  std::fputs(program->describe().c_str(), stdout);

  // Two conversations, interleaved call by call.
  Conversation a{"A", program->new_session()}, b{"B", program->new_session()};
  const void* a_cache = a.session->state("k0").data_ptr();
  check(a, prefill(a, 1, ref_tokens), ref_logits, ref_tokens, 0);
  auto tp = Clock::now();
  check(b, prefill(b, 5, ref_tokens), ref_logits, ref_tokens, 4);
  double prefill_ms = std::chrono::duration<double, std::milli>(Clock::now() - tp).count();
  std::vector<double> decode_us;
  for (int64_t s = 1; s < steps; ++s) {
    check(a, decode(a), ref_logits, ref_tokens, s);
    if (s + 4 < steps) {
      auto td = Clock::now();
      check(b, decode(b), ref_logits, ref_tokens, s + 4);
      decode_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - td).count());
    }
  }
  bool ok = true;
  for (Conversation* c : {&a, &b}) {
    double cache_err = 0;
    if (steps == total)
      for (const char* name : {"k0", "v0", "k1", "v1"})
        cache_err = std::max(cache_err, max_abs_diff(c->session->state(name), ref.at(name)));
    bool good = c->wrong_tokens == 0 && c->worst_logit < 1e-4 && cache_err < 1e-4;
    std::printf(
        "  session %s: %lld positions, %d tokens differ from PyTorch, logits within %.2g, %s: %s\n",
        c->name.c_str(), static_cast<long long>(c->position), c->wrong_tokens, c->worst_logit,
        steps == total ? str_cat("caches within ", cache_err).c_str()
                       : "caches not compared (fewer steps than the reference)",
        good ? "ok" : "MISMATCH");
    ok &= good;
  }
  bool stable = a.session->state("k0").data_ptr() == a_cache;
  std::printf("  session A's cache kept its address over %lld calls: %s\n",
              static_cast<long long>(steps), stable ? "ok" : "MOVED");
  ok &= stable;

  // Reset A and prefill a longer prompt: the same greedy sequence continues from there.
  a.session->reset();
  a.worst_logit = 0;
  a.wrong_tokens = 0;
  const int64_t longer = std::min<int64_t>(args.max_prompt, steps);
  check(a, prefill(a, longer, ref_tokens), ref_logits, ref_tokens, longer - 1);
  for (int64_t s = longer; s < std::min<int64_t>(steps, longer + 4); ++s)
    check(a, decode(a), ref_logits, ref_tokens, s);
  bool after_reset = a.wrong_tokens == 0 && a.worst_logit < 1e-4;
  std::printf("  session A after reset: prompt of %lld tokens then decode: %s\n",
              static_cast<long long>(longer), after_reset ? "ok" : "MISMATCH");
  ok &= after_reset;
  if (!decode_us.empty()) {
    std::sort(decode_us.begin(), decode_us.end());
    std::printf(
        "  prefill of 5 tokens %.3f ms; decode call (Session::run) median %.1f us over %zu\n",
        prefill_ms, decode_us[decode_us.size() / 2], decode_us.size());
  }
  std::printf("%s\n", ok ? "program decoder: every check passed" : "program decoder: FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_args(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "program_decoder: error: %s\n", e.what());
    return 1;
  }
}
