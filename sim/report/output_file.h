// Output files are written whole or not at all: content goes to a temporary file beside the target,
// which is renamed over it. A failure leaves no partial file and throws std::runtime_error.
#pragma once

#include <string>

namespace ringsim {

void write_file_atomically(const std::string& path, const std::string& content);

// Refuses, before any work, an output file whose folder does not exist or cannot be written: the same
// InputError write_file_atomically would throw after a run of minutes.
void check_output_path(const std::string& path);

// One CSV field: as is, or in double quotes (quotes doubled) when it holds a comma, quote or newline.
std::string csv_field(const std::string& s);
// A number for a CSV cell: 9 significant digits, enough to tell runs apart, stable across runs.
std::string csv_number(double v);

}  // namespace ringsim
