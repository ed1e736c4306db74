// Dense reduction over an index space in chunks: each chunk is filled with the operator's
// identity, this rank's values are placed at their positions, the chunk is reduced over all
// ranks and the rank's positions are copied out. Untouched chunks are skipped. Built-in
// operators use MPI_Iallreduce (two chunks in flight); deterministic mode and user operators
// use a reduce-scatter by MPI_Alltoall with a local fold in rank order followed by
// MPI_Allgather (the same volume as Rabenseifner's allreduce, fixed summation order).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "strategy.hpp"

namespace petacomm::xchg {

class DenseReducer {
 public:
  // positions: ascending distinct positions in [0, space) of this rank's entries; local:
  // the distinct-key index of each; chunks: ascending ids of the chunks any rank touches.
  DenseReducer(MPI_Comm comm, std::vector<std::uint64_t> positions, std::vector<std::int32_t> local,
               std::vector<std::uint64_t> chunks, std::uint64_t chunk_keys, std::uint64_t space,
               bool deterministic);

  // In place: begin reads data, end writes this rank's keys (a chunk's keys are written
  // after they were packed, so no key is read after it was written).
  void begin(const ExecContext &ctx, const void *data);
  void end(const ExecContext &ctx, void *data);

  Traffic traffic() const;
  std::size_t schedule_bytes() const;
  std::int64_t buffer_entries() const;
  std::int64_t chunks() const { return static_cast<std::int64_t>(chunks_.size()); }
  std::int64_t my_chunks() const;

 private:
  std::uint64_t chunk_length(std::size_t c) const;
  bool ordered(const ExecContext &ctx) const;
  void pack(const ExecContext &ctx, std::size_t c, const void *own, char *buf) const;
  void unpack(const ExecContext &ctx, std::size_t c, const char *buf, void *result) const;
  void start_allreduce(const ExecContext &ctx, std::size_t c, const void *own);
  void start_ordered(const ExecContext &ctx, std::size_t c, const void *own);
  void finish_ordered(const ExecContext &ctx, std::size_t c, void *result);

  MPI_Comm comm_;
  int size_ = 1;
  std::vector<std::uint64_t> positions_;
  std::vector<std::int32_t> local_;
  std::vector<std::uint64_t> chunks_;
  std::vector<std::int64_t> chunk_first_;  // first entry of positions_ in each chunk
  std::uint64_t chunk_keys_;
  std::uint64_t space_;
  bool deterministic_;
  std::vector<char> buf_[2], recv_, acc_;
  MPI_Request req_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

// Collective: the ascending ids of chunks (of chunk_keys positions) touched by any rank.
// A bitmap reduction when the number of chunks is small, else an allgather of chunk ids.
std::vector<std::uint64_t> touched_chunks(MPI_Comm comm,
                                          const std::vector<std::uint64_t> &positions,
                                          std::uint64_t chunk_keys, std::uint64_t space);

}  // namespace petacomm::xchg
