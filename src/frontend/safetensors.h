// safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length, a JSON header {"<key>": {"dtype": "F32", "shape": [...], "data_offsets":
// [begin, end]}, "__metadata__": {str: str}}, then the raw little-endian bytes. Used for
// graph constants, `inplace exec` inputs and outputs.
#pragma once
#include <map>
#include <string>

#include "core/tensor.h"

namespace inplace {

// "F32", "BF16", "BOOL", ... for the dtypes inplace supports.
const char* safetensors_dtype_code(DType t);
bool parse_safetensors_dtype(const std::string& code, DType* out);

// Reads every tensor (each owns a fresh contiguous copy). Validates the header length, the
// JSON, every dtype, shape and offset range, sizes against shape * itemsize, and that no two
// tensors overlap; errors (kParse, kIO) name the file and the key. `metadata`, when given,
// receives "__metadata__".
std::map<std::string, Tensor> read_safetensors(
    const std::string& path, std::map<std::string, std::string>* metadata = nullptr);
// The same from bytes already in memory; `label` names them in errors.
std::map<std::string, Tensor> read_safetensors_bytes(
    const std::string& bytes, const std::string& label,
    std::map<std::string, std::string>* metadata = nullptr);

// Writes the tensors (non-contiguous ones as their contiguous copy), keys in map order.
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
std::string write_safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                                    const std::map<std::string, std::string>& metadata = {});

}  // namespace inplace
