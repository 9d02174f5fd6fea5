// Host processes' costs: ranks sharing cores, size regimes keyed by buffer or footprint, protocol overheads
// per message.
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "collective/collective.h"
#include "execute/comm_model.h"
#include "execute/estimate/child_process.h"
#include "execute/simgrid/training_sim.h"
#include "graph/topology_graph.h"
#include "load/input_error.h"
#include "load/scenario.h"
#include "sim_test_support.h"
#include "test_support.h"

using namespace ringsim;
using collective::Space;

namespace {

using ringsim::test::local_host;
using ringsim::test::timed_with;

}  // namespace

TEST_CASE("cpu processes: a ring on p processes sharing c cores copies and reduces at 1/ceil(p/c) of a core",
          "[simulator]") {
  // local-host: shm_process links of 10 GB/s and 0.2 us, two per route, mpi's 0.8 fraction and 0.5 us
  // overhead, 8 GB/s host reduction, 2 cores, and each message waits for the core to be handed over from
  // the other ceil(p/c) - 1 processes on it, at both ends (skus.yaml, links.yaml, libraries.yaml, gpus.yaml).
  const Catalog& cat = test::catalog();
  REQUIRE(cat.gpu("cpu-process").cpu_process);
  REQUIRE(cat.sku("local-host").vcpus == 2);
  // Both handoffs: the processes are spread over the 2 cores.
  const double handoff = cat.gpu("cpu-process").core_handoff + cat.gpu("cpu-process").cross_core_handoff;
  REQUIRE(cat.gpu("cpu-process").cross_core_handoff > 0);
  const double bw = 10e9 * 0.8, reduce = 8e9;
  const std::uint64_t bytes = 64ull << 20;
  for (int p : {2, 3, 4}) {
    const int per_core = (p + 1) / 2;
    const double share = 1.0 / per_core, chunk = static_cast<double>(bytes) / p;
    const double alpha = 2 * 0.2e-6 + 0.5e-6 + (per_core - 1) * handoff;
    const double expected = 2 * (p - 1) * (alpha + chunk / (bw * share)) + (p - 1) * chunk / (reduce * share);
    auto ring = collective::make_ring_allreduce(p, bytes, 4, Space::Device);
    for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
      CAPTURE(p, to_string(f));
      CHECK(timed_with(cat, local_host(p), *ring, f) == Approx(expected).epsilon(0.01));
    }
  }
}

TEST_CASE("cpu processes: an MPI ring stages nothing, as ringsim-real runs it on the fusion buffer", "[simulator]") {
  // A host-staged library copies GPU buffers to host memory and back; a CPU process's buffer is host
  // memory already. With staging, each buffer's collective had copy_to_host and copy_to_device phases.
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    const std::string phases = run_in_child([&] {
      std::string out;
      for (const auto& c : predict(test::catalog(), local_host(2), f).collectives) {
        for (const auto& ph : c.phases) out += ph.phase + " ";
        out += "\n";
      }
      return out;
    });
    REQUIRE(!phases.empty());
    std::istringstream lines(phases);
    for (std::string line; std::getline(lines, line);) CHECK(line == "reduce_scatter allgather ");
  }
}

TEST_CASE("size regimes keyed by buffer follow the collective's buffer, not its messages", "[simulator]") {
  // A 2-process ring of 16 MiB sends 8 MiB messages. Copies run at 2x the link below 16 MiB and reductions
  // at 16 GB/s; from 16 MiB at 1x and 8 GB/s. Keyed by buffer the ring is in the 16 MiB regime; keyed by
  // message, in the one below. shm_process: 10 GB/s and 0.2 us, two per route (links.yaml).
  const std::uint64_t bytes = 16ull << 20;
  const double chunk = static_cast<double>(bytes) / 2, latency = 2 * 0.2e-6;
  for (const std::string key : {"buffer", "message"}) {
    const std::string file = "/tmp/ringsim_regime_key_" + std::to_string(getpid()) + ".yaml";
    std::ofstream(file)
        << "libraries:\n  mpi:\n    host_reduction_regimes_by: " << key
        << "\n    host_reduction_regimes:\n      - {from: 1 B, rate: 16 GB/s}\n"
           "      - {from: 16 MiB, rate: 8 GB/s}\n    paths:\n      intra_node: {bandwidth_fraction: 1, "
           "message_overhead: 0 s, regimes_by: "
        << key
        << ", regimes: [{from: 1 B, bandwidth_scale: 2, message_overhead: 0 s}, {from: 16 MiB, "
           "bandwidth_scale: 1, message_overhead: 0 s}]}\n";
    Catalog cat = test::catalog();
    cat.apply_overlay(file);
    std::remove(file.c_str());
    const double scale = key == "buffer" ? 1 : 2, reduce = key == "buffer" ? 8e9 : 16e9;
    const double expected = 2 * (latency + chunk / (10e9 * scale)) + chunk / reduce;
    auto ring = collective::make_ring_allreduce(2, bytes, 4, Space::Device);
    for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
      CAPTURE(key, to_string(f));
      CHECK(timed_with(cat, local_host(2), *ring, f) == Approx(expected).epsilon(0.001));
    }
  }
  // Anything else is refused, naming the choices.
  const std::string bad = "/tmp/ringsim_regime_key_bad_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(bad) << "libraries:\n  mpi:\n    host_reduction_regimes_by: bytes\n";
  Catalog cat = test::catalog();
  try {
    cat.apply_overlay(bad);
    FAIL("regimes_by: bytes was accepted");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find(":3:") != std::string::npos);
    CHECK(what.find("buffer") != std::string::npos);
    CHECK(what.find("message") != std::string::npos);
    CHECK(what.find("footprint") != std::string::npos);
  }
  std::remove(bad.c_str());
}

TEST_CASE("size regimes keyed by footprint follow what the host's processes hold, interpolated", "[simulator]") {
  // A 2-process ring of 16 MiB: each process holds its buffer and receives 8 MiB a step, so the two hold
  // 48 MiB. Regimes measured at 32 MiB (copies at 1.5x the link, reductions at 12 GB/s) and 64 MiB (1x,
  // 8 GB/s): keyed by footprint, a cache curve, 48 MiB lies between them in log(size), log(48/32) /
  // log(64/32) = 0.585 of the way. shm_process: 10 GB/s and 0.2 us, two per route (links.yaml).
  const std::uint64_t bytes = 16ull << 20;
  const double chunk = static_cast<double>(bytes) / 2, latency = 2 * 0.2e-6;
  const std::string file = "/tmp/ringsim_regime_footprint_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(file) << "libraries:\n  mpi:\n    host_reduction_regimes_by: footprint\n"
                         "    host_reduction_regimes:\n      - {from: 1 B, rate: 16 GB/s}\n"
                         "      - {from: 32 MiB, rate: 12 GB/s}\n      - {from: 64 MiB, rate: 8 GB/s}\n"
                         "    paths:\n      intra_node: {bandwidth_fraction: 1, message_overhead: 0 s, "
                         "regimes_by: footprint, regimes: [{from: 1 B, bandwidth_scale: 2, message_overhead: 0 s}, "
                         "{from: 32 MiB, bandwidth_scale: 1.5, message_overhead: 0 s}, {from: 64 MiB, "
                         "bandwidth_scale: 1, message_overhead: 0 s}]}\n";
  Catalog cat = test::catalog();
  cat.apply_overlay(file);
  std::remove(file.c_str());
  const double t = std::log(1.5) / std::log(2.0);
  const double scale = 1.5 * std::pow(1 / 1.5, t), reduce = 12e9 * std::pow(8.0 / 12.0, t);
  const double expected = 2 * (latency + chunk / (10e9 * scale)) + chunk / reduce;
  auto ring = collective::make_ring_allreduce(2, bytes, 4, Space::Device);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    CHECK(timed_with(cat, local_host(2), *ring, f) == Approx(expected).epsilon(0.001));
  }
  // Three processes of a 12 MiB ring hold 3 x (12 + 4) MiB = 48 MiB too, though their messages are smaller.
  Scenario three = local_host(3);
  Topology topo = Topology::build(cat, cluster_shape(three.cluster));
  CommModel cm(cat, three, topo);
  auto ring3 = collective::make_ring_allreduce(3, 12ull << 20, 4, Space::Device);
  const CollectiveSize size = cm.collective_size(*ring3);
  CHECK(size.buffer == Approx(12.0 * (1 << 20)));
  CHECK(size.footprint == Approx(48.0 * (1 << 20)));
  // Without regimes keyed by footprint it is not computed (a ring over thousands of GPUs need not walk it).
  Catalog plain = test::catalog();
  CommModel cm_plain(plain, three, topo);
  CHECK(cm_plain.collective_size(*ring3).footprint == 0);
}

TEST_CASE("protocol overheads follow a message's own size, whatever its regimes are keyed by", "[simulator]") {
  // A 2-process ring of 512 KiB sends 256 KiB messages and holds 1.5 MiB. Messages pay 2 us more from
  // 4 KiB (a rendezvous) and 10 us more from 1 MiB: these pay 2 us, though the footprint that picks their
  // copies' regime is above 1 MiB. shm_process: 10 GB/s and 0.2 us, two per route (links.yaml).
  const std::uint64_t bytes = 512 * 1024;
  const double chunk = static_cast<double>(bytes) / 2, latency = 2 * 0.2e-6;
  const std::string file = "/tmp/ringsim_protocol_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(file) << "libraries:\n  mpi:\n    host_reduction_rate: 16 GB/s\n    paths:\n      intra_node: "
                         "{bandwidth_fraction: 1, message_overhead: 0 s, regimes_by: footprint, regimes: [{from: 1 B, "
                         "bandwidth_scale: 1, message_overhead: 0 s}], protocol_overheads: [{from: 4 KiB, overhead: "
                         "2 us}, {from: 1 MiB, overhead: 10 us}]}\n";
  Catalog cat = test::catalog();
  cat.apply_overlay(file);
  const double expected = 2 * (latency + 2e-6 + chunk / 10e9) + chunk / 16e9;
  auto ring = collective::make_ring_allreduce(2, bytes, 4, Space::Device);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    CHECK(timed_with(cat, local_host(2), *ring, f) == Approx(expected).epsilon(0.001));
  }
  // Out of order is refused where it is written.
  std::ofstream(file) << "libraries:\n  mpi:\n    paths:\n      intra_node:\n        protocol_overheads:\n"
                         "          - {from: 1 MiB, overhead: 10 us}\n          - {from: 4 KiB, overhead: 2 us}\n";
  Catalog bad = test::catalog();
  try {
    bad.apply_overlay(file);
    FAIL("descending protocol overheads were accepted");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find(":7:") != std::string::npos);
    CHECK(what.find("ascending") != std::string::npos);
  }
  std::remove(file.c_str());
}
