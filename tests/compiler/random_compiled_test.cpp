// Randomised differential test of the engine: the functionalization issue's random programs
// (views, in-place ops, setitem with random index forms, reads before and after each write),
// compiled with aliasing on and off; outputs and final inputs and buffers must equal eager.
// A failure prints its seed; replay one with INPLACE_SEED=<seed>.
#include <cstdlib>

#include "compiler/differential.h"
#include "passes/meta_inference.h"
#include "random_program.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

void check_seed(uint64_t seed) {
  RandomProgram p = make_random_program(seed);
  std::vector<Tensor> inputs;
  for (Node* n : p.graph->placeholders()) inputs.push_back(p.inputs.at(n->name));
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " (replay: INPLACE_SEED=" << seed << ")\n"
                                    << p.graph->to_string());
  try {
    expect_compiled_equals_eager(*p.graph, inputs, 1e-5);
  } catch (const Error& e) {
    ADD_FAILURE() << "seed " << seed << ": " << e.what();
  }
}

TEST(RandomCompiled, CompiledEqualsEagerAliasedAndCopyBack) {
  if (const char* s = std::getenv("INPLACE_SEED")) {
    check_seed(std::strtoull(s, nullptr, 10));
    return;
  }
  const uint64_t count = std::getenv("INPLACE_RANDOM_COUNT")
                             ? std::strtoull(std::getenv("INPLACE_RANDOM_COUNT"), nullptr, 10)
                             : 1500;
  for (uint64_t seed = 1; seed <= count; ++seed) {
    check_seed(seed);
    if (::testing::Test::HasFailure()) break;  // one replayable seed is enough
  }
}

// Compile once, run on every value: programs whose positions and indices are inputs are compiled
// once and run on the example and five fresh draws (positions across their whole valid range,
// sometimes out of it), through the aliased, copy-back and saved-and-loaded engines.
void check_draws(uint64_t seed, int* with_positions) {
  RandomProgramOptions o;
  o.runtime_positions = true;
  RandomProgram p = make_random_program(seed, o);
  *with_positions += !p.valid_positions.empty();
  std::vector<std::vector<Tensor>> draws{in_placeholder_order(p, p.inputs)};
  for (uint64_t k = 0; k < 5; ++k)
    draws.push_back(in_placeholder_order(p, redraw_inputs(p, seed * 7919 + k)));
  SCOPED_TRACE(::testing::Message()
               << "seed " << seed << " (replay: INPLACE_DRAW_SEED=" << seed << ")\n"
               << p.graph->to_string());
  try {
    expect_engine_exact_on_draws(*p.graph, in_placeholder_order(p, p.inputs), draws, 1e-5);
  } catch (const Error& e) {
    std::string functional;
    try {
      PassOptions po;
      for (Node* n : p.graph->placeholders())
        po.input_metas[n->name] = Meta{p.inputs.at(n->name).shape(), p.inputs.at(n->name).dtype()};
      FunctionalProgram fp = make_functional(*p.graph, po);
      functional = fp.graph->to_string();
      MetaTable metas = infer_metas(*fp.graph, po);
      functional += "nodes without a meta:";
      for (Node* n : fp.graph->nodes())
        if (n->is_call() && !metas.has(n)) functional += " " + n->name;
    } catch (const Error& f) {
      functional = f.what();
    }
    ADD_FAILURE() << "seed " << seed << ": " << e.what() << "\nfunctional:\n" << functional;
  }
}

TEST(RandomCompiled, CompileOnceRunOnEveryValue) {
  int with_positions = 0;
  if (const char* s = std::getenv("INPLACE_DRAW_SEED")) {
    check_draws(std::strtoull(s, nullptr, 10), &with_positions);
    return;
  }
  const uint64_t count = std::getenv("INPLACE_RANDOM_COUNT")
                             ? std::strtoull(std::getenv("INPLACE_RANDOM_COUNT"), nullptr, 10)
                             : 800;
  for (uint64_t seed = 1; seed <= count; ++seed) {
    check_draws(seed, &with_positions);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(with_positions, static_cast<int>(count / 2)) << "programs with runtime positions";
}

}  // namespace
