#include "report/plot.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "load/input_error.h"
#include "load/units.h"
#include "report/output_file.h"

namespace ringsim {

namespace fs = std::filesystem;

namespace {

constexpr int kWidth = 960, kPanelHeight = 460, kSingleHeight = 640;

std::string extension(const std::string& image) { return fs::path(image).extension().string(); }

// gnuplot's terminal for the image's kind; "" for a kind it is not asked to write.
std::string terminal(const std::string& image, int height) {
  const std::string size = " size " + std::to_string(kWidth) + "," + std::to_string(height);
  const std::string ext = extension(image);
  if (ext == ".png") return "pngcairo" + size + " noenhanced font 'Sans,11'";
  if (ext == ".svg") return "svg" + size + " noenhanced font 'Sans,12' background rgb 'white'";
  if (ext == ".pdf")
    return "pdfcairo size 10in," + std::to_string(height * 10 / kWidth) + "in noenhanced font 'Sans,9'";
  return "";
}

// The program that draws: $RINGSIM_GNUPLOT, else gnuplot on the PATH; "" when there is none.
std::string gnuplot_program() {
  if (const char* own = std::getenv("RINGSIM_GNUPLOT"); own && *own) return ::access(own, X_OK) == 0 ? own : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    const fs::path p = fs::path(d.empty() ? "." : d) / "gnuplot";
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// A label as a quoted field of the data file: no quotes or line breaks inside.
std::string data_text(std::string s) {
  for (char& c : s)
    if (c == '"' || c == '\n') c = '\'';
  return s;
}

// Lines of at most `width` characters, broken after a space or a '/' (titles name files).
std::string wrap(const std::string& text, std::size_t width = 96) {
  std::string out, line;
  std::size_t last_break = std::string::npos;
  for (char c : text) {
    line += c;
    if (c == ' ' || c == '/') last_break = line.size();
    if (line.size() > width && last_break != std::string::npos && last_break < line.size()) {
      out += line.substr(0, last_break) + "\n";
      line = line.substr(last_break);
      last_break = std::string::npos;
    }
  }
  return out + line;
}

std::string axis_commands(const PlotPanel& p) {
  std::ostringstream o;
  o << "set title \"" << gnuplot_quote(wrap(p.title)) << "\"\n";
  o << "set xlabel \"" << gnuplot_quote(p.x_label) << "\"\n";
  o << "set ylabel \"" << gnuplot_quote(p.y_label) << "\"\n";
  if (p.x_log_base > 0) o << "set logscale x " << p.x_log_base << "\n";
  if (p.y_log_base > 0) o << "set logscale y " << p.y_log_base << "\n";
  for (const auto& s : p.setup) o << s << "\n";
  return o.str();
}

// Runs gnuplot on `script` in `folder` with the image written to `out`; throws with its complaint.
void run_gnuplot(const std::string& folder, const std::string& script, const std::string& out) {
  const std::string program = gnuplot_program();
  if (program.empty()) throw std::runtime_error("gnuplot is not installed (Debian: apt-get install gnuplot-nox)");
  int err[2];
  if (::pipe(err) != 0) throw std::runtime_error("--plot: cannot start gnuplot");
  const std::string assign = "out=\"" + gnuplot_quote(out) + "\"";
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("--plot: cannot start gnuplot");
  if (child == 0) {
    ::dup2(err[1], 2);
    ::close(err[0]);
    ::close(err[1]);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, 1);
    if (::chdir(folder.c_str()) != 0) ::_exit(127);
    ::execl(program.c_str(), "gnuplot", "-e", assign.c_str(), script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(err[1]);
  std::string complaint;
  char buf[4096];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;) complaint.append(buf, static_cast<std::size_t>(n));
  ::close(err[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)  // warnings alone leave a drawn image
    throw std::runtime_error("gnuplot failed on " + (fs::path(folder) / script).string() + ": " +
                             (complaint.empty() ? "exit status " + std::to_string(WEXITSTATUS(status)) : complaint));
}

}  // namespace

std::string gnuplot_quote(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

std::string byte_tics(const std::string& axis, double lo, double hi) {
  lo = std::max(lo, 1.0);
  const int first = static_cast<int>(std::ceil(std::log2(lo))), last = static_cast<int>(std::floor(std::log2(hi)));
  const int step = std::max(1, (last - first) / 9 + 1);
  std::string t;
  for (int e = first; e <= last; e += step)
    t += (t.empty() ? "" : ", ") + ("\"" + format_bytes(std::ldexp(1.0, e)) + "\" " + csv_number(std::ldexp(1.0, e)));
  return "set " + axis + "tics (" + t + ")";
}

void check_plot_file(const std::string& image) {
  if (terminal(image, kPanelHeight).empty())
    throw InputError({image, 0, 0, ""}, "--plot: expected an image name ending in .png, .svg or .pdf");
  check_output_path(image);
  if (gnuplot_program().empty())
    throw InputError({image, 0, 0, ""},
                     "--plot draws with gnuplot, which is not installed here: install it (Debian: apt-get install "
                     "gnuplot-nox) or leave --plot out");
}

void add_plot_files(std::vector<NamedFile>& outputs, const std::optional<std::string>& image) {
  if (!image) return;
  const fs::path img(*image);
  add_file(outputs, "--plot", image);
  add_file(outputs, "--plot's data", (img.parent_path() / (img.stem().string() + ".dat")).string());
  add_file(outputs, "--plot's gnuplot script", (img.parent_path() / (img.stem().string() + ".gp")).string());
}

PlotFiles plot_files(const std::string& image, const Plot& p) {
  const fs::path img(image);
  const std::string stem = img.stem().string();
  PlotFiles f;
  f.script_file = (img.parent_path() / (stem + ".gp")).string();
  f.data_file = (img.parent_path() / (stem + ".dat")).string();
  const std::string dat = stem + ".dat";
  const int height = p.panels.size() > 1 ? kPanelHeight * static_cast<int>(p.panels.size()) + 40 : kSingleHeight;

  std::ostringstream d, s;
  d << "# " << p.title << ": the data of " << img.filename().string() << ", one block per series (gnuplot's index)\n";
  s << "# " << p.title << "\n# " << p.source << "\n"
    << "# Written by ringsim beside " << dat << "; restyle and run `gnuplot " << stem << ".gp` in this folder.\n"
    << "if (!exists(\"out\")) out = \"" << gnuplot_quote(img.filename().string()) << "\"\n"
    << "set terminal " << terminal(image, height) << "\nset output out\n"
    << "set grid lc rgb '#dddddd'\nset key below\nset border 3\nset tics nomirror\nset samples 400\n"
    << "set format x '%g'\nset format y '%g'\n";
  if (p.panels.size() > 1)
    s << "set multiplot layout " << p.panels.size() << ",1 title \"" << gnuplot_quote(wrap(p.title)) << "\"\n";
  int block = 0;
  for (const auto& panel : p.panels) {
    PlotPanel titled = panel;
    if (p.panels.size() == 1) titled.title = p.title + (panel.title.empty() ? "" : "\n" + panel.title);
    s << "\n" << axis_commands(titled);
    std::vector<std::string> items;
    for (const auto& e : panel.functions) items.push_back(e);
    for (const auto& series : panel.series) {
      const std::string color = series.color > 0 ? " lc " + std::to_string(series.color) : "";
      if (series.rows.empty()) {  // no block: gnuplot would not count an empty one
        items.push_back("NaN with " + series.style + color + " title \"" + gnuplot_quote(series.title) + "\"");
        continue;
      }
      d << "\n\n# block " << block << ": " << data_text(panel.title) << " / " << data_text(series.title) << "\n";
      for (std::size_t r = 0; r < series.rows.size(); ++r) {
        for (std::size_t c = 0; c < series.rows[r].size(); ++c) d << (c ? " " : "") << csv_number(series.rows[r][c]);
        if (!series.labels.empty()) d << " \"" << data_text(series.labels[r]) << "\"";
        d << "\n";
      }
      std::string item = "\"" + gnuplot_quote(dat) + "\" index " + std::to_string(block) + " using 1:2 with " +
                         series.style + color + " title \"" + gnuplot_quote(series.title) + "\"";
      if (!series.labels.empty())
        item += ", '' index " + std::to_string(block) + " using 1:2:" + std::to_string(series.rows.front().size() + 1) +
                " with labels rotate by 30 offset char 0.6,0.6 left font ',8' notitle";
      items.push_back(item);
      ++block;
    }
    s << "plot ";
    for (std::size_t i = 0; i < items.size(); ++i) s << (i ? ", \\\n     " : "") << items[i];
    s << "\n";
    if (p.panels.size() > 1)
      s << "unset arrow\nunset label\nunset object\nunset logscale\nset autoscale\nset xtics autofreq\nset key below\n";
  }
  if (p.panels.size() > 1) s << "unset multiplot\n";
  f.script = s.str();
  f.data = d.str();
  return f;
}

void write_plot(const std::string& image, const Plot& p) {
  const PlotFiles f = plot_files(image, p);
  write_file_atomically(f.data_file, f.data);
  write_file_atomically(f.script_file, f.script);
  const fs::path img(image);
  const fs::path folder = img.parent_path().empty() ? fs::path(".") : img.parent_path();
  const std::string tmp =
      "." + img.filename().string() + ".tmp" + std::to_string(::getpid()) + img.extension().string();
  try {
    run_gnuplot(folder.string(), fs::path(f.script_file).filename().string(), tmp);
  } catch (...) {
    std::error_code ec;
    fs::remove(folder / tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::rename(folder / tmp, img, ec);
  if (ec) throw InputError({image, 0, 0, ""}, "cannot write the output file: " + ec.message());
}

}  // namespace ringsim
