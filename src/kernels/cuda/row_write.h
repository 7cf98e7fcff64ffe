// A product's epilogue writes (launch_groups.h): the kv_cache_update steps after a one-row GEMV
// that store slices of its result into caches, done from the GEMV's epilogue instead.
#pragma once
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_groups.h"

namespace inplace::cuda {

// kv_cache_update of a slice of the one-row product y (n columns of `dtype`: float32 for the
// float32 GEMV, T for gemv_half and gemv_in_out), as a row write of its epilogue: the update a
// [1, H, 1, D] block of y's columns, the cache placed on its result (the binding), both of y's
// dtype with unit stride along D. False when the write has another form (fused_linear_kernels.cpp).
bool row_write_of(const StepCall& write, const void* y, int64_t n, DType dtype, GemvRowWrite* w);

}  // namespace inplace::cuda
