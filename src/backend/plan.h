// The engine's plan: device-neutral steps over buffers, every operand already resolved to
// (buffer, element offset, shape, strides). Built once; executed by ExecutionContext with no
// graph walk, no string lookup and no allocation of intermediates.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "backend/symbolic.h"
#include "core/value.h"
#include "ir/mutation.h"
#include "ops/registry.h"

namespace inplace {

enum class BufferKind : uint8_t {
  kInput,     // the caller's tensor bound to input binding `index`
  kOutput,    // a fresh result returned as output buffer `index`
  kArena,     // an intermediate at a planned offset in the context's arena
  kConstant,  // a weight or read-only buffer owned by the engine
};
const char* buffer_kind_name(BufferKind k);

struct BufferId {
  BufferKind kind = BufferKind::kArena;
  int32_t index = 0;
  bool operator==(const BufferId&) const = default;
};

// A tensor inside a buffer. A dynamic ref (dyn >= 0) takes its offset, shape and strides on
// every call from the refresh (see Plan::refresh); the fields here are then those of the
// example, and `shape` of a step result is its bound (the planned memory).
struct TensorRef {
  BufferId buffer;
  int64_t offset = 0;  // elements
  Shape shape, strides;
  DType dtype = DType::kFloat32;
  int32_t dyn = -1;
};

// An int argument that takes the value of runtime scalar `scalar` on every call.
struct IntSlot {
  std::vector<int> path;
  int32_t scalar = 0;
};

// Where a step's tensor operand sits inside its argument template: the path of item indices.
struct TensorSlot {
  std::vector<int> path;
  TensorRef ref;
};

enum class StepKind : uint8_t {
  kOut,    // the kernel table's kernel: writes into planned results
  kEager,  // eager_call(op, args), results copied into planned buffers
  kCopy,   // outs[0].copy_from(args[0]): write-back of a mutated value
  kView,   // no kernel: recomputes views of dynamic operands in the refresh (outs are views)
};

struct Step {
  StepKind kind = StepKind::kOut;
  const OpDef* op = nullptr;
  std::string node;         // the graph node it comes from (errors, `inplace plan`)
  std::vector<Value> args;  // bound arguments; tensor operands are filled from `tensors`
  std::vector<TensorSlot> tensors;
  std::vector<IntSlot> ints;  // int arguments that are runtime scalars
  std::vector<TensorRef> outs;
  std::string writes_binding;  // when a result lands in an input binding: its name
  // Runs on the host: the engine's device has no kernel for the op (or its kernel refuses these
  // arguments). The backend waits for its queue, copies the operands to the host, runs the cpu
  // kernel and copies the results back (run_host_step, backend/host_step.h).
  bool on_host = false;
};

struct Binding {
  std::string name;
  Shape shape;  // for a dynamic binding: the maximum extent of every dim
  DType dtype = DType::kFloat32;
  std::vector<int64_t> dynamic_dims;  // dims whose extent may be smaller on a call
  int32_t dyn = -1;                   // the dynamic value of a dynamic input binding
  // Declared range of every element of an integer input (checked on every call).
  std::optional<SymRange> value_range;
};

// An input binding the engine fills itself, from a caller binding, each time that binding is
// bound (and before the first call): a weight prepared once instead of on every call, such as
// an [in, out] weight transposed into the [out, in] rows a product reads. Its memory is
// the context's own, at a fixed address. Prepared bindings come after every caller binding;
// Engine::inputs() does not list them and the caller cannot bind them.
struct PreparedInput {
  int32_t input = 0;          // the binding filled
  int32_t source = 0;         // the caller binding it is made from
  std::vector<int64_t> perm;  // the binding is source.permute(perm), contiguous
};

struct ArenaSlot {
  int64_t offset_bytes = 0;
  int64_t nbytes = 0;
};

// One entry of the refresh: the per-call work done before the first kernel runs.
struct RefreshItem {
  enum class Kind : uint8_t { kInput, kScalar, kStep };
  Kind kind = Kind::kScalar;
  int32_t index = 0;  // input binding, scalar or step
};

struct Plan {
  Device device;  // where every buffer lives and every kernel runs
  std::vector<Binding> inputs, outputs;
  // Runtime values (empty for an engine whose every shape and offset is static).
  std::vector<SymExpr> scalars;
  std::vector<std::string> scalar_names;  // for errors and `inplace plan`
  std::vector<RefreshItem> refresh;       // in order
  int32_t num_dyn = 0;                    // dynamic values computed by the refresh
  std::vector<Step> steps;
  std::vector<ArenaSlot> arena;  // by arena buffer index
  int64_t arena_bytes = 0;
  std::vector<Tensor> constants;  // by constant buffer index
  std::vector<std::string> constant_names;
  std::vector<int64_t> output_buffer_bytes;  // by output buffer index
  std::vector<TensorRef> output_refs;        // what each engine output is
  std::vector<Mutation> aliased_io;
  int original_output_count = 0;
  // The input bindings the engine writes, sorted: its aliased inputs (written in place) and,
  // in the copy-back engine, the inputs its trailing copy steps write back. Nothing else of
  // the caller's is ever written (check_write_set, write_set.h).
  std::vector<int> mutated_inputs;
  // Bindings the engine prepares from caller bindings (after them in `inputs`).
  std::vector<PreparedInput> prepared;
  int caller_inputs() const { return static_cast<int>(inputs.size() - prepared.size()); }
};

}  // namespace inplace
