#include "plan/point_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <stdexcept>

#include "execute/estimate/child_process.h"
#include "report/progress.h"

namespace ringsim {

void run_predict_points(const PointRunOptions& o, const std::vector<PredictPoint>& points,
                        const std::function<void(int, const nlohmann::json&)>& done) {
  if (points.empty()) return;
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("ringsim_" + o.label + "_" + std::to_string(getpid()));
  std::filesystem::create_directories(tmp);
  std::map<pid_t, const PredictPoint*> running;
  auto spawn = [&](const PredictPoint& p) {
    std::vector<std::string> args = {o.self, "--catalog", o.catalog_dir, "predict", o.scenario};
    for (const auto& s : p.sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    if (o.fidelity) {
      args.push_back("--fidelity");
      args.push_back(*o.fidelity);
    }
    if (!o.band) args.push_back("--no-band");
    args.push_back("--json");
    args.push_back((tmp / (std::to_string(p.index) + ".json")).string());
    const std::string err = (tmp / (std::to_string(p.index) + ".err")).string();
    // The points' own children (their bands) share what the points running at once leave of the machine.
    const std::string share = "RINGSIM_JOBS=" + std::to_string(std::max(1, child_jobs() / std::max(1, o.jobs)));
    const pid_t pid = start_program({args, "/dev/null", err, {share}});
    running[pid] = &p;
  };
  Progress progress("ringsim " + o.label, "points", points.size(), std::cerr);
  progress.note("ringsim " + o.label + ": " + std::to_string(points.size()) + " points, " +
                std::to_string(std::min<std::size_t>(points.size(), std::max(1, o.jobs))) +
                " at once (-j, else RINGSIM_JOBS, else the cores)");
  std::size_t next = 0;
  std::string failure;
  try {
    while ((next < points.size() || !running.empty()) && failure.empty()) {
      while (next < points.size() && static_cast<int>(running.size()) < std::max(1, o.jobs)) spawn(points[next++]);
      int status = 0;
      const pid_t pid = waitpid(-1, &status, 0);
      if (pid < 0) break;
      auto it = running.find(pid);
      if (it == running.end()) continue;
      const int idx = it->second->index;
      running.erase(it);
      const auto json_path = tmp / (std::to_string(idx) + ".json");
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !std::filesystem::exists(json_path)) {
        std::ifstream e(tmp / (std::to_string(idx) + ".err"));
        failure = o.label + " point " + std::to_string(idx) +
                  " failed: " + std::string((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
        break;
      }
      std::ifstream in(json_path);
      done(idx, nlohmann::json::parse(in));
      progress.done("point " + std::to_string(idx) + " done");
    }
  } catch (...) {
    for (auto& [pid, p] : running) kill(pid, SIGTERM);
    for (auto& [pid, p] : running) waitpid(pid, nullptr, 0);
    std::filesystem::remove_all(tmp);
    throw;
  }
  for (auto& [pid, p] : running) kill(pid, SIGTERM);
  for (auto& [pid, p] : running) waitpid(pid, nullptr, 0);
  std::filesystem::remove_all(tmp);
  if (!failure.empty()) throw std::runtime_error(failure);
}

}  // namespace ringsim
