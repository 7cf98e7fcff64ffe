// compile(): the whole path from a program with in-place ops to an engine that writes the
// mutated state into the caller's memory: the pass pipeline (compile_passes(): the
// functionalization passes, then buffer lifting and the KV-cache update matcher), then the
// engine builder (reinplacing, memory planning).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/functional_runner.h"
#include "engine/engine.h"
#include "ir/mutation.h"

namespace inplace {

struct CompileOptions {
  bool alias = true;  // false: the copy-back engine
  Device device;      // where the engine runs (`--device cuda`)
  // An op with no kernel on `device` (or whose kernel refuses its arguments) is refused, naming
  // it (`--strict-device`); by default it runs on the host, named in a warning on stderr.
  bool strict_device = false;
  // The merge_sibling_linears pass (q/k/v as one product): by default as the device's backend
  // prefers (backend/fusion_preferences.h: on for GPU engines).
  std::optional<bool> merge_sibling_linears;
  // The fuse_norm_prologues pass (an RMSNorm inside the product it feeds) and fuse_addmm's
  // LayerNorm prologue: by default as INPLACE_FUSE_NORM_PROLOGUES (0 or 1) in the environment
  // says, else as the device's backend prefers (on for GPU engines).
  std::optional<bool> fuse_norm_prologues;
  // prepare_in_out_weights (a decode product over a read-only weight stored [in, out] reads a
  // copy of it in [out, in] rows, made when the weight is bound): by default as the device's
  // backend prefers (on for the cpu), unless INPLACE_PREPARE_WEIGHTS (0 or 1) in the environment
  // says. The copy costs the weight's bytes once more.
  std::optional<bool> prepare_weights;
  // fuse_pointwise's row reductions (fused_rows steps): by default as INPLACE_FUSE_ROWS (0 or 1)
  // in the environment says, else as the device's backend prefers (on for the cpu).
  std::optional<bool> fuse_rows;
  // The device whose backend's fusion preferences and kernel checks the passes follow; by
  // default `device`'s (a test sees on the cpu, without a GPU, the graph a cuda engine runs).
  std::optional<DeviceType> fusion_device;
  // Rewrites left out by name (differential tests of one rewrite: the graph with and without
  // it); only the optional rewrites of engine_passes() may be named.
  std::vector<std::string> skip_passes;
  // User-declared aliasing (`--mutated-input IN=OUT`): the input by name (placeholder or
  // buffer target) or as "input.<i>", and the flat output that is its new value; the engine
  // writes that output into the input's memory.
  std::vector<DeclaredMutation> mutated_inputs;
  bool verbose = false;
  // Bounded dynamic dims of inputs (`--dynamic INPUT:DIM:MAX`): memory is planned at MAX and
  // each call's extent, up to MAX, is checked when the input is bound.
  struct DynamicDim {
    std::string input;
    int64_t dim = 0, max = 0;
  };
  std::vector<DynamicDim> dynamic_dims;
  // The values an integer input may take (`--value-range INPUT:LO:HI`): bounds sizes that
  // depend on it (arange(n)); each call's value is checked against it.
  struct ValueRange {
    std::string input;
    int64_t lo = 0, hi = 0;
  };
  std::vector<ValueRange> value_ranges;
  // Off the host: weights uploaded once for every engine compiled with it (compile_program's
  // methods share one copy on the device); null: this engine's own copy.
  DeviceWeights* device_weights = nullptr;
};

struct CompiledProgram {
  std::shared_ptr<const Engine> engine;
  FunctionalProgram program;  // the graph the engine was built from, with io_map
  // Engine input bindings that are lifted buffers: binding index -> get_attr target.
  std::vector<std::pair<int, std::string>> lifted_buffers;
  int num_user_inputs = 0;
};

// `example_inputs`: one per placeholder, in graph order (real tensors or metas); they fix the
// binding shapes. Lifted buffers take their shapes from the graph's constants.
CompiledProgram compile(const Graph& graph, const std::vector<Tensor>& example_inputs,
                        const CompileOptions& options = {});

}  // namespace inplace
