// A dynamic output planned at a large bound costs what the call's extent needs: a 3-row call
// of an engine whose x may have 2^28 rows (a 4 GiB output at the bound) neither fills nor
// touches the bound's memory, and equals eager.
#include <sys/resource.h>

#include <chrono>

#include "compiler/differential.h"
#include "ir/builder.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// AddressSanitizer poisons the shadow of every allocation (512 MiB of shadow for the bound's
// 4 GiB), and runs slower: there only the values are checked.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

TEST(DynamicOutput, ASmallCallOfAHugeBoundTouchesOnlyItsExtent) {
  GraphBuilder b("scale");
  Node* x = b.placeholder("x");
  b.output(b.call_function("_operator.mul", {x, 2}));
  std::unique_ptr<Graph> g = b.build();
  CompileOptions o;
  o.dynamic_dims.push_back({"x", 0, int64_t{1} << 28});  // [2^28, 4] float32: 4 GiB
  const Tensor example = seeded_uniform({3, 4}, 31);
  CompiledProgram cp = compile(*g, {example.clone()}, o);
  EXPECT_GE(cp.engine->plan().output_buffer_bytes.at(0), int64_t{1} << 32);
  ExecutionContext ctx(cp.engine);
  const int64_t rss_before = peak_rss_bytes();
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t rows : {3, 1, 5}) {
    Tensor in = seeded_uniform({rows, 4}, static_cast<uint32_t>(40 + rows));
    ctx.bind_input(0, in);
    std::vector<Tensor> outs = ctx.execute();
    EagerRun ref = run_reference(*g, {in});
    ASSERT_EQ(outs.size(), 1u);
    EXPECT_TRUE(tensor_equal(outs[0], ref.outputs[0])) << rows << " rows";
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t grown = peak_rss_bytes() - rss_before;
  std::printf("3 calls: %.3f s, peak RSS grew %lld KiB\n", seconds,
              static_cast<long long>(grown / 1024));
  // Filling the bound writes 4 GiB per call (seconds, and 4 GiB resident).
  if (kSanitized) return;
  EXPECT_LT(grown, int64_t{256} << 20);
  EXPECT_LT(seconds, 2.0);
}

}  // namespace
