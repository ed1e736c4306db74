// Waiting: every blocking call of the layer loops "one progress pass, then back off if it
// moved nothing" until its condition holds, so a waiting rank keeps forwarding (gateway),
// serving RPCs (servant) and answering descriptors while it waits.
#pragma once

#include "backoff.hpp"

namespace petacomm::node {

class Progressor {
 public:
  virtual ~Progressor() = default;
  // One pass over everything this rank serves; true if anything moved.
  virtual bool progress() = 0;

  template <typename Done>
  void wait_until(Done done) {
    Backoff backoff(spin_limit_, yield_limit_);
    while (!done()) {
      if (progress()) {
        backoff.reset();
      } else {
        backoff.idle();
      }
    }
  }

 protected:
  // Oversubscribed nodes yield at once (spinning only delays the partner holding the core).
  void set_oversubscribed(bool over) {
    spin_limit_ = over ? 0 : 4000;
    yield_limit_ = over ? 2000 : 20000;
  }

 private:
  int spin_limit_ = 4000, yield_limit_ = 20000;
};

}  // namespace petacomm::node
