// Compiles a two-node graph (cache[1] = x; return x * 2) from the installed headers and
// library, runs it once, and checks the output and the in-place cache write.
#include <cstdio>

#include "inplace/inplace.h"

using namespace inplace;

int main() {
  GraphBuilder b("consumer");
  Node* cache = b.placeholder("cache");
  Node* x = b.placeholder("x");
  b.call_function("_operator.setitem", {cache, 1, x});
  b.output(arg::tuple({b.call_method("mul", {x, 2.0})}));
  auto graph = b.build();
  Tensor cache_t = Tensor::zeros({3, 2}, DType::kFloat32);
  Tensor x_t = Tensor::from_vector<float>({1.5f, -2.0f}, {2});
  CompiledProgram compiled = compile(*graph, {cache_t, x_t});
  ExecutionContext ctx(compiled.engine);
  ctx.bind_input("cache", cache_t);
  ctx.bind_input("x", x_t);
  std::vector<Tensor> out = ctx.execute();
  const float* y = out.at(0).data<float>();
  const float* c = cache_t.data<float>();
  const bool ok = y[0] == 3.0f && y[1] == -4.0f && c[2] == 1.5f && c[3] == -2.0f && c[0] == 0.0f;
  std::printf("consumer: y = [%g, %g], cache[1] = [%g, %g]: %s\n", y[0], y[1], c[2], c[3],
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
