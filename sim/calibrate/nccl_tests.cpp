#include "calibrate/nccl_tests.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "collective/collective.h"
#include "execute/analytic/collective_bench.h"
#include "load/input_error.h"
#include "load/input_file.h"

namespace ringsim {

namespace {

// The tests calibrate reads, by the binary's name (nccl-tests and rccl-tests name them alike).
const std::vector<std::string> kReadTests = {"all_reduce", "all_gather", "reduce_scatter", "sendrecv"};
const std::vector<std::string> kOtherTests = {"alltoall", "broadcast", "reduce", "gather", "scatter", "hypercube"};

// Open MPI's --tag-output "[1,0]<stdout>:" or "[1,0]<stderr>:", Slurm's --label "12: ".
std::string_view strip_launcher_prefix(std::string_view line) {
  if (line.size() > 1 && line[0] == '[') {
    const auto close = line.find("]<");
    const auto colon = line.find(">:");
    if (close != std::string_view::npos && colon != std::string_view::npos && close < colon &&
        line.substr(1, close - 1).find_first_not_of("0123456789,") == std::string_view::npos)
      return line.substr(colon + 2);
  }
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  const std::size_t digits = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i > digits && i + 1 < line.size() && line[i] == ':' && line[i + 1] == ' ') return line.substr(i + 2);
  return line;
}

// NCCL's and RCCL's own log lines ("host:pid:tid [0] NCCL INFO ...", "NCCL version 2.9.9"): not results.
bool library_log_line(std::string_view line) {
  return line.find("NCCL INFO") != std::string_view::npos || line.find("NCCL WARN") != std::string_view::npos ||
         line.find("NCCL version") != std::string_view::npos;
}

// How surely a line says the run failed: nccl-tests' own failure report, its call stack, then a warning
// of the library's (some of which it survives); 0: none.
int failure_weight(std::string_view line) {
  if (line.find("Test NCCL failure") != std::string_view::npos ||
      line.find("Test CUDA failure") != std::string_view::npos)
    return 3;
  if (line.find("Test failure") != std::string_view::npos) return 2;
  return line.find("NCCL WARN") != std::string_view::npos ? 1 : 0;
}

bool whole_number(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

// Bytes of an element type as nccl-tests names them; 0 for a word that is none.
int type_bytes(const std::string& t) {
  static const std::map<std::string, int> sizes = {
      {"int8", 1},   {"uint8", 1},    {"char", 1},     {"int32", 4},   {"uint32", 4},   {"int", 4},
      {"int64", 8},  {"uint64", 8},   {"half", 2},     {"float16", 2}, {"bfloat16", 2}, {"float", 4},
      {"double", 8}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1}, {"float32", 4}, {"float64", 8}};
  const auto it = sizes.find(t);
  return it == sizes.end() ? 0 : it->second;
}

// The test a line names (a binary such as all_reduce_perf or all_gather_perf_mpi), if any.
std::optional<std::string> test_named(std::string_view line) {
  std::optional<std::string> found;
  std::size_t found_at = std::string_view::npos;
  auto scan = [&](const std::string& name) {
    const std::string bin = name + "_perf";
    for (auto at = line.find(bin); at != std::string_view::npos; at = line.find(bin, at + 1)) {
      const bool starts = at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
      if (starts && at < found_at) {
        found = name;
        found_at = at;
      }
    }
  };
  for (const auto& n : kReadTests) scan(n);
  for (const auto& n : kOtherTests) scan(n);
  return found;
}

struct Columns {
  int time = -1, wrong = -1, redop = -1, root = -1;  // indices in a row; wrong: the out-of-place check
  bool counts_wrong = false;                         // `#wrong` (a count), not the old float `error`
};

// The header "# size count type redop root time algbw busbw #wrong time ..." (names vary by version).
std::optional<Columns> header_columns(std::string_view line) {
  if (line.empty() || line[0] != '#') return std::nullopt;
  std::vector<std::string> t = tokens(line.substr(1));
  if (t.size() < 4 || t[0] != "size" || t[1] != "count" || t[2] != "type") return std::nullopt;
  Columns c;
  for (int i = 0; i < static_cast<int>(t.size()); ++i) {
    if (t[i] == "redop") c.redop = i;
    if (t[i] == "root") c.root = i;
    if (t[i] == "time" && c.time < 0) c.time = i;
    if ((t[i] == "#wrong" || t[i] == "error") && c.time >= 0 && c.wrong < 0) {
      c.wrong = i;
      c.counts_wrong = t[i] == "#wrong";
    }
  }
  if (c.time < 0) return std::nullopt;
  return c;
}

// A table pasted without its header: the out-of-place and in-place groups are four columns each.
Columns columns_from_width(std::size_t width) {
  Columns c;
  c.time = static_cast<int>(width) - 8;
  c.wrong = c.time + 3;
  c.redop = c.time >= 4 ? 3 : -1;
  c.root = c.time >= 5 ? 4 : -1;
  return c;
}

struct Row {
  double bytes = 0, count = 0, seconds = 0;
  int element_bytes = 0;
  std::string redop;
  long root = -1;
  int line = 0;
};

class Reader {
 public:
  Reader(std::string file, const NcclTestsContext& context) : file_(std::move(file)), context_(context) {}
  void line(std::string_view raw, int line_no);
  NcclTestsData finish();

 private:
  [[noreturn]] void fail(int line, const std::string& message) const {
    throw InputError({file_, line, line > 0 ? 1 : 0, ""}, message);
  }
  void rank_line(std::string_view line);
  void row(const std::vector<std::string>& t, int line_no);
  std::string op_of_rows(int ranks) const;

  std::string file_;
  NcclTestsContext context_;
  std::optional<Columns> columns_;  // from the latest header
  std::set<long> ranks_;
  std::set<std::string> hosts_;
  std::optional<std::string> test_;  // the test the log names last
  std::set<std::string> tests_with_rows_;
  std::vector<Row> rows_;
  std::string failure_;  // the first line that says most surely that the run failed
  int failure_line_ = 0, failure_weight_ = 0;
};

void Reader::rank_line(std::string_view line) {
  // "#  Rank  0 Group  0 Pid  1234 on  host1 device  0 [0x1a] Tesla V100" (older: no Group).
  const std::vector<std::string> t = tokens(line.substr(1));
  long rank = 0;
  if (t.size() < 2 || !whole_number(t[1])) return;
  if (std::from_chars(t[1].data(), t[1].data() + t[1].size(), rank).ec != std::errc()) return;  // no rank: too long
  ranks_.insert(rank);
  const auto on = std::find(t.begin(), t.end(), "on");
  if (on != t.end() && on + 1 != t.end()) hosts_.insert(*(on + 1));
}

void Reader::line(std::string_view raw, int line_no) {
  if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  const std::string_view line = strip_launcher_prefix(raw);
  if (const int w = failure_weight(line); w > failure_weight_) {
    failure_weight_ = w;
    failure_ = std::string(line.substr(std::min(line.size(), line.find_first_not_of(" ."))));
    failure_line_ = line_no;
  }
  if (library_log_line(line)) return;
  if (auto named = test_named(line)) test_ = named;
  const auto first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos) return;
  const std::string_view body = line.substr(first);
  if (body[0] == '#') {
    if (auto c = header_columns(body)) columns_ = c;
    if (tokens(body.substr(1)).size() > 1 && tokens(body.substr(1))[0] == "Rank") rank_line(body);
    if (body.find("Out of bounds values") != std::string_view::npos && body.find("FAILED") != std::string_view::npos)
      fail(line_no, "nccl-tests reported results out of bounds (" + printable(std::string(body), 120) +
                        "): that run failed its own check; calibrate from a run without errors");
    return;
  }
  const std::vector<std::string> t = tokens(body);
  // A result row starts "size count type"; a line that does not is the launcher's or the shell's.
  if (t.size() < 3 || !whole_number(t[0]) || !whole_number(t[1])) return;
  if (type_bytes(t[2]) == 0 && !columns_) return;
  row(t, line_no);
}

void Reader::row(const std::vector<std::string>& t, int line_no) {
  const Columns c = columns_ ? *columns_ : columns_from_width(t.size());
  // Every column read: a header may name redop or root after the time (fuzzed: they were read past the row).
  const std::size_t need = static_cast<std::size_t>(std::max({c.time + 3, c.wrong + 1, c.redop + 1, c.root + 1}));
  if (c.time < 3 || t.size() < need)
    fail(line_no, "expected an nccl-tests result row of at least " + std::to_string(std::max<std::size_t>(need, 9)) +
                      " columns (size count type ... time algbw busbw #wrong), got " + std::to_string(t.size()) +
                      ": a truncated file?");
  if (c.counts_wrong && t[c.wrong] != "0" && t[c.wrong] != "N/A")
    fail(line_no, "nccl-tests counted " + t[c.wrong] + " wrong results (#wrong) for " + t[0] +
                      " bytes: that run failed its own check; calibrate from a run without errors");
  Row r;
  r.line = line_no;
  r.element_bytes = type_bytes(t[2]);
  if (r.element_bytes == 0)
    fail(line_no, "expected an nccl-tests result row (size count type ...): '" + t[2] + "' is not an element type");
  if (c.redop >= 0) r.redop = t[c.redop];
  double us = 0;
  try {
    r.bytes = std::stod(t[0]);
    r.count = std::stod(t[1]);
    if (c.root >= 0) r.root = std::stol(t[c.root]);
    std::size_t used = 0;
    us = std::stod(t[c.time], &used);
    if (used != t[c.time].size()) throw std::invalid_argument("time");
  } catch (const std::exception&) {
    fail(line_no, "expected an nccl-tests result row (size count type ... time ...)");
  }
  if (!std::isfinite(r.bytes) || !std::isfinite(us) || us < 0)
    fail(line_no, "expected an nccl-tests result row (size count type ... time ...)");
  r.seconds = us * 1e-6;
  rows_.push_back(r);
  tests_with_rows_.insert(test_.value_or(""));
}

// Without the test's name, the rows tell: an allreduce moves count elements; allgather and
// reduce-scatter count one rank's share (the size is the whole buffer); allgather has no reduction.
std::string Reader::op_of_rows(int ranks) const {
  for (const auto& r : rows_) {
    if (r.bytes <= 0) continue;
    if (r.redop == "none") return "all_gather";
    if (r.root >= 0) return "rooted";
    if (ranks > 1 && r.count * r.element_bytes * ranks == r.bytes)
      return r.redop.empty() ? "all_gather" : "reduce_scatter";
    return "all_reduce";
  }
  return "all_reduce";
}

NcclTestsData Reader::finish() {
  if (rows_.empty()) {
    if (!failure_.empty()) fail(failure_line_, "the nccl-tests run failed before it measured anything: " + failure_);
    fail(0,
         "no nccl-tests result rows found (expected the output of all_reduce_perf, all_gather_perf, "
         "reduce_scatter_perf or sendrecv_perf)");
  }
  tests_with_rows_.erase("");
  if (tests_with_rows_.size() > 1) {
    std::string names;
    for (const auto& n : tests_with_rows_) names += (names.empty() ? "" : ", ") + n + "_perf";
    fail(0, "the file holds results of several tests (" + names + "); give each its own file");
  }
  NcclTestsData d;
  d.ranks = static_cast<int>(ranks_.size());
  d.hosts = static_cast<int>(hosts_.size());
  if (d.ranks == 0) {
    d.ranks = context_.ranks;
    d.hosts = context_.hosts;
    d.ranks_from_context = true;
    if (d.ranks == 0) fail(0, "no '#  Rank N ... Pid ... on HOST' lines: cannot tell the rank count");
  }
  d.spans_nodes = d.hosts > 1;
  d.op = test_ ? *test_ : op_of_rows(d.ranks);
  if (std::find(kReadTests.begin(), kReadTests.end(), d.op) == kReadTests.end())
    fail(0, "results of " + (test_ ? *test_ + "_perf" : std::string("a rooted collective (root column >= 0)")) +
                ": calibrate reads all_reduce_perf, all_gather_perf, reduce_scatter_perf and sendrecv_perf");
  if (d.op != "sendrecv" && d.ranks < 2)
    fail(0, d.op + "_perf on one rank moves nothing between GPUs; calibrate from a run of two or more ranks");
  const double n = d.ranks;
  for (const auto& r : rows_) {
    if (r.bytes <= 0 || r.seconds <= 0) continue;  // size 0: a call that moves nothing
    FitPoint p{1, r.bytes, r.seconds};
    using collective::BusOp;
    if (d.op == "all_reduce") {
      p.x_alpha = 2 * (n - 1);
      p.x_beta = r.bytes * collective::bus_bandwidth_factor(BusOp::AllReduce, d.ranks);
    } else if (d.op != "sendrecv") {  // n - 1 steps of one rank's share
      p.x_alpha = n - 1;
      p.x_beta = r.bytes * collective::bus_bandwidth_factor(BusOp::AllGather, d.ranks);
    }
    d.points.push_back(p);
    d.bytes.push_back(r.bytes);
  }
  if (d.points.empty()) fail(0, "every nccl-tests row has size 0 or time 0: nothing to calibrate from");
  return d;
}

}  // namespace

NcclTestsData parse_nccl_tests(const std::string& text, const std::string& file, const NcclTestsContext& context) {
  Reader reader(file, context);
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) reader.line(line, ++line_no);
  return reader.finish();
}

namespace {

// The bench model's time for each size: one sweep from the smallest to the largest by doubling (nccl-tests'
// own -f 2), then each size off that grid alone.
std::map<std::uint64_t, double> bench_times(const Catalog& catalog, const Scenario& s,
                                            const std::vector<std::uint64_t>& sizes, collective::BusOp op) {
  std::map<std::uint64_t, double> out;
  const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
  for (const auto& row : predict_bench(catalog, s, {*lo, *hi, 2}, op).rows) out[row.bytes] = row.time_s;
  for (std::uint64_t b : sizes)
    if (!out.count(b)) out[b] = predict_bench(catalog, s, {b, b, 2}, op).rows.at(0).time_s;
  return out;
}

}  // namespace

std::vector<LogAgreement> agreement_with_logs(const Catalog& catalog, const CatalogOverlay& overlay, const Scenario& s,
                                              const std::vector<std::string>& files) {
  Catalog calibrated = catalog;
  calibrated.apply(overlay);
  std::vector<LogAgreement> out;
  for (const auto& f : files) {
    const NcclTestsData d = parse_nccl_tests(read_input_file(f, kMaxLogInputBytes, "nccl-tests log"), f,
                                             {s.cluster.total_gpus(), s.cluster.nodes});
    const auto op = collective::parse_op(d.op);
    if (!op || d.ranks != s.cluster.total_gpus()) continue;
    // Below one float (a rank, for an all-gather or reduce-scatter): nccl-tests' own floor.
    const double least = *op == collective::BusOp::AllReduce ? 4.0 : 4.0 * d.ranks;
    std::vector<std::uint64_t> sizes;
    for (double b : d.bytes)
      if (b >= least) sizes.push_back(static_cast<std::uint64_t>(b));
    if (sizes.empty()) continue;
    std::map<std::uint64_t, double> before, after;
    try {
      before = bench_times(catalog, s, sizes, *op), after = bench_times(calibrated, s, sizes, *op);
    } catch (const InputError&) {  // more sizes x ranks than bench predicts in its time limit: not compared
      continue;
    }
    LogAgreement a{f, 0, 0, 0};
    for (std::size_t i = 0; i < d.points.size(); ++i) {
      if (d.bytes[i] < least) continue;
      const auto b = static_cast<std::uint64_t>(d.bytes[i]);
      a.uncalibrated += std::pow(std::log(before.at(b) / d.points[i].seconds), 2);
      a.calibrated += std::pow(std::log(after.at(b) / d.points[i].seconds), 2);
      ++a.sizes;
    }
    a.uncalibrated = std::sqrt(a.uncalibrated / a.sizes);
    a.calibrated = std::sqrt(a.calibrated / a.sizes);
    out.push_back(a);
  }
  return out;
}

}  // namespace ringsim
