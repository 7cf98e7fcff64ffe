// --dynamic and --value-range given twice for one input are refused, naming the input and both
// values, where the last one used to win silently (compile, plan, exec and a program's method).
#include "cli/cli_util.h"
#include "ir/builder.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

using CliRuntimeOptions = Cli;

TEST_F(CliRuntimeOptions, AnOptionGivenTwiceForOneInputIsRefusedNamingIt) {
  GraphBuilder b("g");
  Node* x = b.placeholder("x");
  b.set_meta(x, {3, 4}, DType::kFloat32);
  Node* n = b.placeholder("n");
  b.set_meta(n, {}, DType::kInt64);
  b.output(
      arg::tuple({b.call_function("_operator.mul", {x, 2}), b.call_function("torch.arange", {n})}));
  std::string g = write_graph(*b.build());
  const std::string out = " -o " + path("e.inplace");
  CliResult dyn = run("compile " + g + " --dynamic x:0:8 --dynamic x:0:16" + out);
  EXPECT_TRUE(one_line_error(dyn, 1, {"--dynamic", "dim 0 of input 'x'", "twice", "8", "16"}));
  CliResult range = run("plan " + g + " --value-range n:0:4 --value-range n:0:9");
  EXPECT_TRUE(one_line_error(range, 1, {"--value-range", "input 'n'", "[0, 4]", "[0, 9]"}));
  CliResult method = run("compile --method step=" + g +
                         " --value-range step.n:0:4 --value-range step.n:1:4" + out);
  EXPECT_TRUE(one_line_error(method, 1, {"--value-range", "input 'n'", "[0, 4]", "[1, 4]"}));
  // Once each (two dims of one input are two options, not one twice): compiles.
  CliResult ok = run("compile " + g + " --dynamic x:0:8 --dynamic x:1:8 --value-range n:0:4" + out);
  EXPECT_EQ(ok.code, 0) << ok.err;
}

}  // namespace
