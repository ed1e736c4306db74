// NBX sparse data exchange (Hoefler, Siebert, Lumsdaine 2010): each rank knows whom it sends
// to but not who sends to it. Synchronous sends (MPI_Issend) complete only once matched, so
// when a rank's sends are all done it enters a non-blocking barrier while it keeps receiving
// (MPI_Iprobe + MPI_Recv); when the barrier completes every message has been received. No O(p)
// arrays.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "mpi_support.hpp"

namespace petacomm::xchg {

struct Message {
  int rank = 0;  // destination (outgoing) or source (incoming)
  std::vector<std::int64_t> data;
};

struct SetupTraffic {
  std::int64_t messages = 0;
  std::int64_t bytes = 0;
};

// Collective over comm. Messages to self are delivered without MPI. Returns the incoming
// messages (in arrival order; at most one per source if each rank sends at most one per
// destination). `tag` must not be used concurrently on comm.
// Its waiting is timed on `clock` (may be nullptr). send_window: at most this many sends in
// flight (0: all at once; see send_window.hpp). barrier_tag: the barrier's messages under
// SimGrid SMPI (see nbx.cpp), another tag than `tag`.
std::vector<Message> nbx_exchange(MPI_Comm comm, int tag, int barrier_tag,
                                  std::vector<Message> outgoing, SetupTraffic &traffic,
                                  SetupClock *clock, int send_window);

}  // namespace petacomm::xchg
