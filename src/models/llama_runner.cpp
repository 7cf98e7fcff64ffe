#include "models/llama_runner.h"

#include "core/error.h"
#include "interpreter/interpreter.h"

namespace inplace::models {

std::vector<Tensor> llama_new_caches(const LlamaConfig& c) {
  std::vector<Tensor> caches;
  for (int64_t i = 0; i < 2 * c.n_layers; ++i)
    caches.push_back(Tensor::zeros(c.cache_shape(), DType::kFloat32));
  return caches;
}

int64_t argmax_token(const Tensor& logits) {
  IP_CHECK(logits.dtype() == DType::kFloat32 && logits.is_contiguous(), kInvalidArgument,
           "[llama] logits must be contiguous float32");
  const float* d = logits.data<float>();
  int64_t best = 0;
  for (int64_t i = 1; i < logits.numel(); ++i)
    if (d[i] > d[best]) best = i;
  return best;
}

LlamaEngines compile_llama(const LlamaConfig& c, const LlamaWeights& w, int64_t prompt_len,
                           bool alias) {
  CompileOptions options;
  options.alias = alias;
  LlamaEngines e;
  if (prompt_len > 0)
    e.prefill =
        compile(*llama_prefill_graph(c, w), llama_example_inputs(c, prompt_len), options).engine;
  e.decode = compile(*llama_decode_graph(c, w), llama_example_inputs(c, 1), options).engine;
  return e;
}

namespace {

Tensor int_vector(int64_t n, const Shape& shape) {
  Tensor t = Tensor::zeros(shape, DType::kInt64);
  IP_ASSERT(t.numel() == n, "token tensor sized to its count");
  return t;
}

void fill_prompt(const std::vector<int64_t>& prompt, const Tensor& tokens, const Tensor& pos) {
  IP_CHECK(static_cast<int64_t>(prompt.size()) == tokens.numel(), kShapeMismatch,
           "[llama] the prefill engine takes ", tokens.numel(), " prompt tokens, got ",
           prompt.size());
  for (size_t i = 0; i < prompt.size(); ++i) {
    tokens.data<int64_t>()[i] = prompt[i];
    pos.data<int64_t>()[i] = static_cast<int64_t>(i);
  }
}

}  // namespace

LlamaEngineRunner::LlamaEngineRunner(const LlamaConfig& c, const LlamaEngines& engines,
                                     std::vector<Tensor> caches, int threads)
    : caches_(std::move(caches)), decode_(engines.decode) {
  decode_.set_threads(threads);
  IP_CHECK(static_cast<int64_t>(caches_.size()) == 2 * c.n_layers, kInvalidArgument,
           "[llama] expected ", 2 * c.n_layers, " caches, got ", caches_.size());
  token_ = int_vector(1, {1, 1});
  pos_ = int_vector(1, {1});
  decode_.bind_input(0, token_);
  decode_.bind_input(1, pos_);
  for (size_t i = 0; i < caches_.size(); ++i)
    decode_.bind_input(static_cast<int>(i + 2), caches_[i]);
  if (!engines.prefill) return;
  prefill_.emplace(engines.prefill);
  prefill_->set_threads(threads);
  const int64_t p = engines.prefill->inputs()[0].shape.back();
  prompt_tokens_ = int_vector(p, {1, p});
  prompt_pos_ = int_vector(p, {p});
  prefill_->bind_input(0, prompt_tokens_);
  prefill_->bind_input(1, prompt_pos_);
  for (size_t i = 0; i < caches_.size(); ++i)
    prefill_->bind_input(static_cast<int>(i + 2), caches_[i]);
}

Tensor LlamaEngineRunner::prefill(const std::vector<int64_t>& prompt) {
  IP_CHECK(prefill_.has_value(), kInvalidArgument, "[llama] this runner has no prefill engine");
  fill_prompt(prompt, prompt_tokens_, prompt_pos_);
  return prefill_->execute()[0];
}

Tensor LlamaEngineRunner::decode(int64_t token, int64_t pos) {
  token_.data<int64_t>()[0] = token;
  pos_.data<int64_t>()[0] = pos;
  return decode_.execute()[0];
}

LlamaEagerRunner::LlamaEagerRunner(const LlamaConfig& c, const LlamaWeights& w, int64_t prompt_len,
                                   std::vector<Tensor> caches)
    : config_(c),
      weights_(w),
      caches_(std::move(caches)),
      prefill_graph_(llama_prefill_graph(c, w)),
      decode_graph_(llama_decode_graph(c, w)) {}

LlamaEagerRunner::~LlamaEagerRunner() = default;

Tensor LlamaEagerRunner::run(const Graph& g, const Tensor& tokens, const Tensor& pos) {
  std::map<std::string, Value> in{{"tokens", Value::from_tensor(tokens)},
                                  {"pos", Value::from_tensor(pos)}};
  std::vector<std::string> names = llama_input_names(config_);
  for (size_t i = 0; i < caches_.size(); ++i) in[names[i + 2]] = Value::from_tensor(caches_[i]);
  State state(weights_.begin(), weights_.end());  // only read: shared, never copied
  RunOutput out = run_eager(g, in, &state);
  return out.flat[0].tensor;
}

Tensor LlamaEagerRunner::prefill(const std::vector<int64_t>& prompt) {
  const int64_t p = static_cast<int64_t>(prompt.size());
  Tensor tokens = int_vector(p, {1, p}), pos = int_vector(p, {p});
  fill_prompt(prompt, tokens, pos);
  return run(*prefill_graph_, tokens, pos);
}

Tensor LlamaEagerRunner::decode(int64_t token, int64_t pos) {
  Tensor t = int_vector(1, {1, 1}), p = int_vector(1, {1});
  t.data<int64_t>()[0] = token;
  p.data<int64_t>()[0] = pos;
  return run(*decode_graph_, t, p);
}

}  // namespace inplace::models
