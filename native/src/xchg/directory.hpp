// Distributed directory: every key has a home rank (its hash mapped onto [0, p)). Ranks send
// their distinct keys home (partners found by NBX); each home sorts the (key, rank) pairs it
// received, so it knows every holder of its keys, chooses an owner among them and replies
// to each holder of a shared key with d, the owner and (when asked for) the other holders.
// O(n_local) memory and work per rank in expectation, no p x n tables, no O(p) arrays.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <vector>

#include "nbx.hpp"
#include "petacomm/xchg.h"
#include "private_comm.hpp"
#include "sharing.hpp"

namespace petacomm::xchg {

class Directory {
 public:
  // Collective, in two steps. First the keys go to their homes: keys are this rank's
  // distinct keys, ascending, or nullptr for a rank that sends none but takes part (plan
  // creation runs this step while its argument check is in flight, so every rank runs it,
  // whatever it was asked). tag_base: the plan's tags.
  // Its waiting is timed on `clock` (may be nullptr), which must outlive the directory.
  // send_window: at most this many sends in flight per step (0: all at once).
  Directory(MPI_Comm comm, int tag_base, const std::vector<std::int64_t> *keys, SetupClock *clock,
            int send_window);
  // Hands the home table and the sharing arrays to the next plan on this thread (recycled.hpp).
  ~Directory();
  Directory(const Directory &) = delete;
  Directory &operator=(const Directory &) = delete;
  // Then (once the ranks' arguments agree) each home tells the holders of its keys who
  // else holds them: holder lists for keys with d <= list_limit, always to a key's owner.
  void resolve(int list_limit);

  Sharing &sharing() { return sharing_; }
  const SetupTraffic &traffic() const { return traffic_; }
  std::int64_t reply_ints() const { return reply_ints_; }
  // Distinct keys homed on this rank by multiplicity bucket (0: d == 1, b: 2^(b-1) < d <= 2^b).
  const std::array<std::int64_t, PETACOMM_XCHG_HUB_LEVELS + 1> &home_histogram() const {
    return histogram_;
  }

  // Collective: numbers the keys held by more than `threshold` ranks 0..H-1 (by home, then
  // key) and stores each hub key's number in sharing().hub_index. Returns H.
  std::int64_t assign_hubs(int threshold);

  // Frees the home-side table (after the last assign_hubs).
  void release_home_table();

 private:
  struct HomeEntry {
    std::int64_t key;
    std::int32_t position;  // of the key in its holder's message
    std::int32_t source;    // index into sources_ (ascending with the holder's rank)
    // Left uninitialised, so that sizing the table does not write it twice (every entry
    // is written when it is filled).
    HomeEntry() {}  // NOLINT(modernize-use-equals-default): = default would zero it
    HomeEntry(std::int64_t k, std::int32_t p, std::int32_t s) : key(k), position(p), source(s) {}
  };
  // The steps of construction, in order: NBX of my keys to their homes (returns what was
  // homed here), the sorted home table, per holder the replies (d, owner, other holders),
  // their exchange (returns one reply per home), and decoding them into sharing_.
  std::vector<Message> send_keys_home(const std::vector<std::int64_t> &keys);
  void build_home_table(std::vector<Message> incoming);
  std::vector<std::vector<std::int32_t>> make_replies(int list_limit);
  std::vector<std::vector<std::int32_t>> exchange_replies(
      std::vector<std::vector<std::int32_t>> replies);
  void decode_replies(const std::vector<std::vector<std::int32_t>> &received, std::size_t u_count,
                      int list_limit);
  // f(begin, end) for each key's run of holders [begin, end) in the home table.
  template <class F>
  void for_each_key(F f) const {
    for (std::size_t g = 0; g < table_.size();) {
      std::size_t end = g;
      while (end < table_.size() && table_[end].key == table_[g].key) ++end;
      f(g, end);
      g = end;
    }
  }

  MPI_Comm comm_;
  int tag_base_;
  SetupClock *clock_;
  int send_window_;
  int me_ = 0, size_ = 1;
  std::size_t u_count_ = 0;        // keys sent home
  std::vector<Message> incoming_;  // keys homed here, until resolve()
  Sharing sharing_;
  SetupTraffic traffic_;
  std::int64_t reply_ints_ = 0;
  std::array<std::int64_t, PETACOMM_XCHG_HUB_LEVELS + 1> histogram_{};
  std::vector<HomeEntry> table_;                         // sorted by (key, rank)
  std::vector<int> sources_;                             // ranks that sent keys here
  std::vector<int> homes_;                               // homes I sent keys to, ascending
  std::vector<std::vector<std::int32_t>> keys_at_home_;  // my key indices per home
};

// Bucket of multiplicity d: 0 for d == 1, else ceil(log2 d) (at most the hub levels).
inline int multiplicity_bucket(std::int64_t d) {
  if (d <= 1) return 0;
  const int b = 64 - __builtin_clzll(static_cast<unsigned long long>(d - 1));
  return b < PETACOMM_XCHG_HUB_LEVELS ? b : PETACOMM_XCHG_HUB_LEVELS;
}

}  // namespace petacomm::xchg
