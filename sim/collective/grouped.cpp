// Collectives composed of others: one run by several groups of members at once, and two run one after the
// other (hybrid sharded data parallelism: a reduce-scatter inside every node, then an allreduce of each
// shard across the nodes).
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "collective/collective.h"

namespace ringsim::collective {

namespace {

class Grouped final : public Collective {
 public:
  Grouped(std::shared_ptr<const Collective> base, std::vector<std::vector<int>> groups,
          std::vector<std::uint64_t> offsets, std::string name)
      : Collective(base->bytes()),
        base_(std::move(base)),
        groups_(std::move(groups)),
        offsets_(std::move(offsets)),
        name_(std::move(name)) {
    for (const auto& g : groups_) {
      if (static_cast<int>(g.size()) != base_->members())
        throw std::invalid_argument("grouped collective: every group has the base's members");
      for (int m : g) members_ = std::max(members_, m + 1);
    }
    if (offsets_.size() != groups_.size()) throw std::invalid_argument("grouped collective: an offset per group");
    group_of_.assign(members_, {-1, -1});
    for (std::size_t g = 0; g < groups_.size(); ++g)
      for (std::size_t i = 0; i < groups_[g].size(); ++i) {
        auto& at = group_of_.at(groups_[g][i]);
        if (at.first >= 0) throw std::invalid_argument("grouped collective: a member in two groups");
        at = {static_cast<int>(g), static_cast<int>(i)};
      }
  }
  std::string_view algorithm() const override { return name_; }
  int members() const override { return members_; }
  int steps() const override { return base_->steps(); }
  std::vector<StepRun> runs() const override { return base_->runs(); }
  Space home_space(int m) const override { return base_->home_space(std::max(0, group_of_[m].second)); }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    const int g = group_of_[m].first, i = group_of_[m].second;
    if (g < 0) return;  // in no group: idle
    base_->rank_step(i, s, scratch_);
    auto place = [&](Transfer t) {
      t.src = groups_[g][t.src];
      t.dst = groups_[g][t.dst];
      t.offset += offsets_[g];
      return t;
    };
    for (const auto& t : scratch_.sends) out.sends.push_back(place(t));
    for (const auto& t : scratch_.recvs) out.recvs.push_back(place(t));
    out.update_bytes = scratch_.update_bytes;
  }

 private:
  std::shared_ptr<const Collective> base_;
  std::vector<std::vector<int>> groups_;
  std::vector<std::uint64_t> offsets_;
  std::string name_;
  int members_ = 0;
  std::vector<std::pair<int, int>> group_of_;  // member -> (group, index in it); -1: none
  mutable RankStep scratch_;
};

class Sequence final : public Collective {
 public:
  Sequence(std::unique_ptr<Collective> first, std::unique_ptr<Collective> second, std::string name)
      : Collective(first->bytes()), first_(std::move(first)), second_(std::move(second)), name_(std::move(name)) {
    if (first_->members() != second_->members())
      throw std::invalid_argument("collective sequence: both parts over the same members");
  }
  std::string_view algorithm() const override { return name_; }
  int members() const override { return first_->members(); }
  int steps() const override { return first_->steps() + second_->steps(); }
  std::vector<StepRun> runs() const override {
    auto out = first_->runs();
    for (auto r : second_->runs()) {
      r.first += first_->steps();
      out.push_back(r);
    }
    return out;
  }
  Space home_space(int m) const override { return first_->home_space(m); }
  void rank_step(int m, int s, RankStep& out) const override {
    if (s < first_->steps())
      first_->rank_step(m, s, out);
    else
      second_->rank_step(m, s - first_->steps(), out);
  }

 private:
  std::unique_ptr<Collective> first_, second_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Collective> make_grouped(std::shared_ptr<const Collective> base, std::vector<std::vector<int>> groups,
                                         std::vector<std::uint64_t> offsets, std::string name) {
  return std::make_unique<Grouped>(std::move(base), std::move(groups), std::move(offsets), std::move(name));
}

std::unique_ptr<Collective> make_sequence(std::unique_ptr<Collective> first, std::unique_ptr<Collective> second,
                                          std::string name) {
  return std::make_unique<Sequence>(std::move(first), std::move(second), std::move(name));
}

}  // namespace ringsim::collective
