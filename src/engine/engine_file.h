// Engine files: an engine saved with its plan, weights and aliased I/O map, loaded back without
// the graph. docs/engine-format.md describes the bytes. Loading refuses anything broken with an
// inplace::Error (kCorrupt / kAbiMismatch / kIO) naming the file; it never crashes on it.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"

namespace inplace {

inline constexpr char kEngineFileMagic[8] = {'I', 'N', 'P', 'L', 'A', 'C', 'E', '\0'};
// ABI 2: runtime values (scalars, int operands, dynamic refs, the refresh) in PLAN, and
// MUTATED_INPUTS (the inputs an engine may write, checked against every step).
// ABI 3: the trailing checksum is XXH3-64 (was FNV-1a 64, byte by byte).
// Within ABI 3, PLAN may end with the prepared bindings (Plan::prepared), written only by an
// engine that has some: a file without them is what it was.
inline constexpr uint32_t kEngineFileAbi = 3;

// The fields, in file order (their count is stored and checked).
enum EngineFileField : uint32_t {
  kFieldName = 0,
  kFieldTargetDevice,
  kFieldPlan,
  kFieldInputBindingNames,
  kFieldOutputBindingNames,
  kFieldMetadata,
  kFieldRequiresOutputAllocator,
  kFieldAliasedIO,
  kFieldMutatedInputs,
  kFieldWeights,
  kEngineFileFieldCount,
};
const char* engine_file_field_name(uint32_t field);

// `with_weights = false` leaves WEIGHTS empty: a program file stores every method's weights once
// and hands them back to deserialize_engine as `external`.
// Both refuse (kUnsupported) an engine the loader would refuse (its PLAN read back with the
// loader's reader). save_engine writes a temporary next to `path` and renames it over `path`.
std::string serialize_engine(const Engine& engine, bool with_weights = true);
void save_engine(const Engine& engine, const std::string& path);
// Weights an engine file without WEIGHTS takes from elsewhere, in its constant order.
struct ExternalWeights {
  std::vector<std::string> names;
  std::vector<Tensor> tensors;
  DeviceWeights* device_weights = nullptr;  // their uploads off the host, shared (device_weights.h)
};
// `label` names the source in errors (a path, or "<memory>"). With `external`, the file's
// WEIGHTS must be empty and the plan's constants are `external` (checked like stored ones).
// Weights are copied out of `bytes`, unless `keep_alive` owns them: then (64-byte aligned in
// memory, as a loaded file's are) the weights point into `bytes`, which must stay unchanged
// while `keep_alive` lives, and hold it. `device`, when given, is where the engine runs instead
// of the device it was compiled for (its plan is device-neutral; every op needs a kernel there).
std::shared_ptr<const Engine> deserialize_engine(std::string_view bytes, const std::string& label,
                                                 const ExternalWeights* external = nullptr,
                                                 std::shared_ptr<const void> keep_alive = nullptr,
                                                 std::optional<Device> device = std::nullopt);
// Reads the file once into private read-only memory (core/mapped_file.h) and loads it; the
// weights point into that memory, so the file may change or vanish afterwards.
std::shared_ptr<const Engine> load_engine(const std::string& path);

// XXH3-64 over `bytes` (core/checksum.h): the file's trailing checksum covers every byte before
// it.
uint64_t engine_file_checksum(std::string_view bytes);
// True when `bytes` starts with the engine file magic (the CLI uses it to tell files apart).
bool is_engine_file(std::string_view bytes);

// ALIASED_IO text: records "OUT@IN@KIND" joined by '%', OUT and IN as "<index>:<name>".
std::string serialize_aliased_io(const Engine& engine);
// MUTATED_INPUTS text: "<index>:<name>" per input the engine writes, joined by '%'.
std::string serialize_mutated_inputs(const Engine& engine);

}  // namespace inplace
