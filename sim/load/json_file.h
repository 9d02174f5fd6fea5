// Reading a JSON input file: a missing file, what is not a regular file, a file over its limit or malformed
// JSON (any nlohmann exception, including number overflow) becomes an InputError naming the file, prefixed
// with what the reader expected.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "load/input_error.h"
#include "load/input_file.h"

namespace ringsim {

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1, column 2: "
// prefix, which names the C++ exception and repeats the location.
inline std::string json_error_text(const std::string& what) {
  std::string m = what;
  if (m.rfind("[json.exception.", 0) == 0 && m.find("] ") != std::string::npos) m.erase(0, m.find("] ") + 2);
  if (m.rfind("parse error", 0) == 0 && m.find(": ") != std::string::npos) m.erase(0, m.find(": ") + 2);
  return m;
}

// `text`, read from `file`, as JSON.
inline nlohmann::json parse_json_text(const std::string& text, const std::string& file,
                                      const std::string& bad_json_message = "not JSON") {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // The line and column of the byte where parsing stopped.
    int line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw InputError({file, line, column, ""}, bad_json_message + ": " + json_error_text(e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw InputError({file, 0, 0, ""}, bad_json_message + ": " + json_error_text(e.what()));
  }
}

inline nlohmann::json read_json_file(const std::string& file, const std::string& bad_json_message = "not JSON",
                                     const std::string& kind = "JSON", std::size_t max_bytes = kMaxJsonInputBytes) {
  return parse_json_text(read_input_file(file, max_bytes, kind), file, bad_json_message);
}

}  // namespace ringsim
