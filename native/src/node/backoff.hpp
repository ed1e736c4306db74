// How a rank waits for another rank of its node: spin briefly (a partner on another core
// answers within a microsecond), then yield the core, then nap. When the node has more ranks
// than this process may run on (oversubscribed), spinning only delays the partner that
// holds the core, so waiting starts at the yield stage.
#pragma once

#include <sched.h>
#include <time.h>

namespace petacomm::node {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class Backoff {
 public:
  // spin_limit: pause iterations before yielding; yield_limit: yields before napping.
  Backoff(int spin_limit, int yield_limit) : spin_limit_(spin_limit), yield_limit_(yield_limit) {}

  // Call after a progress pass that did nothing.
  void idle() {
    ++rounds_;
    if (rounds_ <= spin_limit_) {
      cpu_relax();  // one: a pause costs ~80 ns on recent x86, and the partner is close
    } else if (rounds_ <= spin_limit_ + yield_limit_) {
      sched_yield();
    } else {
      // Long waits (a partner computing, or many ranks per core): 20 us naps keep an idle
      // rank from stealing the core without adding much to a wait that long.
      const timespec nap{0, 20000};
      nanosleep(&nap, nullptr);
    }
  }
  // Call after a pass that moved something: the next wait spins again.
  void reset() { rounds_ = 0; }

 private:
  int spin_limit_, yield_limit_;
  int rounds_ = 0;
};

}  // namespace petacomm::node
