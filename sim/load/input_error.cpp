#include "load/input_error.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <numeric>
#include <tuple>

#include "load/input_file.h"

namespace ringsim {

std::string SourceLocation::str() const {
  if (!origin.empty()) return origin;
  std::string s = file.empty() ? std::string("ringsim") : file;
  if (line > 0) {
    s.append(":").append(std::to_string(line));
    if (column > 0) s.append(":").append(std::to_string(column));
  }
  return s;
}

namespace {

// The message as a terminal shows it faithfully: a value echoed from a file or the command line may hold
// escape sequences or invisible characters (a zero-width space in a SKU's name), written as \x1b, \u200b;
// a line is cut at kMaxLine characters (an echoed value may be megabytes long).
std::string shown(const std::string& message) {
  constexpr std::size_t kMaxLine = 2000;
  std::string out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = message.find('\n', start)) != std::string::npos; start = nl + 1)
    out += printable(message.substr(start, nl - start), kMaxLine) + "\n";
  return out + printable(message.substr(start), kMaxLine);
}

}  // namespace

InputError::InputError(SourceLocation where, std::string message)
    : std::runtime_error(shown(where.str()) + ": error: " + shown(message)),
      where_(std::move(where)),
      message_(shown(message)) {}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string join_alternatives(const std::vector<std::string>& names, std::string_view last_sep) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) s += (i + 1 == names.size()) ? std::string(last_sep) : std::string(", ");
    s += names[i];
  }
  return s;
}

std::vector<std::string> closest_names(std::string_view word, const std::vector<std::string>& candidates,
                                       std::size_t max_results) {
  const std::string w = lower(word);
  const std::size_t limit = std::max<std::size_t>(2, w.size() / 3);
  struct Scored {
    std::size_t distance;
    int tie;  // for equal lengths: how far apart the differing characters are ('v4' is nearer 'v3' than 'v2')
    std::string name;
  };
  std::vector<Scored> scored;
  for (const auto& c : candidates) {
    const std::string lc = lower(c);
    const std::size_t d = edit_distance(w, lc);
    const bool prefix = w.size() >= 3 && (lc.rfind(w, 0) == 0 || w.rfind(lc, 0) == 0);
    if (d > limit && !prefix) continue;
    int tie = 1 << 20;
    if (lc.size() == w.size()) {
      tie = 0;
      for (std::size_t i = 0; i < w.size(); ++i) tie += std::abs(int(w[i]) - int(lc[i]));
    }
    scored.push_back({d, tie, c});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
    return std::tie(a.distance, a.tie) < std::tie(b.distance, b.tie);
  });
  std::vector<std::string> out;
  for (const auto& s : scored) {
    if (out.size() == max_results || s.distance > scored.front().distance) break;  // only the closest ones
    out.push_back(s.name);
  }
  return out;
}

std::string suggestion_suffix(std::string_view word, const std::vector<std::string>& candidates) {
  auto close = closest_names(word, candidates);
  if (!close.empty()) return "; did you mean " + join_alternatives(close, " or ") + "?";
  if (!candidates.empty() && candidates.size() <= 32)
    return "; expected one of: " + join_alternatives(candidates, ", ");
  return "";
}

}  // namespace ringsim
