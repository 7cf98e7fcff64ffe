// Which steps of a plan share a launch on a GPU, decided once when a context is made (each
// launch costs a few microseconds whatever it moves):
// - epilogue writes: a product step and up to two steps right after it that read slices of its
//   result and write only bindings the product does not touch (a decoder layer's q/k/v GEMV and
//   its k and v kv_cache_update), when the kernel table has a kernel for the two ops
//   (KernelTable::add_epilogue_writes); that kernel may still refuse a form at run time;
// - pairs: two adjacent steps of one op with a pair kernel (KernelTable::add_pair) that write
//   bindings or temporaries, neither reading or writing memory the other writes (temporaries
//   compared by their planned arena ranges).
// A run takes a group of epilogue writes first; a pair inside it runs when the kernel refuses.
#pragma once
#include <vector>

#include "backend/kernel_table.h"
#include "backend/plan.h"

namespace inplace {

struct LaunchGroups {
  // writes[q]: step q and the write_count[q] steps after it run through this kernel (null: no).
  std::vector<const WritesKernel*> writes;
  std::vector<int> write_count;
  // pair[q]: steps q and q + 1 run as one launch through this kernel (null: not paired).
  std::vector<const PairKernel*> pair;
};

LaunchGroups plan_launch_groups(const Plan& plan, DeviceType device);

}  // namespace inplace
