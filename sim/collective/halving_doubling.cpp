// Recursive halving and doubling (Rabenseifner's allreduce, as in Gloo and MPI libraries).
#include <memory>
#include <stdexcept>
#include <string_view>

#include "collective/algorithm_steps.h"
#include "collective/collective.h"

namespace ringsim::collective {

namespace {

using detail::add_halving_doubling_phases;
using detail::halving_doubling_step;
using detail::HalvingDoubling;
using detail::PhasedCollective;
using detail::staging_step;

class HalvingDoublingAllreduce final : public PhasedCollective {
 public:
  HalvingDoublingAllreduce(int p, std::uint64_t bytes, int element_bytes, Space space)
      : PhasedCollective(bytes, p, space), hd_(p), chunks_(bytes, hd_.p2, element_bytes) {
    const bool staged = space == Space::Host && p > 1;
    if (staged) phases_.add(Phase::CopyToHost, 1);
    add_halving_doubling_phases(phases_, hd_, Phase::Fold, Phase::ReduceScatter, Phase::Allgather, Phase::Unfold);
    if (staged) phases_.add(Phase::CopyToDevice, 1);
  }
  std::string_view algorithm() const override { return "halving_doubling_allreduce"; }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    auto [phase, k] = phases_.locate(s);
    if (staging_step(phase, m, bytes_, out)) return;
    halving_doubling_step(
        hd_, m, phase, k, chunks_, space_, [](int i) { return i; }, out);
  }

 private:
  HalvingDoubling hd_;
  Chunking chunks_;
};

}  // namespace

std::unique_ptr<Collective> make_halving_doubling_allreduce(int members, std::uint64_t bytes, int element_bytes,
                                                            Space space) {
  if (members < 1) throw std::invalid_argument("halving-doubling allreduce needs at least one member");
  return std::make_unique<HalvingDoublingAllreduce>(members, bytes, element_bytes, space);
}

}  // namespace ringsim::collective
