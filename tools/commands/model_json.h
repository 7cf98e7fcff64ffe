// The built-in model as `inplace bench` records it in its JSON (cpu and GPU runs alike).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "models/llama.h"

namespace inplace::cli {

inline nlohmann::json llama_model_json(const std::string& size, const models::LlamaConfig& c,
                                       int64_t weight_bytes) {
  return {{"size", size},
          {"parameters", c.parameters()},
          {"weight_bytes", weight_bytes},
          {"d_model", c.d_model},
          {"n_layers", c.n_layers},
          {"n_heads", c.n_heads},
          {"n_kv_heads", c.n_kv_heads},
          {"ffn", c.ffn},
          {"vocab", c.vocab}};
}

}  // namespace inplace::cli
