// Memory that plan setups hand on to the next setup on the same thread. A setup's large
// temporaries (the directory's home table and its merge buffer, the sharing arrays) die when
// the plan is built; glibc then gives their pages back to the kernel, and the next plan pays
// a page fault and a zeroed page per 4 KiB to get them again: 150-170 faults per plan with
// 15,000 keys per rank, 5 % of a directory setup's time at 2 ranks (docs/sparse-reduce.md).
// Kept here (a few vectors per element type, at most kMaxBytes on a thread in all), they are
// reused instead. Only whole vectors move in and out, with no MPI call in between, so SimGrid
// SMPI's ranks, which share one thread, never share a vector.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace petacomm::xchg {

// Bytes kept on this thread, over every element type.
inline std::size_t &recycled_bytes() {
  thread_local std::size_t bytes = 0;
  return bytes;
}

template <class T>
class Recycled {
 public:
  static constexpr std::size_t kKept = 4;             // vectors kept per element type
  static constexpr std::size_t kMaxBytes = 32 << 20;  // kept on a thread, all types together

  // An empty vector with room for n elements: the smallest kept one that has it, else new.
  static std::vector<T> take(std::size_t n) {
    Shelf &shelf = shelf_();
    std::vector<T> *best = nullptr;
    for (std::vector<T> &v : shelf)
      if (v.capacity() >= n && (best == nullptr || v.capacity() < best->capacity())) best = &v;
    std::vector<T> out;
    if (best != nullptr) {
      out.swap(*best);  // kept vectors are empty (give clears them)
      recycled_bytes() -= out.capacity() * sizeof(T);
    }
    out.reserve(n);
    return out;
  }

  // Keeps v's memory for a later take(), in place of the smallest kept vector if it is
  // larger and the thread's total stays within kMaxBytes (else v is left to be freed).
  static void give(std::vector<T> &&v) {
    Shelf &shelf = shelf_();
    auto smallest = std::min_element(shelf.begin(), shelf.end(), [](const auto &a, const auto &b) {
      return a.capacity() < b.capacity();
    });
    if (smallest->capacity() >= v.capacity()) return;
    const std::size_t total = recycled_bytes() + (v.capacity() - smallest->capacity()) * sizeof(T);
    if (v.capacity() > kMaxBytes / sizeof(T) || total > kMaxBytes) return;
    recycled_bytes() = total;
    v.clear();
    smallest->swap(v);
  }

 private:
  using Shelf = std::array<std::vector<T>, kKept>;
  static Shelf &shelf_() {
    thread_local Shelf shelf;
    return shelf;
  }
};

}  // namespace petacomm::xchg
