// Program files: one file holds every method's engine, the weights once, and the state table
// with its initial values. Built on the engine-file format: the same framing (magic, ABI, a
// fixed list of length-prefixed fields, XXH3-64 checksum), each method an engine file whose
// WEIGHTS point into the program's, and every engine-file check applied to every method.
// docs/programs.md describes the bytes. Loading refuses anything broken with an
// inplace::Error naming the file (and the method or state entry), and leaks nothing.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "program/engine_program.h"
#include "program/program.h"

namespace inplace {

inline constexpr char kProgramFileMagic[8] = {'I', 'N', 'P', 'L', 'P', 'R', 'O', 'G'};
// ABI 2: the trailing checksum is XXH3-64 (was FNV-1a 64).
inline constexpr uint32_t kProgramFileAbi = 2;

enum ProgramFileField : uint32_t {
  kProgramFieldName = 0,
  kProgramFieldMethods,
  kProgramFieldState,
  kProgramFieldMetadata,
  kProgramFieldWeights,
  kProgramFileFieldCount,
};

std::string serialize_program(const Program& program);
void save_program(const Program& program, const std::string& path);
// Weights are copied out of `bytes` unless `keep_alive` owns them (deserialize_engine).
// Every method runs on the device the program was compiled for (recorded in each method's
// engine), refused naming the method when this machine cannot run it, or on `device` when
// given: a program compiled for cuda loads on the cpu, and one compiled on a machine without a
// GPU loads on cuda (every op needs a kernel there). Off the host, the weights are uploaded once
// for all methods.
std::shared_ptr<const Program> deserialize_program(std::string_view bytes, const std::string& label,
                                                   std::shared_ptr<const void> keep_alive = nullptr,
                                                   std::optional<Device> device = std::nullopt);
// Reads the file once into private read-only memory that the weights point into
// (core/mapped_file.h): the file may change or vanish afterwards.
std::shared_ptr<const Program> load_program(const std::string& path,
                                            std::optional<Device> device = std::nullopt);
bool is_program_file(std::string_view bytes);

// A program file, or an engine file as a one-method program named `forward` whose every
// written input is caller-owned state (an engine file stores no initial values;
// program_from_engine, engine_program.h), told apart by the magic.
std::shared_ptr<const Program> load_program_or_engine(const std::string& path,
                                                      std::optional<Device> device = std::nullopt);

}  // namespace inplace
