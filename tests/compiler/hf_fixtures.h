// The Hugging Face decoder graphs torch.export recorded (tests/frontend/fixtures/hf/*.json,
// without weights) and inputs for them: random weights made here, token ids and positions
// chosen from a seed.
#pragma once
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/differential.h"
#include "frontend/graph_json.h"

namespace inplace::testing {

// The GPU's fusion choices (sibling merges, norm prologues, fuse_pointwise asking cuda's kernel
// where the build has it), compiled for the cpu; `skipped` passes left out.
inline CompileOptions gpu_like_options(std::vector<std::string> skipped = {}) {
  CompileOptions o;
  o.merge_sibling_linears = true;
  o.fuse_norm_prologues = true;
  o.prepare_weights = false;
#ifdef INPLACE_WITH_CUDA
  o.fusion_device = DeviceType::kCuda;
#else
  skipped.push_back("fuse_pointwise");  // no cuda kernel to ask in this build
#endif
  o.skip_passes = std::move(skipped);
  return o;
}

inline std::unique_ptr<Graph> hf_fixture(const std::string& name) {
  return read_graph_json(std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures/hf/" + name +
                         ".json");
}

// The bfloat16 fixture `model` (e.g. "llama_bf16") with its dtype renamed to float16: the same
// graph at float16, named `name`.
inline std::unique_ptr<Graph> hf_fixture_at_float16(const std::string& model,
                                                    const std::string& name) {
  std::ifstream in(std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures/hf/" + model +
                   ".json");
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  for (size_t at; (at = json.find("bfloat16")) != std::string::npos;)
    json.replace(at, 8, "float16");
  return read_graph_json_string(json, name);
}

// One tensor per placeholder: int64 `input_ids` in [0, 128) and other int64 inputs (positions)
// at seed % positions, bools all true, floats uniform from the seed in the placeholder's dtype.
inline std::vector<Tensor> seeded_hf_inputs(const Graph& g, uint32_t seed, uint32_t positions) {
  std::vector<Tensor> out;
  for (Node* p : g.placeholders()) {
    if (*p->meta.dtype == DType::kInt64) {
      Tensor t = Tensor::zeros(*p->meta.shape, DType::kInt64);
      for (int64_t i = 0; i < t.numel(); ++i)
        t.data<int64_t>()[i] = p->name == "input_ids" ? (seed * 31 + i) % 128 : seed % positions;
      out.push_back(t);
    } else if (*p->meta.dtype == DType::kBool) {
      out.push_back(Tensor::full(*p->meta.shape, Scalar(true), DType::kBool));
    } else {
      out.push_back(seeded_uniform(*p->meta.shape, seed * 17 + static_cast<uint32_t>(out.size()))
                        .to(*p->meta.dtype));
    }
  }
  return out;
}

}  // namespace inplace::testing
