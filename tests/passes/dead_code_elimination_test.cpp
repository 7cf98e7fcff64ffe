// dead_code_elimination: unused pure nodes go; writes, outputs and inputs stay.
#include "pass_test_util.h"

namespace inplace::testing {
namespace {

void dce(Graph& g) {
  PassContext ctx;
  make_dead_code_elimination_pass()->run(g, ctx);
  g.verify();
}

TEST(DeadCodeElimination, RemovesUnusedPureNodesOnly) {
  GraphBuilder b("dce");
  Node* x = b.placeholder("x");
  Node* unused_input = b.placeholder("unused");
  Node* dead = b.call_function("torch.neg", {x}, {}, "dead");
  b.call_function("torch.exp", {dead}, {}, "dead_user");
  b.get_attr("table", ft({1, 2}, {2}));
  Node* v = b.call_method("view", {x, -1}, {}, "written_view");
  b.call_method("add_", {v, 1.0}, {}, "write");
  Node* live = b.call_function("torch.mul", {x, 2.0}, {}, "live");
  b.output(live);
  auto g = b.build();
  dce(*g);
  std::vector<std::string> names;
  for (Node* n : g->nodes()) names.push_back(n->name);
  EXPECT_EQ(names, (std::vector<std::string>{"x", "unused", "written_view", "write", "live",
                                             "output"}));
  (void)unused_input;
}

}  // namespace
}  // namespace inplace::testing
