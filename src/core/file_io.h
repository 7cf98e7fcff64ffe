// Opening the files the library reads and writes. Every path must name a regular file: a FIFO,
// a directory or a device is refused with an inplace::Error (kIO) naming the path and what it
// is, never opened in a way that could block (a FIFO without a writer would hang a reader).
#pragma once
#include <string>

namespace inplace {

// Throws kIO "[<tag>] cannot open '<path>': ..." or "[<tag>] '<path>' is a FIFO, not a regular
// file" unless `path` is a regular file that can be opened for reading.
void check_regular_file(const std::string& path, const char* tag);
// The whole contents of a regular file (checked as above, through the opened descriptor).
std::string read_regular_file(const std::string& path, const char* tag);
// For a file about to be written: throws when `path` exists and is not a regular file.
void check_output_file(const std::string& path, const char* tag);

}  // namespace inplace
