// What a backend asks of the graph rewrites: which fusions pay on its kernels and up to how many
// input rows a product counts as a decode step. The backend declares them (from its own folder,
// as it registers its kernels); compile() fills the passes' options from the engine's device, so
// a pass never asks which device it compiles for.
#pragma once
#include <cstdint>

#include "core/device.h"

namespace inplace {

struct FusionPreferences {
  // A fused_linear / gated_mlp whose input has at most this many rows is a decode step: the
  // fusing passes join its prologue and epilogues (the backend's fused kernels serve that many
  // rows in one pass over the weight); a prompt keeps its matmul.
  int64_t decode_max_rows = 0;
  // Sibling products of one input as one product over the stacked weights (merge_sibling_linears):
  // pays where a launch costs more than the bytes it moves.
  bool merge_sibling_linears = false;
  // An RMSNorm inside the product it feeds (fuse_norm_prologues): pays where the kernel
  // normalises its input rows as it reads them.
  bool fuse_norm_prologues = false;
  // Chains of elementwise ops as one fused_pointwise step (fuse_pointwise): where the backend
  // has a kernel for it.
  bool fuse_pointwise = false;
  // Row reductions (sum, mean, amax, amin over the last dim) inside those chains, one fused_rows
  // step (a row's value computed once, not once an element of the broadcast).
  bool fuse_rows = false;
  // A decode product over a read-only weight stored [in, out] (GPT-2's Conv1D) reads a copy of
  // the weight in [out, in] rows, made once when the weight is bound (prepare_in_out_weights):
  // pays where the [out, in] GEMV streams faster than the [in, out] product, at the cost of the
  // copy's memory.
  bool prepare_weights = false;
};

// The preferences `device`'s backend declares.
FusionPreferences fusion_preferences(DeviceType device);

// Declared by each backend in its folder: src/kernels/cpu (cpu_backend.cpp), src/kernels/cuda.
FusionPreferences cpu_fusion_preferences();
#ifdef INPLACE_WITH_CUDA
FusionPreferences cuda_fusion_preferences();
#endif

}  // namespace inplace
