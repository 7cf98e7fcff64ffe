// Opening the files the library reads and writes. Every path must name a regular file: a FIFO,
// a directory or a device is refused with an inplace::Error (kIO) naming the path and what it
// is, never opened in a way that could block (a FIFO without a writer would hang a reader).
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace inplace {

class FileSink;

// Throws kIO "[<tag>] cannot open '<path>': ..." or "[<tag>] '<path>' is a FIFO, not a regular
// file" unless `path` is a regular file that can be opened for reading.
void check_regular_file(const std::string& path, const char* tag);
// The whole contents of a regular file (checked as above, through the opened descriptor).
std::string read_regular_file(const std::string& path, const char* tag);
// An open read-only descriptor on a regular file (checked as above) and its size; the caller
// closes it.
int open_regular_file(const std::string& path, const char* tag, size_t* size);
// Writes `path` through a temporary file in the same folder (`<path>.tmp.<pid>.<n>`), fsynced and
// renamed over it once `write` has written every byte into the sink: a reader that has the old
// file open sees the old file whole, never a truncated or half-written one, and a failed write
// (an exception from `write` included) leaves the old file (or none) and no temporary.
void write_file_atomically(const std::string& path, const char* tag,
                           const std::function<void(FileSink&)>& write);
// For a file about to be written: throws when `path` exists and is not a regular file.
void check_output_file(const std::string& path, const char* tag);

}  // namespace inplace
