#include "domain.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "agreement.hpp"
#include "error.hpp"

namespace petacomm::node {

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

namespace {

void free_comm(MPI_Comm &c) {
  if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  c = MPI_COMM_NULL;
}

// CPUs this process may run on: more ranks than that on one machine means waiting ranks
// must give up the core at once.
int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    // A rank bound to one core still shares the machine with the others: count the machine.
    return static_cast<int>(std::max<long>(online, CPU_COUNT(&set)));
  }
  return static_cast<int>(std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN)));
}

// Bytes of memory of this machine (0 when unknown).
double machine_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace

Domain::Domain(MPI_Comm comm, const petacomm_node_options &o) {
  try {
    split(comm, o.node_size);
    std::vector<RankRun> runs;
    build_rank_map(runs);
    allocate_window(o, runs);
  } catch (...) {
    release();
    throw;
  }
}

Domain::~Domain() { release(); }

void Domain::split(MPI_Comm comm, int node_size) {
  PETACOMM_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  PETACOMM_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  PETACOMM_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  MPI_Comm shared = MPI_COMM_NULL;
  PETACOMM_CHECK_MPI(
      MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &shared));
  int shared_rank = 0, shared_size = 1;
  MPI_Comm_rank(shared, &shared_rank);
  MPI_Comm_size(shared, &shared_size);
  oversubscribed_ = shared_size > usable_cpus();
  node_size_setting_ = node_size;
  const int k = node_size > 0 ? node_size : shared_size;
  // Virtual node l / k of this domain; keys keep rank order inside it.
  const int rc = MPI_Comm_split(shared, shared_rank / k, shared_rank, &node_);
  int domain_first = shared_rank == 0 ? 1 : 0;
  MPI_Comm_free(&shared);
  PETACOMM_CHECK_MPI(rc);
  PETACOMM_CHECK_MPI(MPI_Comm_rank(node_, &local_rank_));
  PETACOMM_CHECK_MPI(MPI_Comm_size(node_, &local_size_));
  PETACOMM_CHECK_MPI(MPI_Comm_split(comm_, local_rank_ == 0 ? 0 : MPI_UNDEFINED, rank_, &leaders_));
  int ids[2] = {0, 0};
  if (leaders_ != MPI_COMM_NULL) {
    PETACOMM_CHECK_MPI(MPI_Comm_rank(leaders_, &ids[0]));
    PETACOMM_CHECK_MPI(MPI_Comm_size(leaders_, &ids[1]));
    PETACOMM_CHECK_MPI(MPI_Comm_dup(leaders_, &gateway_));
  }
  PETACOMM_CHECK_MPI(MPI_Bcast(ids, 2, MPI_INT, 0, node_));
  node_index_ = ids[0];
  nodes_ = ids[1];
  PETACOMM_CHECK_MPI(MPI_Allreduce(&domain_first, &domains_, 1, MPI_INT, MPI_SUM, comm_));
  local_ranks_.resize(static_cast<std::size_t>(local_size_));
  PETACOMM_CHECK_MPI(MPI_Allgather(&rank_, 1, MPI_INT, local_ranks_.data(), 1, MPI_INT, node_));
}

// Runs of consecutive ranks per node, gathered over the leaders: O(nodes) entries for the
// usual block placement, O(ranks) only when ranks alternate between nodes.
void Domain::build_rank_map(std::vector<RankRun> &runs) {
  std::int64_t count = 0;
  if (leaders_ != MPI_COMM_NULL) {
    std::vector<RankRun> mine;
    for (int l = 0; l < local_size_; ++l) {
      const int r = local_ranks_[static_cast<std::size_t>(l)];
      if (!mine.empty() && mine.back().first + mine.back().count == r) {
        ++mine.back().count;
      } else {
        mine.push_back({r, 1, node_index_, l});
      }
    }
    const int ints = static_cast<int>(mine.size()) * 4;
    std::vector<int> counts(static_cast<std::size_t>(nodes_)), displs(counts.size());
    PETACOMM_CHECK_MPI(MPI_Allgather(&ints, 1, MPI_INT, counts.data(), 1, MPI_INT, leaders_));
    std::int64_t total = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      displs[i] = static_cast<int>(total);
      total += counts[i];
    }
    PETACOMM_CHECK_INTERNAL(total < (std::int64_t{1} << 31), "rank map of ", total, " ints");
    runs.resize(static_cast<std::size_t>(total / 4));
    PETACOMM_CHECK_MPI(MPI_Allgatherv(mine.data(), ints, MPI_INT, runs.data(), counts.data(),
                                      displs.data(), MPI_INT, leaders_));
    std::sort(runs.begin(), runs.end(),
              [](const RankRun &a, const RankRun &b) { return a.first < b.first; });
    count = static_cast<std::int64_t>(runs.size());
  }
  PETACOMM_CHECK_MPI(MPI_Bcast(&count, 1, MPI_INT64_T, 0, node_));
  nruns_ = count;
}

void Domain::allocate_window(const petacomm_node_options &o, const std::vector<RankRun> &runs) {
  geometry_.local_size = local_size_;
  geometry_.slots = o.slots;
  geometry_.slot_bytes = o.slot_bytes;
  geometry_.descriptors = o.descriptors;
  geometry_.coll_bytes = o.coll_bytes;
  geometry_.heap_bytes = o.heap_bytes;
  geometry_.runs = nruns_;
  const std::int64_t bytes = segment_bytes();
  // A window the machine cannot hold fails inside MPI_Win_allocate_shared, whose error
  // handler aborts the job (or which fails on one rank and hangs the others): refuse it
  // first, on every rank of the layer together.
  const double node_bytes =
      static_cast<double>(geometry_.leader_bytes()) +
      static_cast<double>(local_size_ - 1) * static_cast<double>(geometry_.common_bytes());
  const double memory = machine_memory_bytes();
  agree_or_fail(
      comm_,
      memory > 0 && node_bytes > memory
          ? concat("opts: the node's window would take ",
                   static_cast<std::int64_t>(std::min(node_bytes, 9e18)), " bytes for ",
                   local_size_, " ranks (slots x slot_bytes per pair of its ranks, ",
                   "descriptors, coll_bytes and heap_bytes; docs/node-layer.md), more ",
                   "than this machine's ", static_cast<std::int64_t>(memory), " bytes of memory")
          : std::string(),
      0, "", "no layer was created");
  MPI_Info info;
  PETACOMM_CHECK_MPI(MPI_Info_create(&info));
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  char *mine = nullptr;
  const int rc =
      MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, node_, &mine, &win_);
  MPI_Info_free(&info);
  PETACOMM_CHECK_MPI(rc);
  segments_.resize(static_cast<std::size_t>(local_size_));
  for (int l = 0; l < local_size_; ++l) {
    MPI_Aint size = 0;
    int disp = 0;
    char *base = nullptr;
    PETACOMM_CHECK_MPI(MPI_Win_shared_query(win_, l, &size, &disp, &base));
    segments_[static_cast<std::size_t>(l)] = base;
  }
  // This rank initialises its own segment's control words (not the slot payloads or the
  // heap: untouched pages cost nothing until used).
  const Geometry &g = geometry_;
  new (mine) SegmentHeader{kSegmentMagic, bytes};
  for (int s = 0; s < local_size_; ++s) {
    new (mine + g.channel_offset(s)) ChannelControl{};
    for (int i = 0; i < g.slots; ++i)
      new (mine + g.channel_offset(s) + kCacheLine + i * g.slot_bytes) SlotHeader{};
  }
  for (int d = 0; d < local_size_; ++d) {
    new (mine + g.ring_offset(d)) RingProducer{};
    new (mine + g.ring_offset(d) + kCacheLine) RingConsumer{};
  }
  new (mine + g.coll_offset()) CollControl{};
  if (local_rank_ == 0) {
    std::copy(runs.begin(), runs.end(), reinterpret_cast<RankRun *>(mine + g.runs_offset()));
  }
  // One passive-target epoch for the layer's lifetime; C++ atomics order the accesses.
  // The sync + barrier + sync makes every rank's initialisation visible before first use.
  PETACOMM_CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
  locked_ = true;
  PETACOMM_CHECK_MPI(MPI_Win_sync(win_));
  PETACOMM_CHECK_MPI(MPI_Barrier(node_));
  PETACOMM_CHECK_MPI(MPI_Win_sync(win_));
  runs_ = reinterpret_cast<const RankRun *>(segment(0) + g.runs_offset());
  heap_base_ = segment(0) + g.heap_offset();
  for (int l = 0; l < local_size_; ++l) {
    PETACOMM_CHECK_INTERNAL(reinterpret_cast<SegmentHeader *>(segment(l))->magic == kSegmentMagic,
                            "segment of local rank ", l, " not initialised");
  }
}

std::int64_t Domain::segment_bytes() const {
  return local_rank_ == 0 ? geometry_.leader_bytes() : geometry_.common_bytes();
}

void Domain::release() {
  if (comm_ == MPI_COMM_NULL && win_ == MPI_WIN_NULL) return;
  if (mpi_finalized()) {
    comm_ = node_ = leaders_ = gateway_ = MPI_COMM_NULL;
    win_ = MPI_WIN_NULL;
    return;
  }
  if (win_ != MPI_WIN_NULL) {
    if (locked_) MPI_Win_unlock_all(win_);
    locked_ = false;
    MPI_Win_free(&win_);
  }
  free_comm(gateway_);
  free_comm(leaders_);
  free_comm(node_);
  free_comm(comm_);
}

int Domain::local_of(int rank) const {
  const auto it = std::lower_bound(local_ranks_.begin(), local_ranks_.end(), rank);
  if (it == local_ranks_.end() || *it != rank) return -1;
  return static_cast<int>(it - local_ranks_.begin());
}

Location Domain::locate(int rank) const {
  PETACOMM_CHECK_INTERNAL(rank >= 0 && rank < size_, "locate(", rank, ")");
  const RankRun *end = runs_ + nruns_;
  const RankRun *it =
      std::upper_bound(runs_, end, rank, [](int r, const RankRun &run) { return r < run.first; });
  PETACOMM_CHECK_INTERNAL(it != runs_, "rank ", rank, " before the first run");
  --it;
  PETACOMM_CHECK_INTERNAL(rank < it->first + it->count, "rank ", rank, " in no run");
  return {it->node, it->first_local + (rank - it->first)};
}

int Domain::leader_of(int node) const {
  PETACOMM_CHECK_INTERNAL(node >= 0 && node < nodes_, "leader_of(", node, ")");
  // The leader is local rank 0: the run starting a node's first local rank.
  for (std::int64_t i = 0; i < nruns_; ++i)
    if (runs_[i].node == node && runs_[i].first_local == 0) return runs_[i].first;
  fail_internal("node ", node, " has no leader in the rank map");
}

std::int64_t Domain::heap_offset_of(const void *p, std::int64_t bytes) const {
  const char *c = static_cast<const char *>(p);
  if (heap_base_ == nullptr || c < heap_base_) return -1;
  const std::int64_t off = c - heap_base_;
  if (off > geometry_.heap_bytes || bytes > geometry_.heap_bytes - off) return -1;
  return off;
}

}  // namespace petacomm::node
