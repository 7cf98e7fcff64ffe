// Runs the built-in Llama-style model: a prefill method and a decode method of one program
// sharing the caller's caches (one Session, the caches its caller-owned state, bound once), and
// the same steps in the eager interpreter.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "models/llama.h"
#include "program/session.h"

namespace inplace::models {

// The caller's state: one k and one v cache per layer, zeros at the start, on `device`.
std::vector<Tensor> llama_new_caches(const LlamaConfig& config, Device device = Device::cpu());

// Greedy choice: the index of the largest logit (the first on ties, like torch.argmax).
int64_t argmax_token(const Tensor& logits);

// Engines for prompts of `prompt_len` tokens (none when 0) and for one token, compiled from the
// model's graphs (aliased, or the copy-back engines when alias is false).
struct LlamaEngines {
  std::shared_ptr<const Engine> prefill, decode;
};
LlamaEngines compile_llama(const LlamaConfig& config, const LlamaWeights& weights,
                           int64_t prompt_len, bool alias, Device device = Device::cpu());

// Both engines as one program (methods prefill, when there is one, and decode; the weights
// once; the caches caller-owned state under their binding names, k0 v0 k1 ...): what the
// runner runs and what save_llama_engines writes (docs/programs.md).
std::shared_ptr<const Program> llama_program(const LlamaEngines& engines);
// llama_program() as a program file, and back: loading maps the file, so the engines' weights
// are the file's pages (load time and memory about the file).
void save_llama_engines(const LlamaEngines& engines, const std::string& path);
LlamaEngines load_llama_engines(const std::string& path);
// The bytes of the engines' constants (weights and rotary tables), each storage counted once.
int64_t llama_engine_weight_bytes(const LlamaEngines& engines);

// Steps llama_program(engines) through one Session on `caches` (the caller's tensors, the
// session's caller-owned state, bound once; written in place by aliased engines). Token and
// position inputs are tensors bound once and updated between calls, so a step passes nothing
// per call. Without a prefill engine only decode() may be called. On a GPU the methods run on
// `stream()` (the default stream unless set), token and position inputs live in device memory,
// and the returned logits are device tensors of the session, valid until the method's next call.
class LlamaEngineRunner {
 public:
  LlamaEngineRunner(const LlamaConfig& config, const LlamaEngines& engines,
                    std::vector<Tensor> caches, int threads = 1);
  Tensor prefill(const std::vector<int64_t>& prompt);  // logits [1, vocab] of the last token
  Tensor decode(int64_t token, int64_t pos);           // logits [1, vocab]
  // GPU: one decode step whose token and position are copied on the device, on the stream,
  // from `token` [1, 1] and `pos` [1] int64 device tensors (no host value, no wait).
  Tensor decode_from(const Tensor& token, const Tensor& pos);
  const std::vector<Tensor>& caches() const { return caches_; }
  void set_cuda_graph(bool on);
  void set_stream(void* stream) { stream_ = stream; }
  void* stream() const { return stream_; }
  // The session both methods run on: synchronize(), stats("decode"), bind_state (a moved cache).
  Session& session() { return *session_; }

 private:
  void* stream_ = nullptr;
  std::vector<Tensor> caches_;
  std::shared_ptr<const Program> program_;
  std::unique_ptr<Session> session_;
  bool has_prefill_ = false;
  Tensor prompt_tokens_, prompt_pos_, token_, pos_;
};

// The same steps in the eager interpreter on the graphs as written.
class LlamaEagerRunner {
 public:
  LlamaEagerRunner(const LlamaConfig& config, const LlamaWeights& weights, int64_t prompt_len,
                   std::vector<Tensor> caches);
  ~LlamaEagerRunner();
  Tensor prefill(const std::vector<int64_t>& prompt);
  Tensor decode(int64_t token, int64_t pos);
  const std::vector<Tensor>& caches() const { return caches_; }

 private:
  Tensor run(const Graph& graph, const Tensor& tokens, const Tensor& pos);
  LlamaConfig config_;
  LlamaWeights weights_;
  std::vector<Tensor> caches_;
  std::unique_ptr<Graph> prefill_graph_, decode_graph_;
};

}  // namespace inplace::models
