// The built-in model's engines saved as one program file (methods `prefill` and `decode`, the
// weights stored once, the caches as caller-owned state) and loaded back memory-mapped.
#include <algorithm>

#include "core/error.h"
#include "models/llama_runner.h"
#include "program/program_file.h"

namespace inplace::models {

void save_llama_engines(const LlamaEngines& engines, const std::string& path) {
  std::vector<std::shared_ptr<const Engine>> methods;
  std::vector<std::string> names;
  if (engines.prefill) {
    methods.push_back(engines.prefill);
    names.push_back("prefill");
  }
  methods.push_back(engines.decode);
  names.push_back("decode");
  std::vector<StateEntry> caches;
  for (int i : engines.decode->mutated_inputs()) {
    const Binding& b = engines.decode->inputs()[i];
    caches.push_back({b.name, b.shape, b.dtype, Tensor(), Ownership::kCaller});
  }
  save_program(*Program::assemble("llama", std::move(methods), std::move(names),
                                  StateTable(std::move(caches))),
               path);
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
