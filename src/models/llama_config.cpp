// The four sizes of the built-in Llama-style model and its deterministic weights.
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "models/llama.h"

namespace inplace::models {

int64_t LlamaConfig::parameters() const {
  const int64_t hd = head_dim();
  const int64_t attn = d_model * n_heads * hd * 2 + d_model * n_kv_heads * hd * 2;
  const int64_t mlp = 3 * d_model * ffn;
  return vocab * d_model + n_layers * (attn + mlp + 2 * d_model) + d_model;
}

int64_t LlamaConfig::weight_bytes() const {
  const int64_t norms = (2 * n_layers + 1) * d_model;
  return (parameters() - norms) * static_cast<int64_t>(dtype_size(weight_dtype)) + norms * 4;
}

int64_t LlamaConfig::cache_shape_elements() const {
  return n_kv_heads * s_max * head_dim();
}

LlamaConfig llama_config(const std::string& size, int64_t s_max, uint64_t seed,
                         DType weight_dtype) {
  IP_CHECK(weight_dtype == DType::kFloat32 || weight_dtype == DType::kBFloat16, kInvalidArgument,
           "[llama] weights are float32 or bfloat16, not ", dtype_name(weight_dtype));
  LlamaConfig c;
  c.weight_dtype = weight_dtype;
  c.size = size;
  c.s_max = s_max;
  c.seed = seed;
  if (size == "tiny") {
    c.vocab = 256, c.d_model = 64, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.ffn = 160;
  } else if (size == "small") {
    c.vocab = 8192, c.d_model = 512, c.n_layers = 8, c.n_heads = 8, c.n_kv_heads = 4, c.ffn = 1408;
  } else if (size == "medium") {
    c.vocab = 16384, c.d_model = 1024, c.n_layers = 12, c.n_heads = 16, c.n_kv_heads = 8,
    c.ffn = 2816;
  } else if (size == "large") {  // Llama-3.2-1B's shape with a 32768-token vocabulary
    c.vocab = 32768, c.d_model = 2048, c.n_layers = 16, c.n_heads = 32, c.n_kv_heads = 8,
    c.ffn = 8192;
  } else {
    IP_FAIL(kInvalidArgument, "[llama] unknown size '", size, "' (tiny, small, medium, large)");
  }
  IP_CHECK(s_max >= 1, kInvalidArgument, "[llama] s_max must be at least 1, got ", s_max);
  return c;
}

namespace {

// splitmix64: a fast, seedable stream; weights depend only on (seed, name index).
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float uniform() {
    return static_cast<float>(static_cast<double>(next() >> 40) / 8388608.0 - 1.0);
  }
};

Tensor uniform(const Shape& shape, float scale, uint64_t seed) {
  Tensor t = Tensor::empty(shape, DType::kFloat32);
  float* d = t.data<float>();
  Rng rng{seed};
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = scale * rng.uniform();
  return t;
}

}  // namespace

LlamaWeights llama_weights(const LlamaConfig& c) {
  LlamaWeights w;
  uint64_t stream = c.seed * 1000003ull;
  // Linear weights [out, in] ~ U(-1, 1) / sqrt(in): activations keep their scale through depth.
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    w[name] =
        uniform({out, in}, 1.0f / std::sqrt(static_cast<float>(in)), ++stream).to(c.weight_dtype);
  };
  auto norm = [&](const std::string& name) {
    Tensor t = uniform({c.d_model}, 0.1f, ++stream);
    float* d = t.data<float>();
    for (int64_t i = 0; i < c.d_model; ++i) d[i] += 1.0f;
    w[name] = t;
  };
  const int64_t hd = c.head_dim();
  // Small embeddings (Hugging Face initialises them with std 0.02): with the LM head tied to
  // the embedding, large ones make every token's best successor itself.
  w["embed_tokens.weight"] = uniform({c.vocab, c.d_model}, 0.05f, ++stream).to(c.weight_dtype);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    norm(p + "input_layernorm.weight");
    linear(p + "self_attn.q_proj.weight", c.n_heads * hd, c.d_model);
    linear(p + "self_attn.k_proj.weight", c.n_kv_heads * hd, c.d_model);
    linear(p + "self_attn.v_proj.weight", c.n_kv_heads * hd, c.d_model);
    linear(p + "self_attn.o_proj.weight", c.d_model, c.n_heads * hd);
    norm(p + "post_attention_layernorm.weight");
    linear(p + "mlp.gate_proj.weight", c.ffn, c.d_model);
    linear(p + "mlp.up_proj.weight", c.ffn, c.d_model);
    linear(p + "mlp.down_proj.weight", c.d_model, c.ffn);
  }
  norm("norm.weight");
  // Rotary tables (Hugging Face's cos_cached / sin_cached): [s_max, head_dim], the frequencies
  // repeated over both halves.
  Tensor cos = Tensor::empty({c.s_max, hd}, DType::kFloat32);
  Tensor sin = Tensor::empty({c.s_max, hd}, DType::kFloat32);
  for (int64_t p = 0; p < c.s_max; ++p) {
    for (int64_t i = 0; i < hd / 2; ++i) {
      const double inv_freq = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / hd);
      const double a = static_cast<double>(static_cast<float>(p) * static_cast<float>(inv_freq));
      for (int64_t half : {int64_t{0}, hd / 2}) {
        cos.data<float>()[p * hd + i + half] = static_cast<float>(std::cos(a));
        sin.data<float>()[p * hd + i + half] = static_cast<float>(std::sin(a));
      }
    }
  }
  w["rope.cos"] = cos;
  w["rope.sin"] = sin;
  return w;
}

std::vector<std::string> llama_input_names(const LlamaConfig& c) {
  std::vector<std::string> names{"tokens", "pos"};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    names.push_back("k" + std::to_string(l));
    names.push_back("v" + std::to_string(l));
  }
  return names;
}

std::vector<Tensor> llama_example_inputs(const LlamaConfig& c, int64_t tokens) {
  std::vector<Tensor> in;
  in.push_back(Tensor::zeros({1, tokens}, DType::kInt64));
  Tensor pos = Tensor::empty({tokens}, DType::kInt64);
  for (int64_t i = 0; i < tokens; ++i) pos.data<int64_t>()[i] = i;
  in.push_back(pos);
  for (int64_t l = 0; l < 2 * c.n_layers; ++l)
    in.push_back(Tensor::zeros(c.cache_shape(), DType::kFloat32));
  return in;
}

}  // namespace inplace::models
