// inplace_to_out_of_place: every mutation becomes an out-of-place op whose result is the new
// value of what it wrote, scattered back into its root; every later reader of any alias reads
// the new value. See Functionalizer for how, and docs/passes.md for the contract.
#include "passes/functionalizer.h"
#include "passes/meta_inference.h"
#include "passes/pipeline.h"

namespace inplace {

namespace {

class InplaceToOutOfPlacePass : public Pass {
 public:
  std::string name() const override { return "inplace_to_out_of_place"; }
  void run(Graph& graph, PassContext& ctx) override {
    Functionalizer(graph, ctx.options).run();
    annotate_metas(graph, cached_metas(graph, ctx));
  }
  // Its contract: no op writes its arguments any more.
  void check(const Graph& graph) const override { verify_functional(graph); }
};

}  // namespace

std::unique_ptr<Pass> make_inplace_to_out_of_place_pass() {
  return std::make_unique<InplaceToOutOfPlacePass>();
}

}  // namespace inplace
