// Errors in user input (YAML files, --set overrides, command-line values), reported as
// "file:line:col: error: <key>: <what was expected>[; did you mean X?]".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ringsim {

// Where a value came from: a file position (1-based line and column) or a command-line override.
struct SourceLocation {
  std::string file;    // empty when unknown
  int line = 0;        // 1-based; 0 when unknown
  int column = 0;      // 1-based; 0 when unknown
  std::string origin;  // e.g. "--set cluster.nodes=0"; replaces file:line:col when set

  std::string str() const;
};

class InputError : public std::runtime_error {
 public:
  InputError(SourceLocation where, std::string message);
  const SourceLocation& where() const { return where_; }
  const std::string& message() const { return message_; }

 private:
  SourceLocation where_;
  std::string message_;
};

// Up to `max_results` candidates closest to `word` (case-insensitive edit distance), closest first,
// only those plausibly meant (distance <= max(2, |word|/3), or a case-insensitive match or prefix).
std::vector<std::string> closest_names(std::string_view word, const std::vector<std::string>& candidates,
                                       std::size_t max_results = 3);

// "; did you mean A, B or C?" or "" when nothing is close. With no close match and a short candidate
// list, "; expected one of: a, b, c" instead, so the user always learns the valid names.
std::string suggestion_suffix(std::string_view word, const std::vector<std::string>& candidates);

// "a, b or c" with last_sep " or ".
std::string join_alternatives(const std::vector<std::string>& names, std::string_view last_sep);

}  // namespace ringsim
