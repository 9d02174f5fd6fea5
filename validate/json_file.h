// Reading a JSON input file: a missing file or malformed JSON (any nlohmann exception, including number
// overflow) becomes an InputError naming the file, prefixed with what the reader expected.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "load/input_error.h"

namespace ringsim {

inline nlohmann::json read_json_file(const std::string& file, const std::string& bad_json_message = "not JSON") {
  std::ifstream in(file);
  if (!in) throw InputError({file, 0, 0, ""}, "cannot open file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError({file, 0, 0, ""}, bad_json_message + ": " + e.what());
  }
}

}  // namespace ringsim
