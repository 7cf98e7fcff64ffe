// The Llama-style decoder as a graph, written op by op the way the PyTorch module reads
// (Hugging Face's LlamaForCausalLM with a StaticCache, the caches passed in by the caller).
#include <string>

#include "core/error.h"
#include "ir/builder.h"
#include "models/llama.h"

namespace inplace::models {

namespace {

class LlamaWriter {
 public:
  LlamaWriter(const LlamaConfig& c, const LlamaWeights& w, bool decode)
      : c_(c), w_(w), decode_(decode), b_(decode ? "llama_decode" : "llama_prefill") {}

  std::unique_ptr<Graph> write() {
    Node* tokens = b_.placeholder("tokens");
    pos_ = b_.placeholder("pos");
    for (int64_t l = 0; l < c_.n_layers; ++l) {
      caches_.push_back(b_.placeholder("k" + std::to_string(l)));
      caches_.push_back(b_.placeholder("v" + std::to_string(l)));
    }
    Node* embed = weight("embed_tokens.weight");
    Node* h = widen(call("torch.nn.functional.embedding", {tokens, embed}));  // [1, T, d]
    // cos = cos_cached[position_ids][None, None]: [1, 1, T, head_dim].
    cos_ = rope_table("rope.cos");
    sin_ = rope_table("rope.sin");
    // The filled prefix of every cache ends after the last position written by this call.
    Node* last = call("_operator.getitem", {pos_, -1});
    end_ = call("_operator.add", {last, 1});
    for (int64_t l = 0; l < c_.n_layers; ++l) {
      const std::string p = "layers." + std::to_string(l) + ".";
      Node* a = attention(rms_norm(h, p + "input_layernorm.weight"), l, p + "self_attn.");
      h = call("_operator.add", {h, a});
      Node* m = mlp(rms_norm(h, p + "post_attention_layernorm.weight"), p + "mlp.");
      h = call("_operator.add", {h, m});
    }
    h = rms_norm(h, "norm.weight");
    // Only the last position's logits: hidden[:, -1] @ embed^T (the LM head tied to the embedding).
    Node* last_h = call("_operator.getitem", {h, arg::tuple({arg::slice(), -1})});
    Node* logits =
        call("torch.nn.functional.linear", {last_h, widen(b_.get_attr("embed_tokens.weight"))});
    b_.output(arg::tuple({logits}));
    return b_.build();
  }

 private:
  Node* call(const std::string& target, std::vector<Arg> args, KwArgs kwargs = {}) {
    return b_.call_function(target, std::move(args), std::move(kwargs));
  }
  Node* method(const std::string& name, std::vector<Arg> args, KwArgs kwargs = {}) {
    return b_.call_method(name, std::move(args), std::move(kwargs));
  }
  Node* weight(const std::string& name) {
    auto it = w_.find(name);
    IP_CHECK(it != w_.end(), kInvalidArgument, "[llama] missing weight '", name, "'");
    return b_.get_attr(name, it->second);
  }
  // bf16 weights are widened where they are used: w.to(torch.float32).
  Node* widen(Node* w) {
    return c_.weight_dtype == DType::kFloat32 ? w : method("to", {w, DType::kFloat32});
  }
  Node* linear(Node* x, const std::string& name) {
    return call("torch.nn.functional.linear", {x, widen(weight(name))});
  }
  Node* rope_table(const std::string& name) {
    Node* rows = call("torch.index_select", {weight(name), 0, pos_});  // [T, head_dim]
    return method("unsqueeze", {method("unsqueeze", {rows, 0}), 0});
  }

  // LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * weight.
  Node* rms_norm(Node* x, const std::string& name) {
    Node* var = method("mean", {method("pow", {x, 2}), -1}, {{"keepdim", true}});
    Node* inv = call("torch.rsqrt", {call("_operator.add", {var, c_.eps})});
    return call("_operator.mul", {weight(name), call("_operator.mul", {x, inv})});
  }

  // x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2]).
  Node* rotary(Node* x) {
    const int64_t half = c_.head_dim() / 2;
    Node* x1 =
        call("_operator.getitem", {x, arg::tuple({arg::ellipsis(), arg::slice(nullptr, half)})});
    Node* x2 = call("_operator.getitem", {x, arg::tuple({arg::ellipsis(), arg::slice(half)})});
    Node* rot = call("torch.cat", {arg::list({call("_operator.neg", {x2}), x1}), -1});
    return call("_operator.add",
                {call("_operator.mul", {x, cos_}), call("_operator.mul", {rot, sin_})});
  }

  // [1, T, heads * head_dim] -> [1, heads, T, head_dim].
  Node* heads(Node* x, int64_t n) {
    return method("transpose", {method("view", {x, 1, -1, n, c_.head_dim()}), 1, 2});
  }

  Node* attention(Node* x, int64_t layer, const std::string& p) {
    Node* q = rotary(heads(linear(x, p + "q_proj.weight"), c_.n_heads));
    Node* k = rotary(heads(linear(x, p + "k_proj.weight"), c_.n_kv_heads));
    Node* v = heads(linear(x, p + "v_proj.weight"), c_.n_kv_heads);
    Node* kc = caches_[static_cast<size_t>(2 * layer)];
    Node* vc = caches_[static_cast<size_t>(2 * layer + 1)];
    // StaticCache.update: k_cache.index_copy_(2, cache_position, k).
    method("index_copy_", {kc, 2, pos_, k});
    method("index_copy_", {vc, 2, pos_, v});
    auto prefix = [&](Node* cache) {  // cache[:, :, :pos[-1] + 1]: only the filled positions
      return call("_operator.getitem",
                  {cache, arg::tuple({arg::slice(), arg::slice(), arg::slice(nullptr, end_)})});
    };
    // One new token attends to every filled position; a prompt from position 0 is causal.
    Node* o = call("torch.nn.functional.scaled_dot_product_attention", {q, prefix(kc), prefix(vc)},
                   {{"is_causal", !decode_}, {"enable_gqa", true}});
    o = method("reshape", {method("transpose", {o, 1, 2}), 1, -1, c_.d_model});
    return linear(o, p + "o_proj.weight");
  }

  // SwiGLU: down(silu(gate(x)) * up(x)).
  Node* mlp(Node* x, const std::string& p) {
    Node* g = call("torch.nn.functional.silu", {linear(x, p + "gate_proj.weight")});
    return linear(call("_operator.mul", {g, linear(x, p + "up_proj.weight")}),
                  p + "down_proj.weight");
  }

  const LlamaConfig& c_;
  const LlamaWeights& w_;
  bool decode_;
  GraphBuilder b_;
  Node* pos_ = nullptr;
  Node* end_ = nullptr;
  Node* cos_ = nullptr;
  Node* sin_ = nullptr;
  std::vector<Node*> caches_;
};

}  // namespace

std::unique_ptr<Graph> llama_prefill_graph(const LlamaConfig& c, const LlamaWeights& w) {
  return LlamaWriter(c, w, /*decode=*/false).write();
}

std::unique_ptr<Graph> llama_decode_graph(const LlamaConfig& c, const LlamaWeights& w) {
  return LlamaWriter(c, w, /*decode=*/true).write();
}

}  // namespace inplace::models
