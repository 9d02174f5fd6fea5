// Reading a user's input file whole, guarded: what is not a regular file (a folder, a FIFO, a device such
// as /dev/zero) is refused before anything is read, and so is a file larger than its reader's limit, so
// that no reader blocks or grows without bound. Errors are InputError naming the file and the reason.
#pragma once

#include <cstddef>
#include <string>

namespace ringsim {

// The most each kind of input may hold; each limit is far above the largest real file of its kind.
inline constexpr std::size_t kMaxCsvInputBytes = 4u << 20;         // calibrate --runs
inline constexpr std::size_t kMaxLogInputBytes = 64u << 20;        // nccl-tests logs
inline constexpr std::size_t kMaxJsonInputBytes = 256u << 20;      // measured results, calibration data
inline constexpr std::size_t kMaxTimelineInputBytes = 512u << 20;  // Horovod timelines (a long run's is hundreds of MB)

// The file's bytes; `kind` names what was expected ("scenario", "runs CSV") in the errors.
std::string read_input_file(const std::string& path, std::size_t max_bytes, const std::string& kind);

// `s` as it may be shown in a one-line message: control and invisible characters written as escapes
// (\x1b, \u200b), and cut to about `max_chars` with "..." where longer.
std::string printable(const std::string& s, std::size_t max_chars = 200);

}  // namespace ringsim
