#include "report/progress.h"

#include <unistd.h>

#include "load/units.h"

namespace ringsim {

Progress::Progress(std::string label, std::string unit, std::size_t total, std::ostream& plain)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      plain_(plain),
      tty_(::isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  if (tty_ && done_ > 0) std::fprintf(stderr, "\n");
}

std::string Progress::status(std::size_t done, std::size_t total, const std::string& unit, double elapsed_s) {
  char rate[64] = "";
  if (elapsed_s > 0 && done > 0) {
    const double per_s = static_cast<double>(done) / elapsed_s;
    if (per_s >= 1)
      std::snprintf(rate, sizeof rate, ", %.1f %s/s", per_s, unit.c_str());
    else
      std::snprintf(rate, sizeof rate, ", %.0f s each", 1 / per_s);
  }
  std::string left;
  if (done > 0 && done < total)
    left = ", " + format_time(elapsed_s / static_cast<double>(done) * static_cast<double>(total - done)) + " left";
  return std::to_string(done) + "/" + std::to_string(total) + " " + unit + rate + left;
}

void Progress::note(const std::string& text) {
  if (tty_)
    std::fprintf(stderr, "\r%s\033[K\n", text.c_str());
  else
    plain_ << text << "\n" << std::flush;
}

void Progress::done(const std::string& line) {
  ++done_;
  if (!tty_) {
    plain_ << label_ << ": " << line << " (" << done_ << "/" << total_ << ")\n" << std::flush;
    return;
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // Carriage return, the line, erase to its end (a shorter line leaves nothing of the longer one).
  std::fprintf(stderr, "\r%s: %s\033[K", label_.c_str(), status(done_, total_, unit_, elapsed).c_str());
  std::fflush(stderr);
}

}  // namespace ringsim
