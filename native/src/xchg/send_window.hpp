// A round's point-to-point sends, at most `window` in flight at once (0: all at once), in
// rotated order: each rank starts with the first partner above it, so the ranks do not all
// begin with the lowest-ranked one. The throttle of MVAPICH2's scatter-destination
// all-to-all and Open MPI's linear_sync: with thousands of partners an unbounded round
// floods the receivers' queues and the network (and a flow-level simulator such as SimGrid,
// whose cost grows with the flows in flight).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "error.hpp"
#include "mpi_support.hpp"

namespace petacomm::xchg {

// Whether a window of `window` sends throttles a round of `sends` sends.
inline bool window_binds(int window, std::size_t sends) {
  return window > 0 && sends > static_cast<std::size_t>(window);
}

// Positions of `dest` (destination ranks) in the order they are posted: as given when the
// window does not bind, else by distance above `me`, modulo p (ties keep their order).
inline std::vector<std::uint32_t> posting_order(const std::vector<int> &dest, int me, int p,
                                                int window) {
  std::vector<std::uint32_t> order(dest.size());
  std::iota(order.begin(), order.end(), 0U);
  if (!window_binds(window, dest.size())) return order;
  const auto distance = [&](std::uint32_t j) { return ((dest[j] - me - 1) % p + p) % p; };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return distance(a) < distance(b); });
  return order;
}

class SendWindow {
 public:
  // order: the sends' positions in posting order (posting_order); window 0: all at once.
  SendWindow(const std::vector<std::uint32_t> &order, int window)
      : order_(order),
        slots_(window > 0 ? std::min<std::size_t>(static_cast<std::size_t>(window), order.size())
                          : order.size(),
               MPI_REQUEST_NULL),
        indices_(slots_.size()) {}
  SendWindow(const SendWindow &) = delete;
  SendWindow &operator=(const SendWindow &) = delete;
  // Abandoned with sends in flight (an error path): they are waited for, not leaked.
  ~SendWindow() {
    if (!mpi_finalized())
      MPI_Waitall(static_cast<int>(slots_.size()), slots_.data(), MPI_STATUSES_IGNORE);
  }

  // Posts the first sends: post(j, &request) posts send j (a position in the order given).
  template <class Post>
  void start(Post post) {
    for (std::size_t s = 0; s < slots_.size(); ++s) post_next(post, s);
  }

  // Completes in-flight sends (block: at least one, else none needed) and posts as many
  // more; returns true once every send is done.
  template <class Post>
  bool progress(Post post, bool block) {
    if (done()) return true;
    int count = 0;
    if (block)
      check_mpi(MPI_Waitsome(static_cast<int>(slots_.size()), slots_.data(), &count,
                             indices_.data(), MPI_STATUSES_IGNORE),
                "MPI_Waitsome");
    else
      check_mpi(MPI_Testsome(static_cast<int>(slots_.size()), slots_.data(), &count,
                             indices_.data(), MPI_STATUSES_IGNORE),
                "MPI_Testsome");
    for (int i = 0; i < count && count != MPI_UNDEFINED; ++i) {
      --in_flight_;
      post_next(post, static_cast<std::size_t>(indices_[static_cast<std::size_t>(i)]));
    }
    return done();
  }

  // Blocks until every send is done.
  template <class Post>
  void finish(Post post) {
    while (!progress(post, true)) {
    }
  }

  bool done() const { return in_flight_ == 0 && next_ == order_.size(); }

 private:
  template <class Post>
  void post_next(Post &post, std::size_t slot) {
    if (next_ == order_.size()) return;
    post(order_[next_++], &slots_[slot]);
    ++in_flight_;
  }

  const std::vector<std::uint32_t> &order_;
  std::vector<MPI_Request> slots_;
  std::vector<int> indices_;
  std::size_t next_ = 0, in_flight_ = 0;
};

}  // namespace petacomm::xchg
