// Session::generate and the generation convention (generate.h, docs/programs.md "Generation").
#include "program/generate.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "program/next_token.h"
#include "program/session.h"

namespace inplace {

namespace {

using Clock = std::chrono::steady_clock;

// A method's two plain inputs (ids, positions) as the convention reads them.
struct TokenMethod {
  const Method* method = nullptr;
  std::string ids, positions;
  DType ids_dtype = DType::kInt64, positions_dtype = DType::kInt64;
  bool positions_2d = false;  // [1, T] rather than [T]
  int64_t max_tokens = 1;     // tokens per call: the bound of ids dim 1
  bool dynamic = false;       // whether a call may take fewer
  int64_t vocab = 0;
};

const Method* find_method(const Program& p, const std::string& name) {
  for (const Method& m : p.methods())
    if (m.name == name) return &m;
  return nullptr;
}

TokenMethod check_method(const Program& p, const Method& m, bool decode) {
  const char* want = decode ? "decode(ids [1, 1], positions [1]) -> logits [1, 1, V]"
                            : "prefill(ids [1, T], positions [T]) -> logits [1, T, V]";
  auto fail = [&](const std::string& what) {
    IP_FAIL(kInvalidArgument, "[generate] program '", p.name(), "': method '", m.name, "' ", what,
            "; generate needs ", want, " (docs/programs.md, \"Generation\")");
  };
  const Engine& e = *m.engine;
  std::vector<int> plain;
  for (int i : m.call_inputs) {
    if (m.state_of_input[i] >= 0)
      fail(str_cat("takes caller-owned state '", e.inputs()[i].name,
                   "' (generate runs a session's runtime-owned state only)"));
    plain.push_back(i);
  }
  if (plain.size() != 2)
    fail(str_cat("takes ", plain.size(), " inputs (", m.call_input_names(), ")"));
  const Binding& ids = e.inputs()[plain[0]];
  const Binding& pos = e.inputs()[plain[1]];
  TokenMethod t;
  t.method = &m;
  t.ids = ids.name;
  t.positions = pos.name;
  t.ids_dtype = ids.dtype;
  t.positions_dtype = pos.dtype;
  auto describe = [](const Binding& b) {
    return str_cat("'", b.name, "' ", shape_str(b.shape), " ", dtype_name(b.dtype));
  };
  if (!is_integral(ids.dtype, false) || ids.shape.size() != 2 || ids.shape[0] != 1)
    fail(str_cat("takes ids ", describe(ids), " (expected [1, T] of an integer dtype)"));
  t.max_tokens = ids.shape[1];
  for (int64_t d : ids.dynamic_dims) {
    if (d != 1) fail(str_cat("has ids ", describe(ids), " dynamic in dim ", d, " (only T may be)"));
    t.dynamic = true;
  }
  t.positions_2d = pos.shape.size() == 2;
  bool pos_ok = is_integral(pos.dtype, false) &&
                (pos.shape.size() == 1 || (t.positions_2d && pos.shape[0] == 1)) &&
                pos.shape.back() == t.max_tokens;
  if (!pos_ok)
    fail(str_cat("takes positions ", describe(pos), " (expected [", t.max_tokens, "] or [1, ",
                 t.max_tokens, "] of an integer dtype, as ids)"));
  if (decode && (t.max_tokens != 1 || t.dynamic))
    fail(str_cat("takes ids ", describe(ids), " (a decode step takes one token)"));
  if (e.original_output_count() < 1) fail("returns nothing");
  const Binding& logits = e.outputs()[0];
  if (!is_floating(logits.dtype) || logits.shape.size() < 2 || logits.shape.back() < 1)
    fail(str_cat("returns ", describe(logits), " first (expected logits [1, T, V])"));
  t.vocab = logits.shape.back();
  return t;
}

struct TokenMethods {
  TokenMethod decode;
  bool has_prefill = false;
  TokenMethod prefill;
};

TokenMethods check_methods(const Program& p) {
  TokenMethods out;
  const Method* decode = find_method(p, "decode");
  if (!decode) {
    std::string names;
    for (const Method& m : p.methods()) names += (names.empty() ? "'" : ", '") + m.name + "'";
    IP_FAIL(kInvalidArgument, "[generate] program '", p.name(),
            "' has no method 'decode' (its "
            "methods are ",
            names,
            "); generate needs decode(ids [1, 1], positions [1]) -> "
            "logits [1, 1, V] and optionally prefill (docs/programs.md, \"Generation\")");
  }
  out.decode = check_method(p, *decode, true);
  if (const Method* prefill = find_method(p, "prefill")) {
    out.prefill = check_method(p, *prefill, false);
    out.has_prefill = true;
    IP_CHECK(out.prefill.vocab == out.decode.vocab, kInvalidArgument, "[generate] program '",
             p.name(), "': prefill's logits have ", out.prefill.vocab, " columns but decode's ",
             out.decode.vocab);
  }
  return out;
}

// ids [1, n] and positions [n] (or [1, n]) from `start`.
std::map<std::string, Tensor> token_inputs(const TokenMethod& t, const int64_t* tokens, int64_t n,
                                           int64_t start) {
  Tensor ids = Tensor::empty({1, n}, DType::kInt64);
  Tensor pos = Tensor::empty(t.positions_2d ? Shape{1, n} : Shape{n}, DType::kInt64);
  for (int64_t i = 0; i < n; ++i) {
    ids.data<int64_t>()[i] = tokens[i];
    pos.data<int64_t>()[i] = start + i;
  }
  // On the host: a device session copies them into its own memory for the method, at the same
  // address every step, so the step's recorded work (a CUDA graph) replays.
  return {{t.ids, ids.to(t.ids_dtype)}, {t.positions, pos.to(t.positions_dtype)}};
}

// The last row of the logits, on the host.
}  // namespace

void check_generate_methods(const Program& program) {
  check_methods(program);
}

GenerateResult Session::generate(const std::vector<int64_t>& prompt,
                                 const GenerateOptions& options) {
  const Clock::time_point start = Clock::now();
  const TokenMethods methods = check_methods(*program_);
  IP_CHECK(!prompt.empty(), kInvalidArgument, "[generate] the prompt is empty");
  IP_CHECK(options.max_new_tokens >= 0, kInvalidArgument,
           "[generate] max_new_tokens must be >= 0, got ", options.max_new_tokens);
  const int64_t vocab = methods.decode.vocab;
  for (int64_t t : prompt)
    IP_CHECK(t >= 0 && t < vocab, kInvalidArgument, "[generate] prompt token ", t,
             " is outside the vocabulary [0, ", vocab, ")");
  Sampler sampler(options.sampling);
  GenerateResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  if (options.max_new_tokens == 0) {
    result.stopped_by = "max_new_tokens";
    return result;
  }
  // The prompt: prefill in chunks it takes, the rest (or all, without prefill) through decode.
  int64_t position = options.start_position;
  const int64_t n = result.prompt_tokens;
  Tensor logits;
  for (int64_t done = 0; done < n;) {
    const TokenMethod* m = &methods.decode;
    int64_t chunk = 1;
    if (methods.has_prefill) {
      const TokenMethod& p = methods.prefill;
      int64_t rest = n - done;
      if (p.dynamic || rest >= p.max_tokens) {
        m = &p;
        chunk = std::min(rest, p.max_tokens);
      }
    }
    logits = run(m->method->name, token_inputs(*m, prompt.data() + done, chunk, position))[0];
    done += chunk;
    position += chunk;
  }
  Clock::time_point first = start;
  for (int64_t k = 0; k < options.max_new_tokens; ++k) {
    if (k > 0) {
      const int64_t last = result.tokens.back();
      logits = run("decode", token_inputs(methods.decode, &last, 1, position++))[0];
    }
    const int64_t token = next_token(sampler, logits, vocab);
    result.tokens.push_back(token);
    if (k == 0) {
      first = Clock::now();
      result.time_to_first_token_s = std::chrono::duration<double>(first - start).count();
    }
    const bool go_on = !options.on_token || options.on_token(token);
    if (std::count(options.stop_tokens.begin(), options.stop_tokens.end(), token)) {
      result.stopped_by = "stop_token";
      break;
    }
    if (!go_on) {
      result.stopped_by = "callback";
      break;
    }
  }
  if (result.stopped_by.empty()) result.stopped_by = "max_new_tokens";
  const double decode_s = std::chrono::duration<double>(Clock::now() - first).count();
  if (result.tokens.size() > 1 && decode_s > 0)
    result.tokens_per_second = static_cast<double>(result.tokens.size() - 1) / decode_s;
  return result;
}

}  // namespace inplace
