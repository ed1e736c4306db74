// The directory's homes: the global key range cut into blocks of 2^shift consecutive keys,
// at most kBlocksPerRank per rank, dealt to the ranks in turn (block j to rank j mod p).
// Ascending keys reach a home in runs (one per block), so a rank sends each home a few
// copied runs instead of hashing and scattering key by key; a key range that many ranks
// hold (the pixels crossed by every scan) is spread over many homes, where equal parts per
// rank (PetscSF's layout) would pile it on one; and the keys homed on a rank are dense once
// the other ranks' blocks are squeezed out (squeezed()), so the home sorts its pairs by
// counting.
#pragma once

#include <cstdint>

namespace petacomm::xchg {

class BlockHomes {
 public:
  static constexpr std::uint64_t kBlocksPerRank = 64;

  // The keys of every rank are in [first, last] (last < first: no keys anywhere).
  BlockHomes(std::int64_t first, std::int64_t last, int parts) : first_(first), parts_(parts) {
    if (last < first) return;
    const std::uint64_t top = static_cast<std::uint64_t>(last - first);  // span - 1
    const std::uint64_t most = kBlocksPerRank * static_cast<std::uint64_t>(parts);
    while ((top >> shift_) >= most) ++shift_;
    blocks_ = (top >> shift_) + 1;
  }
  std::uint64_t offset(std::int64_t key) const { return static_cast<std::uint64_t>(key - first_); }
  std::uint64_t block(std::int64_t key) const { return offset(key) >> shift_; }
  int home(std::uint64_t block) const { return static_cast<int>(block % parts_); }
  // A key's place among the keys of its home's blocks (its home's earlier blocks, then its
  // offset in its own) is offset(key) - squeezed(block(key)): the other homes' keys below
  // its block.
  std::uint64_t squeezed(std::uint64_t block) const { return (block - block / parts_) << shift_; }
  // Every key's place is below this.
  std::uint64_t local_span() const {
    const auto p = static_cast<std::uint64_t>(parts_);
    return ((blocks_ + p - 1) / p) << shift_;
  }
  int shift() const { return shift_; }

 private:
  std::int64_t first_;
  int parts_;
  int shift_ = 0;
  std::uint64_t blocks_ = 0;
};

}  // namespace petacomm::xchg
