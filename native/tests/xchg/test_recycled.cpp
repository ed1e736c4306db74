// Recycled<T>: the memory plan setups hand on to the next setup on a thread. Checked by
// capacities and addresses, worked out by hand from the rules in recycled.hpp. No MPI.
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "recycled.hpp"

namespace {

int failures = 0;

void check(bool ok, const char *what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "%s\n", what);
  }
}

using Shelf = petacomm::xchg::Recycled<std::int64_t>;

std::vector<std::int64_t> with_capacity(std::size_t n) {
  std::vector<std::int64_t> v;
  v.reserve(n);
  v.assign(n, 7);  // a used vector: take() must hand it back empty
  return v;
}

}  // namespace

int main() {
  // Nothing kept yet: new memory, empty, with the room asked for.
  std::vector<std::int64_t> a = Shelf::take(1000);
  check(a.empty() && a.capacity() >= 1000, "take(1000) on an empty shelf");

  // Given back, the same memory comes out again, emptied, for any size it holds.
  a.assign(1000, 5);
  const std::int64_t *memory = a.data();
  Shelf::give(std::move(a));
  std::vector<std::int64_t> b = Shelf::take(600);
  check(b.data() == memory && b.empty(), "take(600) after give(1000): not the kept memory");

  // Asked for more than anything kept: new memory, and the kept vector stays on the shelf.
  Shelf::give(std::move(b));
  std::vector<std::int64_t> big = Shelf::take(5000);
  check(big.capacity() >= 5000 && big.data() != memory, "take(5000): reused too small a vector");
  std::vector<std::int64_t> again = Shelf::take(10);
  check(again.data() == memory, "the 1000-vector left the shelf when a larger one was asked for");

  // Four kept at most, the smallest replaced: after giving capacities 1000 (again), 5000, 100,
  // 200 and 3000, the shelf holds 1000, 5000, 200 and 3000 (100 was the smallest when 3000
  // came), and takes of 50 come out smallest first: 200, 1000, 3000, 5000, then new memory.
  Shelf::give(std::move(again));
  Shelf::give(std::move(big));
  Shelf::give(with_capacity(100));
  Shelf::give(with_capacity(200));
  Shelf::give(with_capacity(3000));
  const std::size_t want[] = {200, 1000, 3000, 5000};
  for (std::size_t expected : want) {
    std::vector<std::int64_t> v = Shelf::take(50);
    check(v.capacity() >= expected && v.capacity() < expected + expected / 2 + 1 && v.empty(),
          "takes of 50 did not come out smallest kept first");
  }
  check(Shelf::take(50).capacity() < 100, "a fifth take found a vector the shelf should not keep");

  // A vector above kMaxBytes is freed, not kept.
  const std::size_t too_many = Shelf::kMaxBytes / sizeof(std::int64_t) + 1;
  Shelf::give(with_capacity(too_many));
  check(Shelf::take(1).capacity() < too_many, "a vector above kMaxBytes was kept");

  // kMaxBytes bounds the thread's kept memory over every element type: 20 MiB of int64 are
  // kept, then 20 MiB of int32 would make 40 and are not; once the int64 are taken, they are.
  using Ints = petacomm::xchg::Recycled<std::int32_t>;
  const std::size_t mib20 = 20u << 20;
  Shelf::give(with_capacity(mib20 / sizeof(std::int64_t)));
  std::vector<std::int32_t> ints;
  ints.reserve(mib20 / sizeof(std::int32_t));
  Ints::give(std::move(ints));
  check(Ints::take(1).capacity() < 1000, "kept 40 MiB on one thread (int64 and int32)");
  check(Shelf::take(1).capacity() == mib20 / sizeof(std::int64_t), "the 20 MiB int64 was lost");
  ints.reserve(mib20 / sizeof(std::int32_t));
  Ints::give(std::move(ints));
  check(Ints::take(1).capacity() == mib20 / sizeof(std::int32_t),
        "20 MiB of int32 not kept with nothing else kept");
  check(petacomm::xchg::recycled_bytes() == 0,
        "the kept-bytes count is not 0 with the shelves empty");

  // A smaller vector does not displace larger ones once the shelf is full.
  for (std::size_t n : {400, 500, 600, 700}) Shelf::give(with_capacity(n));
  Shelf::give(with_capacity(300));
  check(Shelf::take(50).capacity() >= 400, "a smaller vector displaced a kept larger one");

  // Each thread has its own shelf: what this thread kept is not another thread's.
  std::vector<std::int64_t> mine = with_capacity(4000);
  const std::int64_t *mine_at = mine.data();
  Shelf::give(std::move(mine));
  const std::int64_t *other_got = nullptr;
  std::thread other([&other_got] {
    std::vector<std::int64_t> v = Shelf::take(3000);
    other_got = v.data();
    Shelf::give(std::move(v));
  });
  other.join();
  check(other_got != mine_at, "another thread took this thread's kept memory");
  check(Shelf::take(3000).data() == mine_at, "this thread's kept memory was lost");

  if (failures == 0) std::printf("recycled: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
