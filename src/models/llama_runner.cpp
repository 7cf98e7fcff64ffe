#include "models/llama_runner.h"

#include "backend/backend.h"
#include "core/device_allocator.h"
#include "core/error.h"
#include "interpreter/interpreter.h"

namespace inplace::models {

std::vector<Tensor> llama_new_caches(const LlamaConfig& c, Device device) {
  std::vector<Tensor> caches;
  for (int64_t i = 0; i < 2 * c.n_layers; ++i)  // zero-filled on every device
    caches.push_back(Tensor::empty(c.cache_shape(), DType::kFloat32, device));
  return caches;
}

int64_t argmax_token(const Tensor& logits_in) {
  const Tensor logits =
      logits_in.device().is_cpu() ? logits_in : logits_in.to_device(Device::cpu());
  IP_CHECK(logits.dtype() == DType::kFloat32 && logits.is_contiguous(), kInvalidArgument,
           "[llama] logits must be contiguous float32");
  const float* d = logits.data<float>();
  int64_t best = 0;
  for (int64_t i = 1; i < logits.numel(); ++i)
    if (d[i] > d[best]) best = i;
  return best;
}

LlamaEngines compile_llama(const LlamaConfig& c, const LlamaWeights& w, int64_t prompt_len,
                           bool alias, Device device) {
  CompileOptions options;
  options.alias = alias;
  options.device = device;
  LlamaEngines e;
  if (prompt_len > 0)
    e.prefill =
        compile(*llama_prefill_graph(c, w), llama_example_inputs(c, prompt_len), options).engine;
  e.decode = compile(*llama_decode_graph(c, w), llama_example_inputs(c, 1), options).engine;
  return e;
}

namespace {

Tensor int_vector(int64_t n, const Shape& shape, Device device = Device::cpu()) {
  Tensor t = Tensor::empty(shape, DType::kInt64, device);
  IP_ASSERT(t.numel() == n, "token tensor sized to its count");
  return t;
}

// Host values into a bound int64 tensor on any device.
void put(const Tensor& t, const std::vector<int64_t>& v) {
  IP_ASSERT(static_cast<int64_t>(v.size()) == t.numel(), "values sized to the tensor");
  if (t.device().is_cpu()) {
    for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
    return;
  }
  device_allocator(t.device()).copy_from_host(t.data_ptr(), v.data(), v.size() * sizeof(int64_t));
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
    : caches_(std::move(caches)), program_(llama_program(engines)) {
  IP_CHECK(static_cast<int64_t>(caches_.size()) == 2 * c.n_layers, kInvalidArgument,
           "[llama] expected ", 2 * c.n_layers, " caches, got ", caches_.size());
  session_ = program_->new_session();
  session_->set_threads(threads);
  const Engine& decode = *engines.decode;
  for (size_t i = 0; i < caches_.size(); ++i)
    session_->bind_state(decode.inputs()[i + 2].name, caches_[i]);
  const Device device = decode.device();
  token_ = int_vector(1, {1, 1}, device);
  pos_ = int_vector(1, {1}, device);
  session_->bind_input("decode", decode.inputs()[0].name, token_);
  session_->bind_input("decode", decode.inputs()[1].name, pos_);
  if (!engines.prefill) return;
  has_prefill_ = true;
  const Engine& prefill = *engines.prefill;
  const int64_t p = prefill.inputs()[0].shape.back();
  prompt_tokens_ = int_vector(p, {1, p}, device);
  prompt_pos_ = int_vector(p, {p}, device);
  session_->bind_input("prefill", prefill.inputs()[0].name, prompt_tokens_);
  session_->bind_input("prefill", prefill.inputs()[1].name, prompt_pos_);
}

Tensor LlamaEngineRunner::prefill(const std::vector<int64_t>& prompt) {
  IP_CHECK(has_prefill_, kInvalidArgument, "[llama] this runner has no prefill engine");
  if (prompt_tokens_.device().is_cpu()) {
    fill_prompt(prompt, prompt_tokens_, prompt_pos_);
  } else {
    IP_CHECK(static_cast<int64_t>(prompt.size()) == prompt_tokens_.numel(), kShapeMismatch,
             "[llama] the prefill engine takes ", prompt_tokens_.numel(), " prompt tokens, got ",
             prompt.size());
    std::vector<int64_t> positions(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) positions[i] = static_cast<int64_t>(i);
    put(prompt_tokens_, prompt);
    put(prompt_pos_, positions);
  }
  return session_->run("prefill", {}, stream_)[0];
}

Tensor LlamaEngineRunner::decode(int64_t token, int64_t pos) {
  put(token_, {token});
  put(pos_, {pos});
  return session_->run("decode", {}, stream_)[0];
}

Tensor LlamaEngineRunner::decode_from(const Tensor& token, const Tensor& pos) {
  IP_CHECK(token.device() == token_.device() && pos.device() == pos_.device(), kInvalidArgument,
           "[llama] decode_from takes tensors of the engine's device");
  const Backend& backend = backend_for(token_.device());
  backend.copy_async(token_.data_ptr(), token.data_ptr(), sizeof(int64_t), stream_);
  backend.copy_async(pos_.data_ptr(), pos.data_ptr(), sizeof(int64_t), stream_);
  return session_->run("decode", {}, stream_)[0];
}

void LlamaEngineRunner::set_cuda_graph(bool on) {
  if (token_.device().type != DeviceType::kCuda) return;  // a cuda backend option
  session_->set_backend_option("cuda_graph", on ? "on" : "off");
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
