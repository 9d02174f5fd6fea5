// Renderings of a Prediction: the result JSON (schema "ringsim.result/1", shared with real/ and the
// emulator), the Chrome trace in Horovod's timeline format, the per-link CSV, and the human table.
#pragma once

#include <string>

#include "execute/prediction.h"

namespace ringsim {

inline constexpr const char* kResultSchema = "ringsim.result/1";

std::string result_json(const Prediction& p, const std::string& source);  // source: "predict", "real", ...
std::string timeline_json(const Prediction& p);
std::string links_csv(const Prediction& p);
std::string prediction_table(const Prediction& p);

}  // namespace ringsim
