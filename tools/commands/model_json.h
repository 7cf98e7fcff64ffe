// The built-in model as `inplace bench` records it in its JSON and hands it to the PyTorch
// twins in bench/ (cpu and GPU runs alike).
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "frontend/safetensors.h"
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

// A script of bench/ (llama_torch.py, llama_torch_cuda.py): next to the build folder.
inline std::filesystem::path bench_script(const std::string& name) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return exe.parent_path().parent_path() / "bench" / name;
}

// Writes the weights into `dir` and returns the arguments that give a PyTorch twin the model:
// "--weights FILE --config 'JSON'".
inline std::string torch_model_args(const models::LlamaConfig& c, const models::LlamaWeights& w,
                                    const std::filesystem::path& dir) {
  const std::string weights = (dir / "weights.safetensors").string();
  write_safetensors(weights, std::map<std::string, Tensor>(w.begin(), w.end()));
  const nlohmann::json config = {{"vocab", c.vocab},           {"d_model", c.d_model},
                                 {"n_layers", c.n_layers},     {"n_heads", c.n_heads},
                                 {"n_kv_heads", c.n_kv_heads}, {"eps", c.eps}};
  return "--weights " + weights + " --config '" + config.dump() + "'";
}

}  // namespace inplace::cli
