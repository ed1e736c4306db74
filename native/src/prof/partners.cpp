// Partners as ranks of MPI_COMM_WORLD: a cache per communicator and window, filled when the
// object is created (or first used) and emptied when it is freed, so the cost of a call does
// not depend on its communicator. Creations and frees are followed even while recording is
// paused or the creating call is not recorded (kTrack mode): a handle value reused by a new
// communicator never finds the old communicator's partners.
#include <cstdlib>
#include <cstring>

#include "handle_table.hpp"
#include "state.hpp"

namespace petacomm::prof {

namespace {

struct HandleInfo {
  uintptr_t key;
  int size;       // local size
  int rank;       // own rank
  int peers;      // ranks that partner arguments refer to (remote size for intercomms)
  int outdeg;     // neighbourhood out-degree, -1 when not a topology communicator
  bool identity;  // partner rank == world rank
  int *world;     // partner rank -> world rank (null when identity)
  MPI_Comm comm;  // for messages: the communicator
};

constexpr uint64_t kCachedObjects = 1536;
HandleTable<HandleInfo> g_comms, g_wins, g_msgs;

void forget(HandleTable<HandleInfo> &table, HandleInfo *info) {
  std::free(info->world);
  table.erase(info);
}

// A fresh slot for `key` (any older one first forgotten); null when the cache is full.
HandleInfo *replace(HandleTable<HandleInfo> &table, uintptr_t key) {
  if (HandleInfo *old = table.find(key)) forget(table, old);
  return table.insert(key);
}

// Fills `info` from a group of partner ranks; world translation once.
void describe_group(HandleInfo *info, MPI_Group group, bool maybe_identity) {
  int n = 0;
  PMPI_Group_size(group, &n);
  info->peers = n;
  if (maybe_identity && n == g.world_size) {
    int result = MPI_UNEQUAL;
    PMPI_Group_compare(group, g.world_group, &result);
    if (result == MPI_IDENT) {
      info->identity = true;
      return;
    }
  }
  int *seq = static_cast<int *>(std::malloc(sizeof(int) * (n > 0 ? n : 1)));
  info->world = static_cast<int *>(std::malloc(sizeof(int) * (n > 0 ? n : 1)));
  if (!seq || !info->world) {
    std::free(seq);
    std::free(info->world);
    info->world = nullptr;
    info->peers = 0;
    return;
  }
  for (int i = 0; i < n; ++i) seq[i] = i;
  PMPI_Group_translate_ranks(group, n, seq, g.world_group, info->world);
  for (int i = 0; i < n; ++i)
    if (info->world[i] == MPI_UNDEFINED) info->world[i] = kPeerOutside;
  std::free(seq);
}

void describe_comm(HandleInfo *info, MPI_Comm comm) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  PMPI_Comm_size(comm, &info->size);
  PMPI_Comm_rank(comm, &info->rank);
  info->outdeg = -1;
  info->comm = comm;
  MPI_Group group;
  if (inter) {
    PMPI_Comm_remote_group(comm, &group);
  } else {
    PMPI_Comm_group(comm, &group);
    int topo = MPI_UNDEFINED;
    PMPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
      int ndims = 0;
      PMPI_Cartdim_get(comm, &ndims);
      info->outdeg = 2 * ndims;
    } else if (topo == MPI_GRAPH) {
      int nn = 0;
      PMPI_Graph_neighbors_count(comm, info->rank, &nn);
      info->outdeg = nn;
    } else if (topo == MPI_DIST_GRAPH) {
      int indeg = 0, outd = 0, weighted = 0;
      PMPI_Dist_graph_neighbors_count(comm, &indeg, &outd, &weighted);
      info->outdeg = outd;
    }
  }
  describe_group(info, group, !inter);
  PMPI_Group_free(&group);
}

// A stack copy for the rare case the cache is full (no caching possible).
thread_local HandleInfo t_uncached;

const HandleInfo *comm_info(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return nullptr;
  const uintptr_t key = handle_key(comm);
  if (HandleInfo *info = g_comms.find(key)) return info;
  // Not seen at creation (made before MPI_Init returned, by MPI_Comm_idup, or the cache
  // was full): describe it now, once.
  if (HandleInfo *info = g_comms.insert(key)) {
    describe_comm(info, comm);
    return info;
  }
  std::free(t_uncached.world);
  std::memset(&t_uncached, 0, sizeof(t_uncached));
  describe_comm(&t_uncached, comm);
  return &t_uncached;
}

inline int translate(const HandleInfo *info, int rank) {
  if (!info) return kPeerOutside;
  if (info->identity) return rank;
  if (!info->world || rank >= info->peers) return kPeerOutside;
  return info->world[rank];
}

inline int special_rank(int rank) {
  if (rank == MPI_PROC_NULL) return kPeerProcNull;
  if (rank == MPI_ANY_SOURCE) return kPeerAny;
  return kPeerNone;
}

}  // namespace

bool caches_init() {
  return g_comms.init(kCachedObjects) && g_wins.init(kCachedObjects) && g_msgs.init(kCachedObjects);
}

void comm_created(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return;
  Lock lock;
  if (HandleInfo *info = replace(g_comms, handle_key(comm))) describe_comm(info, comm);
}

void comm_freeing(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return;
  Lock lock;
  if (HandleInfo *info = g_comms.find(handle_key(comm))) forget(g_comms, info);
}

void win_created(MPI_Win win, MPI_Comm) {
  if (win == MPI_WIN_NULL) return;
  Lock lock;
  HandleInfo *info = replace(g_wins, handle_key(win));
  MPI_Group group;
  if (!info || PMPI_Win_get_group(win, &group) != MPI_SUCCESS) return;
  describe_group(info, group, true);
  PMPI_Group_free(&group);
}

void win_freeing(MPI_Win win) {
  if (win == MPI_WIN_NULL) return;
  Lock lock;
  if (HandleInfo *info = g_wins.find(handle_key(win))) forget(g_wins, info);
}

void message_matched(MPI_Message message, MPI_Comm comm) {
  if (message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC) return;
  Lock lock;
  if (HandleInfo *info = replace(g_msgs, handle_key(message))) info->comm = comm;
}

MPI_Comm message_comm(MPI_Message message) {
  if (message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC) return MPI_COMM_NULL;
  Lock lock;
  HandleInfo *info = g_msgs.find(handle_key(message));
  if (!info) return MPI_COMM_NULL;
  const MPI_Comm comm = info->comm;
  forget(g_msgs, info);
  return comm;
}

int peer_comm(MPI_Comm comm, int rank) {
  if (rank < 0) return special_rank(rank);
  if (comm == MPI_COMM_WORLD) return rank;
  Lock lock;
  return translate(comm_info(comm), rank);
}

int peer_root(MPI_Comm comm, int root) {
  if (root < 0) return root == MPI_PROC_NULL ? kPeerProcNull : kPeerNone;  // MPI_ROOT
  return peer_comm(comm, root);
}

int peer_win(MPI_Win win, int rank) {
  if (rank < 0) return special_rank(rank);
  Lock lock;
  const uintptr_t key = handle_key(win);
  const HandleInfo *info = g_wins.find(key);
  if (!info) {
    // Window created before the profiler started: describe it now.
    HandleInfo *fresh = g_wins.insert(key);
    MPI_Group group;
    if (!fresh || PMPI_Win_get_group(win, &group) != MPI_SUCCESS) return kPeerOutside;
    describe_group(fresh, group, true);
    PMPI_Group_free(&group);
    info = fresh;
  }
  return translate(info, rank);
}

int peer_status(MPI_Comm comm, const MPI_Status *status, int source) {
  if (status && status != MPI_STATUS_IGNORE) {
    if (status->MPI_SOURCE == MPI_PROC_NULL) return kPeerProcNull;
    if (status->MPI_SOURCE >= 0) {
      if (comm == MPI_COMM_NULL) return kPeerAny;
      return peer_comm(comm, status->MPI_SOURCE);
    }
  }
  if (comm == MPI_COMM_NULL) return kPeerAny;
  return peer_comm(comm, source);
}

int npeers(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return g.world_size;
  Lock lock;
  const HandleInfo *info = comm_info(comm);
  return info ? info->peers : 0;
}

int commsize(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return g.world_size;
  Lock lock;
  const HandleInfo *info = comm_info(comm);
  return info ? info->size : 0;
}

int myrank(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return g.world_rank;
  Lock lock;
  const HandleInfo *info = comm_info(comm);
  return info ? info->rank : -1;
}

int outdeg(MPI_Comm comm) {
  Lock lock;
  const HandleInfo *info = comm_info(comm);
  return info && info->outdeg > 0 ? info->outdeg : 0;
}

}  // namespace petacomm::prof
