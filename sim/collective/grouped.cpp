// Collectives composed of others: one run by several groups of members at once, and two run one after the
// other (hybrid sharded data parallelism: a reduce-scatter inside every node, then an allreduce of each
// shard across the nodes).
#include <algorithm>
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
  // bases: one for every group, or one a group.
  Grouped(std::vector<std::shared_ptr<const Collective>> bases, std::vector<std::vector<int>> groups,
          std::vector<std::vector<Piece>> pieces, std::string name)
      : Collective(bases.at(0)->bytes()),
        bases_(std::move(bases)),
        groups_(std::move(groups)),
        pieces_(std::move(pieces)),
        name_(std::move(name)) {
    if (pieces_.size() != groups_.size()) throw std::invalid_argument("grouped collective: a span per group");
    if (bases_.size() != 1 && bases_.size() != groups_.size())
      throw std::invalid_argument("grouped collective: one base, or one a group");
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const Collective& b = base(static_cast<int>(g));
      if (static_cast<int>(groups_[g].size()) != b.members() || b.steps() != bases_[0]->steps())
        throw std::invalid_argument("grouped collective: every group has the base's members and steps");
      for (int m : groups_[g]) members_ = std::max(members_, m + 1);
      std::uint64_t sum = 0;
      for (const Piece& q : pieces_[g]) sum += q.bytes;
      if (pieces_[g].empty() || sum != b.bytes())
        throw std::invalid_argument("grouped collective: a group's pieces hold its base's bytes");
    }
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
  int steps() const override { return bases_[0]->steps(); }
  std::vector<StepRun> runs() const override { return bases_[0]->runs(); }
  Space home_space(int m) const override {
    return base(std::max(0, group_of_[m].first)).home_space(std::max(0, group_of_[m].second));
  }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    const int g = group_of_[m].first, i = group_of_[m].second;
    if (g < 0) return;  // in no group: idle
    base(g).rank_step(i, s, scratch_);
    for (const auto& t : scratch_.sends) place(g, t, out.sends);
    for (const auto& t : scratch_.recvs) place(g, t, out.recvs);
    out.update_bytes = scratch_.update_bytes;
  }

 private:
  // Base transfer t of group g as the group's members and pieces see it: one transfer a piece it spans.
  void place(int g, Transfer t, std::vector<Transfer>& out) const {
    t.src = groups_[g][t.src];
    t.dst = groups_[g][t.dst];
    std::uint64_t at = 0;  // the base offset where piece q starts
    for (const Piece& q : pieces_[g]) {
      const std::uint64_t begin = std::max(t.offset, at), end = std::min(t.offset + t.bytes, at + q.bytes);
      if (begin < end || (t.bytes == 0 && t.offset >= at && t.offset < at + q.bytes)) {
        Transfer part = t;
        part.offset = q.offset + (begin - at);
        part.bytes = end > begin ? end - begin : 0;
        out.push_back(part);
        if (t.bytes == 0) return;
      }
      at += q.bytes;
    }
  }
  const Collective& base(int g) const { return *bases_[bases_.size() == 1 ? 0 : g]; }
  std::vector<std::shared_ptr<const Collective>> bases_;
  std::vector<std::vector<int>> groups_;
  std::vector<std::vector<Piece>> pieces_;
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
  std::vector<std::vector<Piece>> pieces;
  for (std::uint64_t o : offsets) pieces.push_back({{o, base->bytes()}});
  return std::make_unique<Grouped>(std::vector{std::move(base)}, std::move(groups), std::move(pieces), std::move(name));
}

std::unique_ptr<Collective> make_grouped(std::vector<std::shared_ptr<const Collective>> bases,
                                         std::vector<std::vector<int>> groups, std::vector<std::vector<Piece>> pieces,
                                         std::string name) {
  return std::make_unique<Grouped>(std::move(bases), std::move(groups), std::move(pieces), std::move(name));
}

std::unique_ptr<Collective> make_sequence(std::unique_ptr<Collective> first, std::unique_ptr<Collective> second,
                                          std::string name) {
  return std::make_unique<Sequence>(std::move(first), std::move(second), std::move(name));
}

}  // namespace ringsim::collective
