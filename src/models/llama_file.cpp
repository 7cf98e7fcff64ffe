// The built-in model's engines as one program (methods `prefill` and `decode`, the weights
// stored once, the caches as caller-owned state), saved as a program file and loaded back
// memory-mapped.
#include <algorithm>

#include "core/error.h"
#include "models/llama_runner.h"
#include "program/program_file.h"

namespace inplace::models {

std::shared_ptr<const Program> llama_program(const LlamaEngines& engines) {
  std::vector<std::shared_ptr<const Engine>> methods;
  std::vector<std::string> names;
  if (engines.prefill) {
    methods.push_back(engines.prefill);
    names.push_back("prefill");
  }
  methods.push_back(engines.decode);
  names.push_back("decode");
  std::vector<StateEntry> caches;  // the decode inputs after tokens and positions
  const std::vector<Binding>& inputs = engines.decode->inputs();
  for (size_t i = 2; i < inputs.size(); ++i)
    caches.push_back(
        {inputs[i].name, inputs[i].shape, inputs[i].dtype, Tensor(), Ownership::kCaller});
  return Program::assemble("llama", std::move(methods), std::move(names),
                           StateTable(std::move(caches)));
}

void save_llama_engines(const LlamaEngines& engines, const std::string& path) {
  save_program(*llama_program(engines), path);
}

LlamaEngines load_llama_engines(const std::string& path) {
  std::shared_ptr<const Program> program = load_program(path);
  LlamaEngines e;
  for (const Method& m : program->methods())
    if (m.name == "prefill") e.prefill = m.engine;
  e.decode = program->method("decode").engine;
  return e;
}

int64_t llama_engine_weight_bytes(const LlamaEngines& engines) {
  std::vector<const Storage*> seen;
  int64_t n = 0;
  for (const auto& e : {engines.prefill, engines.decode}) {
    if (!e) continue;
    for (const Tensor& t : e->plan().constants) {
      if (std::find(seen.begin(), seen.end(), t.storage().get()) != seen.end()) continue;
      seen.push_back(t.storage().get());
      n += static_cast<int64_t>(t.storage()->nbytes());
    }
  }
  return n;
}

}  // namespace inplace::models
