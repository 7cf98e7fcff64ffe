// Recording a persistent program (kernels/cuda/persistent.h) needs no GPU: while a recording is
// active the launchers enqueue nothing, a GEMV with a task form becomes a task with its own
// arguments, and a launch without one refuses the recording, naming itself. Built with the CUDA
// backend (CI builds it without a GPU); the program itself runs in the GPU suite
// (cuda_graph_test.cpp).
#include <gtest/gtest.h>

#ifdef INPLACE_WITH_CUDA
#include "core/error.h"
#include "kernels/cuda/persistent.h"

namespace inplace::cuda {
namespace {

// Addresses of the right alignment; nothing is read or written while recording.
alignas(16) float x[64];
alignas(16) uint16_t w[64 * 64], w2[64 * 64];
alignas(16) float y[64], norm[64];
alignas(16) uint16_t long_w[20 * 2816];
alignas(16) float long_x[2816];

GemvBf16 one_row(GemvEpilogue e, bool with_norm) {
  GemvBf16 g;
  g.x = x;
  g.x_stride = 64;
  g.rows = 1;
  g.w = w;
  g.w2 = e == GemvEpilogue::kSwiGLU ? w2 : nullptr;
  g.k = 64;
  g.n = 20;
  g.y = y;
  g.y_stride = 20;
  g.residual = e == GemvEpilogue::kResidual ? y : nullptr;
  g.residual_stride = 20;
  g.epilogue = e;
  g.norm_w = with_norm ? norm : nullptr;
  g.eps = 1e-5f;
  return g;
}

TEST(PersistentRecording, ProductsBecomeTasksWithTheirArguments) {
  EXPECT_EQ(recording(), nullptr);
  EXPECT_FALSE(refuse_if_recording("nothing records"));
  begin_recording();
  ASSERT_NE(recording(), nullptr);
  gemv_bf16(one_row(GemvEpilogue::kNone, true), nullptr);
  gemv_bf16(one_row(GemvEpilogue::kSwiGLU, false), nullptr);
  gemv_bf16(one_row(GemvEpilogue::kResidual, false), nullptr);
  const Recording r = end_recording();
  EXPECT_EQ(recording(), nullptr);
  EXPECT_TRUE(r.refused.empty()) << r.refused;
  ASSERT_EQ(r.tasks.size(), 3u);
  ASSERT_EQ(r.gemv.size(), 3u);
  const int want_variant[] = {1, 4, 2};  // epilogue * 2 + norm
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.tasks[i].kind, TaskKind::kGemv);
    EXPECT_EQ(r.tasks[i].index, i);
    EXPECT_EQ(r.tasks[i].blocks, 3);  // 20 columns, 8 a block
    EXPECT_EQ(r.tasks[i].variant, want_variant[i]);
  }
  EXPECT_EQ(r.gemv[1].w2, w2);
  EXPECT_EQ(r.gemv[0].norm_w, norm);
  EXPECT_EQ(r.gemv[2].residual, y);
}

// A row longer than 1024 (four 16-byte chunks a lane for 32 lanes) is split over warps: the
// task carries the split, and its block count is the columns over the columns a block then
// takes. A rotated or cache-writing product keeps one warp a column (those epilogues pair
// columns within a block).
TEST(PersistentRecording, LongRowsAreSplitOverWarps) {
  const struct {
    int64_t k;
    int32_t split, blocks;
  } cases[] = {{1024, 1, 3}, {1032, 2, 5}, {2048, 2, 5}, {2816, 4, 10}};
  for (const auto& c : cases) {
    SCOPED_TRACE("k " + std::to_string(c.k));
    GemvBf16 g = one_row(GemvEpilogue::kResidual, true);
    g.k = c.k;
    g.x = long_x;
    g.x_stride = c.k;
    g.w = long_w;
    begin_recording();
    gemv_bf16(g, nullptr);
    const Recording r = end_recording();
    ASSERT_EQ(r.tasks.size(), 1u);
    EXPECT_EQ(r.gemv[0].split, c.split);
    EXPECT_EQ(r.tasks[0].blocks, c.blocks);  // 20 columns, 8 / split a block
  }
  GemvBf16 rotated = one_row(GemvEpilogue::kNone, true);
  rotated.k = 2816;
  rotated.x = long_x;
  rotated.x_stride = 2816;
  rotated.w = long_w;
  rotated.rot_cols = 16;
  rotated.rot_d = 8;
  rotated.cos = rotated.sin = norm;
  begin_recording();
  gemv_bf16(rotated, nullptr);
  const Recording r = end_recording();
  ASSERT_EQ(r.gemv.size(), 1u);
  EXPECT_EQ(r.gemv[0].split, 1);
  EXPECT_EQ(r.tasks[0].blocks, 3);
}

TEST(PersistentRecording, ALaunchWithoutATaskFormRefusesAndIsNotEnqueued) {
  begin_recording();
  gemv_bf16(one_row(GemvEpilogue::kNone, false), nullptr);
  GemvBf16 rows = one_row(GemvEpilogue::kNone, false);
  rows.rows = 3;  // not a decode row: the launcher has no task for it
  gemv_bf16(rows, nullptr);
  EXPECT_TRUE(refuse_if_recording("a later launch"));  // the first refusal is the one named
  const Recording r = end_recording();
  EXPECT_EQ(r.refused, "linear_bf16_weight (not one aligned row)");
  EXPECT_EQ(r.tasks.size(), 1u);
  try {
    make_program(r);
    ADD_FAILURE() << "a refused recording made into a program";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
}

TEST(PersistentRecording, AnUnalignedRowRefuses) {
  begin_recording();
  GemvBf16 g = one_row(GemvEpilogue::kNone, false);
  g.x = x + 1;  // the 16-byte path only
  gemv_bf16(g, nullptr);
  const Recording r = end_recording();
  EXPECT_FALSE(r.refused.empty());
  EXPECT_TRUE(r.tasks.empty());
}

}  // namespace
}  // namespace inplace::cuda
#endif  // INPLACE_WITH_CUDA
