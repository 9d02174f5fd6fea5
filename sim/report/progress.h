// Progress of a command that runs many points or launches (sweep, plan, validate --published and --local). On a
// terminal (standard error) one line, rewritten in place: done/total, rate and time left. Elsewhere (a log, CI) one
// plain line per finished item, so that a log shows what ran.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <ostream>
#include <string>

namespace ringsim {

class Progress {
 public:
  // `label`: "ringsim sweep"; `unit`: what is counted ("points", "launches"); `plain`: where plain lines go.
  Progress(std::string label, std::string unit, std::size_t total, std::ostream& plain);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();  // ends the terminal line

  // One item finished; `line` is its plain line ("point 3 done").
  void done(const std::string& line);
  // A line between the items' (on a terminal, above the progress line).
  void note(const std::string& text);
  // Items to come beyond the total first given (a launch taken again).
  void add(std::size_t more) { total_ += more; }
  bool on_terminal() const { return tty_; }

  // "3/12 points, 2.5 points/s, 4 s left" or "3/12 launches, 20 s each, 3 min left" (for tests: the terminal line
  // without its control codes).
  static std::string status(std::size_t done, std::size_t total, const std::string& unit, double elapsed_s);

 private:
  std::string label_, unit_;
  std::size_t total_ = 0, done_ = 0;
  std::ostream& plain_;
  bool tty_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ringsim
