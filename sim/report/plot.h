// Charts drawn by gnuplot. `--plot FILE` (png, svg or pdf) writes FILE's data (STEM.dat) and script
// (STEM.gp) beside it and runs gnuplot on the script in that folder, so users restyle a chart by editing
// the script and running `gnuplot STEM.gp` there. The text of both is deterministic.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/output_file.h"

namespace ringsim {

// A line or set of markers: rows of numbers (x, y, then whatever columns the style reads) and,
// optionally, a text per row drawn beside its point.
struct PlotSeries {
  std::string title;
  std::string style = "linespoints pt 7";  // gnuplot's `with` clause
  int color = 0;                           // 1-based line type whose colour it takes; 0: the next one
  std::vector<std::vector<double>> rows;
  std::vector<std::string> labels;  // empty, or one per row
};

struct PlotPanel {
  std::string title, x_label, y_label;
  int x_log_base = 0, y_log_base = 0;  // 0: a linear axis
  std::vector<std::string> setup;      // gnuplot commands before its `plot`: arrows, ranges, tics
  std::vector<std::string> functions;  // plotted expressions with their clauses: "r*x title 'ideal' with lines"
  std::vector<PlotSeries> series;
};

struct Plot {
  std::string title;
  std::string source;             // what made it, for the script's first line
  std::vector<PlotPanel> panels;  // stacked, top to bottom
};

// Refuses before any work (InputError): an image name gnuplot cannot write (not .png, .svg or .pdf, or
// its folder missing) or a machine without gnuplot (`RINGSIM_GNUPLOT` names another program).
void check_plot_file(const std::string& image);

// `outputs` gains the files --plot IMAGE writes: the image, its data and its script.
void add_plot_files(std::vector<NamedFile>& outputs, const std::optional<std::string>& image);

struct PlotFiles {
  std::string script_file, data_file;  // beside the image
  std::string script, data;
};
PlotFiles plot_files(const std::string& image, const Plot& p);

// Writes the data and script and runs gnuplot; the image appears whole or not at all.
void write_plot(const std::string& image, const Plot& p);

// "set xtics (\"1 KiB\" 1024, ...)": powers of two between lo and hi, at most ten, named in bytes.
std::string byte_tics(const std::string& axis, double lo, double hi);

// Text for gnuplot's double-quoted strings.
std::string gnuplot_quote(const std::string& s);

}  // namespace ringsim
