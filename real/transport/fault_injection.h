// Testing aid: a transport wrapper that makes one rank exit or hang at a given step, so that tests can
// check a run with a dead or silent rank ends non-zero within the timeout instead of hanging.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

#include "collective/transport.h"

namespace ringsim::real {

struct Fault {
  int rank = -1;  // -1: none
  int step = 0;
  bool hang = false;                            // false: the process exits with status 3
  static Fault parse(const std::string& spec);  // "RANK:STEP:exit" or "RANK:STEP:hang"
};

class FaultyTransport final : public collective::Transport {
 public:
  FaultyTransport(collective::Transport& inner, Fault f, int rank) : inner_(inner), f_(f), rank_(rank) {}
  void post(int index, const collective::RankStep& s) override {
    if (rank_ == f_.rank && index == f_.step) {
      std::fprintf(stderr, "ringsim-real: injected fault: rank %d %s at step %d\n", rank_, f_.hang ? "hangs" : "exits",
                   index);
      std::fflush(stderr);
      if (!f_.hang) _exit(3);
      for (;;) pause();
    }
    inner_.post(index, s);
  }
  void wait(int index, const collective::RankStep& s) override { inner_.wait(index, s); }
  void reduce(const collective::Transfer& t) override { inner_.reduce(t); }
  void update(std::uint64_t b) override { inner_.update(b); }

 private:
  collective::Transport& inner_;
  Fault f_;
  int rank_;
};

}  // namespace ringsim::real
