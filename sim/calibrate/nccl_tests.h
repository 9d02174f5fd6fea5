// Reading nccl-tests (and rccl-tests) output as launchers and users leave it: Open MPI's --tag-output and
// Slurm's --label prefixes, NCCL INFO/WARN lines anywhere, the banner and rank lines or only the table,
// the old (float `error`) and new (`#wrong`, `root`) columns, -g multi-GPU threads, the trailer.
// A result row is `size count type [redop] [root] time algbw busbw #wrong` out-of-place, then in-place;
// the out-of-place time is the measurement.
#pragma once

#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "load/catalog.h"
#include "load/overlay.h"
#include "load/scenario.h"

namespace ringsim {

// What the log may not say, from the scenario: its ranks and hosts (cluster.nodes x gpus_per_node).
struct NcclTestsContext {
  int ranks = 0;
  int hosts = 0;
};

struct NcclTestsData {
  std::string op;  // all_reduce, all_gather, reduce_scatter or sendrecv
  int ranks = 0;
  int hosts = 0;  // distinct host names in the rank lines
  bool spans_nodes = false;
  bool ranks_from_context = false;  // the log had no rank lines
  std::vector<FitPoint> points;     // seconds against the op's step count (x_alpha) and bytes per step (x_beta)
  std::vector<double> bytes;        // each point's message size, as the log gives it
};

// Throws InputError (file:line) for a row that is cut short or not numbers, a run that failed its own
// check or failed outright, several tests in one file, or no rows at all.
NcclTestsData parse_nccl_tests(const std::string& text, const std::string& file, const NcclTestsContext& context = {});

// How well a catalog's figures and a calibration's explain an nccl-tests all_reduce, all_gather or
// reduce_scatter log of the scenario's ranks: the root mean square of log(predicted / measured time) over
// its sizes, by `ringsim bench`'s model of that op.
struct LogAgreement {
  std::string file;
  int sizes = 0;
  double uncalibrated = 0, calibrated = 0;  // RMS log errors
};
// The logs that are runs of those ops on the scenario's ranks; the others (sendrecv, other ranks) are left out.
std::vector<LogAgreement> agreement_with_logs(const Catalog& catalog, const CatalogOverlay& overlay, const Scenario& s,
                                              const std::vector<std::string>& files);

}  // namespace ringsim
