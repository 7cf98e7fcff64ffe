// The built-in tiny Llama as a program for the generation tests: prefill (prompts of
// kPrefillTokens; the built-in graph's prefill has a fixed length) and decode over
// runtime-owned caches, and the greedy reference run step by step in the eager interpreter.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "inplace/program.h"
#include "models/llama.h"
#include "models/llama_runner.h"

namespace inplace::testing {

inline constexpr int64_t kPrefillTokens = 5, kCacheSlots = 32;

struct TinyLlama {
  models::LlamaConfig config = models::llama_config("tiny", kCacheSlots, /*seed=*/3);
  models::LlamaWeights weights = models::llama_weights(config);
};

// Methods `prefill` (unless `with_prefill` is false) and `decode`, the caches runtime-owned.
inline std::shared_ptr<const Program> tiny_llama_program(const TinyLlama& m,
                                                         bool with_prefill = true,
                                                         Device device = Device::cpu()) {
  std::unique_ptr<Graph> prefill = models::llama_prefill_graph(m.config, m.weights);
  std::unique_ptr<Graph> decode = models::llama_decode_graph(m.config, m.weights);
  std::vector<MethodSource> sources;
  if (with_prefill) {
    sources.push_back(
        {"prefill", prefill.get(), models::llama_example_inputs(m.config, kPrefillTokens), {}});
  }
  sources.push_back({"decode", decode.get(), models::llama_example_inputs(m.config, 1), {}});
  ProgramOptions options;
  options.name = "tiny_llama";
  options.device = device;
  std::vector<std::string> names = models::llama_input_names(m.config);
  options.runtime_owned.assign(names.begin() + 2, names.end());  // the caches
  return compile_program(sources, options);
}

// Greedy decoding as a caller's loop of eager steps: prefill, then argmax and decode.
inline std::vector<int64_t> eager_greedy(const TinyLlama& m, const std::vector<int64_t>& prompt,
                                         int64_t new_tokens) {
  models::LlamaEagerRunner eager(m.config, m.weights, static_cast<int64_t>(prompt.size()),
                                 models::llama_new_caches(m.config));
  std::vector<int64_t> out;
  Tensor logits = eager.prefill(prompt);
  int64_t pos = static_cast<int64_t>(prompt.size());
  for (int64_t k = 0; k < new_tokens; ++k) {
    if (k > 0) logits = eager.decode(out.back(), pos++);
    out.push_back(models::argmax_token(logits));
  }
  return out;
}

}  // namespace inplace::testing
