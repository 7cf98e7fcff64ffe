// Ops renamed since files were written. Engine and program files store each step's op by name
// and graph JSON names ops by target, so a file written before a rename still names the old op.
// An old name resolves to the op that computes the same; the old op's arguments keep their
// positions and the new op's defaults follow for any it added at the end. This is the one table
// of such names: the registry reads it (a graph's target) and so does the engine file reader
// (a stored step; docs/engine-format.md).
#pragma once
#include <string>
#include <vector>

#include "ops/registry.h"

namespace inplace {

struct RenamedOp {
  const char* old_name;
  const char* new_name;
};
const std::vector<RenamedOp>& renamed_ops();

// The op an earlier build stored as `full_name`: that op, else the op it was renamed to; null
// when neither is known.
const OpDef* find_op_or_renamed(const std::string& full_name);

// `args` as an earlier build bound them to `schema` (perhaps fewer): extended with the schema's
// defaults for the ones it lacks; false when a missing argument has no default.
bool append_defaults(const Schema& schema, Args* args);

}  // namespace inplace
