#include "nbx.hpp"

#include <sched.h>

#include "error.hpp"
#include "mpi_support.hpp"

namespace petacomm::xchg {

std::vector<Message> nbx_exchange(MPI_Comm comm, int tag, std::vector<Message> outgoing,
                                  SetupTraffic &traffic, SetupClock *clock) {
  int me = 0;
  check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  std::vector<Message> incoming;
  std::vector<MPI_Request> sends;
  sends.reserve(outgoing.size());
  for (Message &m : outgoing) {
    if (m.rank == me) {
      incoming.push_back(std::move(m));
      continue;
    }
    MPI_Request req;
    check_mpi(MPI_Issend(m.data.data(), to_int_count(m.data.size(), "NBX message"), MPI_INT64_T,
                         m.rank, tag, comm, &req),
              "MPI_Issend");
    sends.push_back(req);
    traffic.messages += 1;
    traffic.bytes += static_cast<std::int64_t>(m.data.size() * sizeof(std::int64_t));
  }
  MPI_Request barrier = MPI_REQUEST_NULL;
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
    int done = 0;
    if (!barrier_active) {
      check_mpi(
          MPI_Testall(static_cast<int>(sends.size()), sends.data(), &done, MPI_STATUSES_IGNORE),
          "MPI_Testall");
      if (done) {
        check_mpi(MPI_Ibarrier(comm, &barrier), "MPI_Ibarrier");
        barrier_active = true;
      }
    } else {
      check_mpi(MPI_Test(&barrier, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) break;
    }
    // Nothing arrived: give the core away before polling again. Free when the rank has a
    // core to itself; on an oversubscribed node it lets the ranks we wait for run.
    sched_yield();
  }
  return incoming;
}

}  // namespace petacomm::xchg
