// Output files are written whole or not at all: content goes to a temporary file beside the target,
// which is renamed over it (a device or pipe named as the output, such as /dev/null, is written in place).
// A failure leaves no partial file and throws InputError with the path and the system's reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ringsim {

void write_file_atomically(const std::string& path, const std::string& content);

// Refuses, before any work, an output file whose folder does not exist or cannot be written, or that is a
// folder: the same InputError write_file_atomically would throw after a run of minutes.
void check_output_path(const std::string& path);

// A file a command reads or writes and the option that named it ("--json", "the scenario").
struct NamedFile {
  std::string option;
  std::string path;
};
// `files` gains {option, *path} where the path is given.
void add_file(std::vector<NamedFile>& files, const std::string& option, const std::optional<std::string>& path);

// `files` gains every regular file under `folder` (the catalog's), as `option`.
void add_folder(std::vector<NamedFile>& files, const std::string& option, const std::string& folder);
// A run's inputs: the catalog's files, the scenario and its calibration overlay (empty: none).
std::vector<NamedFile> run_inputs(const std::string& catalog_dir, const std::string& scenario,
                                  const std::string& calibration = "");

// Refuses before any work (InputError) an output that would replace one of the inputs or another output:
// the same file after symlinks and relative paths, naming both; and every output check_output_path refuses.
// Devices (/dev/null) may be named more than once.
void check_outputs(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs);

// One CSV field: as is, or in double quotes (quotes doubled) when it holds a comma, quote or newline.
std::string csv_field(const std::string& s);
// A number for a CSV cell: 9 significant digits, enough to tell runs apart, stable across runs.
std::string csv_number(double v);

}  // namespace ringsim
