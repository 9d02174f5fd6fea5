// Output files are written whole or not at all: content goes to a temporary file beside the target,
// which is renamed over it. A failure leaves no partial file and throws std::runtime_error.
#pragma once

#include <string>

namespace ringsim {

void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace ringsim
