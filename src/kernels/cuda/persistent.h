// A decode step as one persistent kernel (persistent.cu, docs/cuda.md "One kernel a step").
//
// While a recording is active on a thread, the launchers of this backend do not enqueue: a
// launcher whose kernel has a task form (the bf16 GEMVs, the decode attention, the indexed reads
// and writes) adds a task, and every other launch (an elementwise kernel, cuBLAS, a copy) marks
// the recording refused, naming itself. A recording that was not refused becomes a Program: its
// tables in device memory, run by one cooperative launch of as many blocks as fit the GPU, each
// walking the tasks in order, its share of a task's virtual blocks at a time, with a grid-wide
// barrier between tasks. A product fetches its first weight chunk before it waits at the
// barrier (weights are constants), so that fetch overlaps the wait.
//
// The tables hold the launch arguments the launchers computed (addresses of bound tensors and
// temporaries, device positions), so a program is valid exactly as long as a captured graph of
// the same launches would be: the context records it while capturing, and both are replaced
// together.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/launch.h"

namespace inplace::cuda {

// Threads of every block of the persistent kernel (the task forms' block size).
constexpr int kTaskThreads = 256;

enum class TaskKind : int32_t {
  kGemv,        // gemv_bf16, one row, the 16-byte path
  kAttention,   // attention's decode form
  kIndexRead,   // index_read (or index_read_pair: `second` set)
  kIndexWrite,  // index_write (general form)
  kRowsWrite,   // index_write of float32 rows (write_rows_f32)
};

// One task: `blocks` virtual blocks of kTaskThreads threads; `index` into its kind's table.
struct TaskRef {
  TaskKind kind = TaskKind::kGemv;
  int32_t index = 0;
  int32_t blocks = 0;
  int32_t variant = 0;  // kGemv: epilogue * 2 + norm; kAttention: log2 of the group width
};

// Attention's decode form as split tasks: block (row, split) walks its share of the keys present
// and leaves its partial in `part` (per row and split: m, l, 2 floats of padding, then the
// unnormalised output); the row's last split to finish (counted in `count`, reset by it) merges.
struct AttentionTask {
  Attention a;
  int32_t splits = 1;
  int64_t rows = 0;
  // Placed in the program's memory by make_program: at float part_at of the recording's
  // partials (rows * splits * (4 + E) floats) and counter count_at of its counters (rows).
  int64_t part_at = 0, count_at = 0;
  float* part = nullptr;
  uint32_t* count = nullptr;
};

// An indexed read or write over n elements (n4: float4s for kRowsWrite), or two reads.
struct MapTask {
  IndexMap a, b;
  int64_t na = 0, nb = 0;
  int32_t blocks_each = 0;  // virtual blocks of each map
  bool second = false;      // b is a second read (index_read_pair)
};

// What a recording collects.
struct Recording {
  std::vector<TaskRef> tasks;
  std::vector<GemvBf16> gemv;
  std::vector<AttentionTask> attention;
  std::vector<MapTask> map;
  int64_t scratch_floats = 0, counters = 0;  // attention partials and row counters
  std::string refused;                       // the first launch without a task form
};

// The recording of this thread, or null.
Recording* recording();
// Starts a recording on this thread (replacing any).
void begin_recording();
// Ends this thread's recording and returns it.
Recording end_recording();
// True when this thread records: the launch `what` is not enqueued, and the recording is refused
// (naming `what` unless an earlier launch was named). Called by every launch without a task form.
bool refuse_if_recording(const char* what);

// The grid the persistent kernel runs on this device (blocks that are co-resident).
int persistent_grid();

// A recorded program in device memory (persistent.cu).
struct Program;
Program* make_program(const Recording& r);
void launch_program(const Program* p, void* stream);
void destroy_program(Program* p);
int64_t program_tasks(const Program* p);

}  // namespace inplace::cuda
