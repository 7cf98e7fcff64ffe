// Compile time against graph size: a chain of N in-place ops on a cache-like state (x.add_,
// a slice write at a runtime position, mul_), compiled with compile(). Compilation must grow
// linearly in N. Run: build/bench/compile_bench [N...]   (default 1000 2000 5000 10000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "compiler/compile.h"
#include "ir/builder.h"

using namespace inplace;

namespace {

std::unique_ptr<Graph> chain(int n) {
  GraphBuilder b("chain");
  Node* x = b.placeholder("x");
  Node* k = b.placeholder("k");
  Node* pos = b.placeholder("pos");
  Node* end = b.call_function("_operator.add", {pos, 1});
  for (int i = 0; i < n; ++i) {
    switch (i % 3) {
      case 0:
        b.call_method("add_", {x, 1.0});
        break;
      case 1:
        b.call_function("_operator.setitem",
                        {x, arg::tuple({arg::slice(), arg::slice(pos, end)}), k});
        break;
      default:
        b.call_method("mul_", {x, 0.5});
        break;
    }
  }
  b.output(arg::tuple({b.call_method("sum", {x})}));
  return b.build();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {1000, 2000, 5000, 10000};
  std::printf("%8s %12s %14s %8s\n", "nodes", "compile_ms", "us_per_node", "steps");
  for (int n : sizes) {
    auto g = chain(n);
    std::vector<Tensor> examples{Tensor::meta({4, 16}, DType::kFloat32),
                                 Tensor::meta({4, 1}, DType::kFloat32),
                                 Tensor::meta({}, DType::kInt64)};
    auto t0 = std::chrono::steady_clock::now();
    CompiledProgram cp = compile(*g, examples);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%8zu %12.1f %14.2f %8zu\n", g->nodes().size(), ms, 1000.0 * ms / g->nodes().size(),
                cp.engine->plan().steps.size());
    std::fflush(stdout);
  }
  return 0;
}
