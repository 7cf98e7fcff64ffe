// The engine's plan: device-neutral steps over buffers, every operand already resolved to
// (buffer, element offset, shape, strides). Built once; executed by ExecutionContext with no
// graph walk, no string lookup and no allocation of intermediates.
#pragma once
#include <string>
#include <vector>

#include "core/value.h"
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

// A tensor inside a buffer.
struct TensorRef {
  BufferId buffer;
  int64_t offset = 0;  // elements
  Shape shape, strides;
  DType dtype = DType::kFloat32;
};

// Where a step's tensor operand sits inside its argument template: the path of item indices.
struct TensorSlot {
  std::vector<int> path;
  TensorRef ref;
};

enum class StepKind : uint8_t {
  kOut,    // op->out(args, outs): writes into planned results
  kEager,  // op->eager(args), results copied into planned buffers
  kCopy,   // outs[0].copy_from(args[0]): write-back of a mutated value
};

struct Step {
  StepKind kind = StepKind::kOut;
  const OpDef* op = nullptr;
  std::string node;          // the graph node it comes from (errors, `inplace plan`)
  std::vector<Value> args;   // bound arguments; tensor operands are filled from `tensors`
  std::vector<TensorSlot> tensors;
  std::vector<TensorRef> outs;
  std::string writes_binding;  // when a result lands in an input binding: its name
};

struct Binding {
  std::string name;
  Shape shape;
  DType dtype = DType::kFloat32;
};

enum class AliasKind : uint8_t { kKvCacheUpdate, kUser };
const char* alias_kind_name(AliasKind k);
bool parse_alias_kind(const std::string& s, AliasKind* out);

struct AliasedIO {
  int output = 0;
  int input = 0;
  AliasKind kind = AliasKind::kUser;
  bool operator==(const AliasedIO&) const = default;
};

struct ArenaSlot {
  int64_t offset_bytes = 0;
  int64_t nbytes = 0;
};

struct Plan {
  std::vector<Binding> inputs, outputs;
  std::vector<Step> steps;
  std::vector<ArenaSlot> arena;           // by arena buffer index
  int64_t arena_bytes = 0;
  std::vector<Tensor> constants;          // by constant buffer index
  std::vector<std::string> constant_names;
  std::vector<int64_t> output_buffer_bytes;  // by output buffer index
  std::vector<TensorRef> output_refs;     // what each engine output is
  std::vector<AliasedIO> aliased_io;
  int original_output_count = 0;
  // The input bindings the engine writes, sorted: its aliased inputs (written in place) and,
  // in the copy-back engine, the inputs its trailing copy steps write back. Nothing else of
  // the caller's is ever written (check_write_set, write_set.h).
  std::vector<int> mutated_inputs;
};

}  // namespace inplace
