// A built-in Llama-style decoder written with the GraphBuilder the way a PyTorch user writes it:
// token embedding, RMSNorm, rotary embeddings, grouped-KV attention over static caches that the
// caller owns (written with index_copy_, as Hugging Face's StaticCache does), SwiGLU, and an LM
// head tied to the embedding. Weights are deterministic random values from a seed. The graphs go
// through the same passes and engines as any user graph.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace inplace::models {

struct LlamaConfig {
  std::string size;  // tiny | small | medium
  int64_t vocab = 0, d_model = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, ffn = 0;
  int64_t s_max = 0;  // cache slots
  double eps = 1e-5, rope_theta = 10000.0;
  uint64_t seed = 0;
  // kBFloat16: the embedding and the linear weights are stored in bfloat16 and the graph widens
  // them (`w.to(torch.float32)`), as a user casting on the fly writes it; compute stays float32.
  DType weight_dtype = DType::kFloat32;

  int64_t head_dim() const { return d_model / n_heads; }
  int64_t parameters() const;            // weights, the LM head tied to the embedding
  int64_t weight_bytes() const;          // what a decode step reads of them
  int64_t cache_shape_elements() const;  // one cache: n_kv_heads * s_max * head_dim
  Shape cache_shape() const { return {1, n_kv_heads, s_max, head_dim()}; }
};

// `tiny` (tests), `small` (d 512, 8 layers, 111 MB in f32; the default) or `medium` (about 150M
// parameters). Unknown names are an error listing the valid ones.
LlamaConfig llama_config(const std::string& size, int64_t s_max, uint64_t seed = 0,
                         DType weight_dtype = DType::kFloat32);

// Weight name -> tensor (Hugging Face's names: embed_tokens.weight, layers.0.self_attn.q_proj.
// weight, ...), plus the rotary tables rope.cos / rope.sin [s_max, head_dim] in float32.
using LlamaWeights = std::map<std::string, Tensor>;
LlamaWeights llama_weights(const LlamaConfig& config);

// Input names in binding order: tokens [1, T] int64, pos [T] int64 (the cache positions written),
// then k0, v0, k1, v1, ... each [1, n_kv_heads, s_max, head_dim] float32.
std::vector<std::string> llama_input_names(const LlamaConfig& config);

// The prefill graph: T prompt tokens at positions 0..T-1 (causal attention over the cache prefix
// [:pos[-1]+1]); returns the last token's logits [1, vocab].
std::unique_ptr<Graph> llama_prefill_graph(const LlamaConfig& config, const LlamaWeights& weights);
// The decode graph: one token at position pos[0]; attention reads only the filled prefix
// cache[:, :, :pos[0]+1] (its extent is a runtime value). Returns logits [1, vocab].
std::unique_ptr<Graph> llama_decode_graph(const LlamaConfig& config, const LlamaWeights& weights);

// Example inputs for compile(): tokens [1, tokens], pos 0..tokens-1, zero caches.
std::vector<Tensor> llama_example_inputs(const LlamaConfig& config, int64_t tokens);

}  // namespace inplace::models
