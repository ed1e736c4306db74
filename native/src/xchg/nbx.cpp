#include "nbx.hpp"

#include <sched.h>

#include "error.hpp"
#include "mpi_support.hpp"
#include "send_window.hpp"

namespace petacomm::xchg {
namespace {

// The non-blocking barrier NBX enters once its sends are matched. SimGrid SMPI 3.32's
// MPI_Ibarrier is no barrier: rank 0 posts its releases as it enters, so the others can
// leave before every rank has entered and stop receiving while a rank's messages are still
// to be matched (seen with windowed sends: the simulation hung). There a dissemination
// barrier takes its place: in round k each rank sends to rank + 2^k and waits for rank - 2^k
// (mod p), ceil(log2 p) rounds of empty messages.
class NonblockingBarrier {
 public:
  NonblockingBarrier(MPI_Comm comm, int tag, int me, int p)
      : comm_(comm), tag_(tag), me_(me), p_(p) {}
  void start() {
#ifdef PETACOMM_SMPI
    post_round();
#else
    (void)tag_;
    check_mpi(MPI_Ibarrier(comm_, &requests_[0]), "MPI_Ibarrier");
#endif
  }
  // True once every rank has entered.
  bool test() {
    for (;;) {
      int done = 0;
      check_mpi(MPI_Testall(2, requests_, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (!done) return false;
#ifdef PETACOMM_SMPI
      distance_ *= 2;
      if (distance_ < p_) {
        post_round();
        continue;
      }
#endif
      return true;
    }
  }

 private:
  void post_round() {
    check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, (me_ + distance_) % p_, tag_, comm_, &requests_[0]),
              "MPI_Isend");
    check_mpi(MPI_Irecv(nullptr, 0, MPI_BYTE, ((me_ - distance_) % p_ + p_) % p_, tag_, comm_,
                        &requests_[1]),
              "MPI_Irecv");
  }

  MPI_Comm comm_;
  int tag_, me_, p_;
  int distance_ = 1;
  MPI_Request requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

}  // namespace

std::vector<Message> nbx_exchange(MPI_Comm comm, int tag, int barrier_tag,
                                  std::vector<Message> outgoing, SetupTraffic &traffic,
                                  SetupClock *clock, int send_window) {
  int me = 0, p = 1;
  check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  std::vector<Message> incoming;
  std::size_t kept = 0;  // messages to other ranks, moved to the front
  for (Message &m : outgoing) {
    if (m.rank == me) {
      incoming.push_back(std::move(m));
      continue;
    }
    to_int_count(m.data.size(), "NBX message");
    traffic.messages += 1;
    traffic.bytes += static_cast<std::int64_t>(m.data.size() * sizeof(std::int64_t));
    if (&outgoing[kept] != &m) outgoing[kept] = std::move(m);
    ++kept;
  }
  outgoing.resize(kept);
  std::vector<int> dest(kept);
  for (std::size_t j = 0; j < kept; ++j) dest[j] = outgoing[j].rank;
  const std::vector<std::uint32_t> order = posting_order(dest, me, p, send_window);
  const auto post = [&](std::uint32_t j, MPI_Request *request) {
    const Message &m = outgoing[j];
    check_mpi(MPI_Issend(m.data.data(), static_cast<int>(m.data.size()), MPI_INT64_T, m.rank, tag,
                         comm, request),
              "MPI_Issend");
  };
  SendWindow sends(order, send_window);
  sends.start(post);
  NonblockingBarrier barrier(comm, barrier_tag, me, p);
  bool barrier_active = false;
  MpiWait wait(clock);  // the loop below only waits for and receives other ranks' messages
  for (;;) {
    // MPI_Iprobe + MPI_Recv from the probed source: the communicator is the plan's private
    // duplicate, used by one thread during creation, so nothing else can receive the probed
    // message in between (and, unlike MPI_Improbe, SimGrid SMPI implements it).
    int found = 0;
    MPI_Status status;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &found, &status), "MPI_Iprobe");
    if (found) {
      int count = 0;
      check_mpi(MPI_Get_count(&status, MPI_INT64_T, &count), "MPI_Get_count");
      Message m;
      m.rank = status.MPI_SOURCE;
      m.data.resize(static_cast<std::size_t>(count));
      check_mpi(MPI_Recv(m.data.data(), count, MPI_INT64_T, status.MPI_SOURCE, tag, comm,
                         MPI_STATUS_IGNORE),
                "MPI_Recv");
      incoming.push_back(std::move(m));
      continue;
    }
    if (!barrier_active) {
      if (sends.progress(post, false)) {
        barrier.start();
        barrier_active = true;
      }
    } else if (barrier.test()) {
      break;
    }
    // Nothing arrived: give the core away before polling again. Free when the rank has a
    // core to itself; on an oversubscribed node it lets the ranks we wait for run.
    sched_yield();
  }
  return incoming;
}

}  // namespace petacomm::xchg
