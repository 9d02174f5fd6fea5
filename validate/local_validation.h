// `ringsim validate --local -n N`: the one-command check of the simulator against this machine. It runs
// `ringsim-real` under mpirun here, fits the calibration to 2 processes exchanging messages (as a collective
// step does; ping-pong is measured and shown beside it), the reduction and memory copies, then
// measures what it did not fit on (ring allreduce of 64 KiB - 256 MiB on 2..N processes, and training
// iterations of ResNet-50-shaped gradients) and predicts each with the calibrated catalog.
// Processes may outnumber the cores; the model then shares the cores (see comm_model.cpp).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "load/catalog.h"
#include "validate/validation.h"

namespace ringsim {

struct LocalValidationOptions {
  int ranks = 4;                   // the bench runs on 2..ranks processes
  std::string max_bytes = "256M";  // largest allreduce and calibration message, as ringsim-real reads it
  std::string scenario_file;       // the local-host scenario (validate/scenarios/local_host_resnet50.yaml)
  std::string work_dir;            // where the measurements and the overlay are kept
  std::string real_binary;         // ringsim-real
  int train_iterations = 5;
  // The calibration is launched this many times (fitted to the median per size), then each measurement
  // runs this many times, the runs of all measurements in turn (so a slow spell of a shared machine hits
  // one run of several, not every run of one); the median run is compared, and the runs' spread is shown
  // next to the error.
  int repeats = 3;
};

// Throws InputError (missing tools, bad scenario) or std::runtime_error (a run that failed, with its command).
ValidationReport validate_local(const Catalog& catalog, const LocalValidationOptions& o, std::ostream& log);

}  // namespace ringsim
