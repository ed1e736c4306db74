// Constructors of the five strategies (each in its own file). All are collective over comm.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "exchange.hpp"
#include "key_index.hpp"
#include "sharing.hpp"
#include "strategy.hpp"

namespace petacomm::xchg {

// dense-allreduce: chunked reduction over [min key, max key], untouched chunks skipped.
std::unique_ptr<Strategy> make_dense_allreduce(MPI_Comm comm, const KeyIndex &index,
                                               std::int64_t chunk_keys, bool deterministic);

// All-pairs exchange of shared keys: every holder sends its value of a key to every other
// holder and folds what it receives in rank order. name is "allgather" (discovered by
// allgather, exchanged by MPI_Alltoallv) or "directory".
std::unique_ptr<Strategy> make_pairwise(const char *name, MPI_Comm comm, const Sharing &sharing,
                                        Transport transport);

// owner: each shared key is reduced at one owner (chosen among its holders by hash) and the
// result sent back: 2 (d - 1) values per key instead of d (d - 1).
std::unique_ptr<Strategy> make_owner(MPI_Comm comm, const Sharing &sharing, Transport transport);

// hub-split: keys on more than threshold ranks (numbered 0..hubs-1 in sharing.hub_index)
// reduced by one dense reduction over just those keys, the rest by all-pairs exchange.
std::unique_ptr<Strategy> make_hub_split(MPI_Comm comm, const Sharing &sharing, int threshold,
                                         std::int64_t hubs, std::int64_t chunk_keys,
                                         bool deterministic, Transport transport);

}  // namespace petacomm::xchg
