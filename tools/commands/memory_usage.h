// Resident memory of this process as Linux reports it (/proc/self/status), for the peak-memory
// lines of `inplace demo`: the peak since start, and the peak of one phase (decoding) after
// the memory of an earlier phase (compiling, the eager check) has been given back.
#pragma once
#include <cstdint>

namespace inplace::cli {

// VmRSS / VmHWM in bytes (-1 when /proc cannot be read).
int64_t current_rss_bytes();
int64_t peak_rss_since_reset_bytes();
// Takes the code pages an earlier phase touched out of the resident set: every private,
// read-only mapping of the binary and its shared libraries that holds no copy-on-write page is
// given madvise(MADV_DONTNEED). Its pages stay in the page cache; the next access maps them again
// (a minor fault), so what remains resident is the code the next phase runs. Returns the bytes
// of address space advised (not all of it was resident).
int64_t drop_clean_code_pages();
// Gives freed heap memory back to the system (malloc_trim) and drops the clean code pages
// (above), then resets VmHWM to the current resident size (/proc/self/clear_refs, "5"). False
// when the kernel refuses the reset.
bool reset_peak_rss();

}  // namespace inplace::cli
