// An open-addressed hash table keyed by an MPI handle value: the communicator, window and
// message caches and the pending requests all use it. Linear probing, load at most 3/4,
// backward-shift deletion (no tombstones). Several slots may hold the same key (a multimap:
// Open MPI gives every request that completed at once the same handle value); they are found
// oldest first, and deletion keeps that order.
//
// Slot types have a `uintptr_t key` (0: free). Not thread-safe: callers hold the Lock.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace petacomm::prof {

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// A handle as a non-zero key (handles are pointers in Open MPI, integers in MPICH).
template <typename H>
uintptr_t handle_key(H handle) {
  static_assert(sizeof(H) <= sizeof(uintptr_t), "MPI handles fit in a pointer");
  uintptr_t k = 0;
  std::memcpy(&k, &handle, sizeof(H));
  return k ^ 0x9e3779b97f4a7c15ull;
}

template <typename Slot>
class HandleTable {
 public:
  // Room for `entries` keys at load 3/4; false when the memory cannot be had.
  bool init(uint64_t entries) {
    uint64_t n = 16;
    while (n * 3 / 4 < entries) n *= 2;
    slots_ = static_cast<Slot *>(std::calloc(n, sizeof(Slot)));
    if (!slots_) return false;
    mask_ = n - 1;
    used_ = 0;
    return true;
  }
  bool ready() const { return slots_ != nullptr; }
  uint64_t size() const { return used_; }

  // The oldest slot holding `key` that `accept` takes, or null.
  template <typename Accept>
  Slot *find(uintptr_t key, Accept accept) {
    if (!slots_) return nullptr;
    for (uint64_t s = home(key), i = 0; i <= mask_; ++i, s = (s + 1) & mask_) {
      if (slots_[s].key == 0) return nullptr;
      if (slots_[s].key == key && accept(slots_[s])) return &slots_[s];
    }
    return nullptr;
  }
  Slot *find(uintptr_t key) {
    return find(key, [](const Slot &) { return true; });
  }

  // A new zeroed slot for `key` after those already holding it; null when the table is at
  // its load limit.
  Slot *insert(uintptr_t key) {
    if (!slots_ || used_ + 1 > (mask_ + 1) * 3 / 4) return nullptr;
    uint64_t s = home(key);
    while (slots_[s].key != 0) s = (s + 1) & mask_;
    std::memset(&slots_[s], 0, sizeof(Slot));
    slots_[s].key = key;
    ++used_;
    return &slots_[s];
  }

  // Removes `slot` (a pointer this table returned; pointers to other slots may move).
  void erase(Slot *slot) {
    uint64_t hole = static_cast<uint64_t>(slot - slots_);
    for (uint64_t j = (hole + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      const uint64_t h = home(slots_[j].key);
      // Move slot j into the hole when its home is not cyclically in (hole, j].
      const bool movable = (hole <= j) ? (h <= hole || h > j) : (h <= hole && h > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    std::memset(&slots_[hole], 0, sizeof(Slot));
    --used_;
  }

  template <typename F>
  void for_each(F visit) {
    if (!slots_) return;
    for (uint64_t s = 0; s <= mask_; ++s)
      if (slots_[s].key != 0) visit(slots_[s]);
  }

 private:
  uint64_t home(uintptr_t key) const { return mix64(key) & mask_; }
  Slot *slots_ = nullptr;
  uint64_t mask_ = 0;
  uint64_t used_ = 0;
};

}  // namespace petacomm::prof
