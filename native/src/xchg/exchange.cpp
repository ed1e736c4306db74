#include "exchange.hpp"

#include <algorithm>
#include <cstring>

#include "error.hpp"

namespace petacomm::xchg {

Transport parse_transport(const char *name) {
  if (name == nullptr || *name == '\0' || std::strcmp(name, "p2p") == 0) return Transport::kP2P;
  if (std::strcmp(name, "neighbor") == 0) return Transport::kNeighbor;
  if (std::strcmp(name, "alltoallv") == 0) return Transport::kAlltoallv;
  fail_arg("transport: unknown transport '", name, "' (expected p2p, neighbor or alltoallv)");
}

const char *transport_name(Transport t) {
  switch (t) {
    case Transport::kP2P:
      return "p2p";
    case Transport::kNeighbor:
      return "neighbor";
    case Transport::kAlltoallv:
      return "alltoallv";
  }
  return "unknown";
}

Exchange::Exchange(MPI_Comm comm, PeerList send, PeerList recv, Transport transport, int tag,
                   SetupClock *clock, int send_window)
    : comm_(comm),
      send_(std::move(send)),
      recv_(std::move(recv)),
      transport_(transport),
      tag_(tag) {
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  to_int_count(static_cast<std::size_t>(send_.entries()), "values sent per exchange");
  to_int_count(static_cast<std::size_t>(recv_.entries()), "values received per exchange");
  if (transport_ == Transport::kP2P && window_binds(send_window, send_.peers())) {
    int me = 0;
    check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
    send_window_ = send_window;
    send_order_ = posting_order(send_.ranks, me, size_, send_window);
  }
  if (transport_ == Transport::kNeighbor) {
    MpiWait wait(clock);
    check_mpi(MPI_Dist_graph_create_adjacent(comm_, static_cast<int>(recv_.peers()),
                                             recv_.ranks.data(), MPI_UNWEIGHTED,
                                             static_cast<int>(send_.peers()), send_.ranks.data(),
                                             MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph_),
              "MPI_Dist_graph_create_adjacent");
    for (std::size_t j = 0; j < send_.peers(); ++j) {
      scounts_.push_back(static_cast<int>(send_.begin[j + 1] - send_.begin[j]));
      sdispls_.push_back(static_cast<int>(send_.begin[j]));
    }
    for (std::size_t j = 0; j < recv_.peers(); ++j) {
      rcounts_.push_back(static_cast<int>(recv_.begin[j + 1] - recv_.begin[j]));
      rdispls_.push_back(static_cast<int>(recv_.begin[j]));
    }
  } else if (transport_ == Transport::kAlltoallv) {
    scounts_.assign(size_, 0);
    sdispls_.assign(size_, 0);
    rcounts_.assign(size_, 0);
    rdispls_.assign(size_, 0);
    for (std::size_t j = 0; j < send_.peers(); ++j) {
      scounts_[send_.ranks[j]] = static_cast<int>(send_.begin[j + 1] - send_.begin[j]);
      sdispls_[send_.ranks[j]] = static_cast<int>(send_.begin[j]);
    }
    for (std::size_t j = 0; j < recv_.peers(); ++j) {
      rcounts_[recv_.ranks[j]] = static_cast<int>(recv_.begin[j + 1] - recv_.begin[j]);
      rdispls_[recv_.ranks[j]] = static_cast<int>(recv_.begin[j]);
    }
  }
}

Exchange::~Exchange() {
  if (mpi_finalized()) return;
  if (window_) {  // abandoned mid-round: post and complete the rest, as the partners wait
    try {
      window_->finish([this](std::uint32_t j, MPI_Request *r) { post_send(j, r); });
    } catch (...) {
    }
  }
  if (started_ && !persistent_.empty())
    MPI_Waitall(static_cast<int>(persistent_.size()), persistent_.data(), MPI_STATUSES_IGNORE);
  if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  free_persistent();
  if (graph_ != MPI_COMM_NULL) MPI_Comm_free(&graph_);
}

void Exchange::free_persistent() {
  for (MPI_Request &r : persistent_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  persistent_.clear();
}

void Exchange::prepare(const ElementType &type) {
  if (elem_bytes_ == type.bytes() && prepared_type_ == type.get()) return;
  free_persistent();
  elem_bytes_ = type.bytes();
  prepared_type_ = type.get();
  send_buf_.resize(static_cast<std::size_t>(send_.entries()) * elem_bytes_);
  recv_buf_.resize(static_cast<std::size_t>(recv_.entries()) * elem_bytes_);
  if (transport_ != Transport::kP2P) return;
  // With a window the sends are posted one by one as earlier ones complete (post_send).
  persistent_.resize(recv_.peers() + (send_window_ > 0 ? 0 : send_.peers()), MPI_REQUEST_NULL);
#ifdef PETACOMM_SMPI
  // SimGrid SMPI 3.32's first MPI_Start of a persistent send of a derived datatype sends the
  // buffer as it was at MPI_Send_init (zeros here: every first execution of a plan reduced
  // with zeros); start() posts plain MPI_Irecv/MPI_Isend there instead.
  return;
#endif
  for (std::size_t j = 0; j < recv_.peers(); ++j)
    check_mpi(MPI_Recv_init(recv_buf_.data() + recv_.begin[j] * elem_bytes_,
                            static_cast<int>(recv_.begin[j + 1] - recv_.begin[j]), type.get(),
                            recv_.ranks[j], tag_, comm_, &persistent_[j]),
              "MPI_Recv_init");
  if (send_window_ > 0) return;
  for (std::size_t j = 0; j < send_.peers(); ++j)
    check_mpi(MPI_Send_init(send_buf_.data() + send_.begin[j] * elem_bytes_,
                            static_cast<int>(send_.begin[j + 1] - send_.begin[j]), type.get(),
                            send_.ranks[j], tag_, comm_, &persistent_[recv_.peers() + j]),
              "MPI_Send_init");
}

// A windowed send: synchronous, so that it completes (and frees its slot) once the message
// is matched, not as soon as an eager message is buffered.
void Exchange::post_send(std::uint32_t j, MPI_Request *request) {
  check_mpi(MPI_Issend(send_buf_.data() + send_.begin[j] * elem_bytes_,
                       static_cast<int>(send_.begin[j + 1] - send_.begin[j]), prepared_type_,
                       send_.ranks[j], tag_, comm_, request),
            "MPI_Issend");
}

#ifdef PETACOMM_SMPI
void Exchange::post_nonpersistent() {
  for (std::size_t j = 0; j < recv_.peers(); ++j)
    check_mpi(MPI_Irecv(recv_buf_.data() + recv_.begin[j] * elem_bytes_,
                        static_cast<int>(recv_.begin[j + 1] - recv_.begin[j]), prepared_type_,
                        recv_.ranks[j], tag_, comm_, &persistent_[j]),
              "MPI_Irecv");
  if (send_window_ > 0) return;
  for (std::size_t j = 0; j < send_.peers(); ++j)
    check_mpi(MPI_Isend(send_buf_.data() + send_.begin[j] * elem_bytes_,
                        static_cast<int>(send_.begin[j + 1] - send_.begin[j]), prepared_type_,
                        send_.ranks[j], tag_, comm_, &persistent_[recv_.peers() + j]),
              "MPI_Isend");
}
#endif

void Exchange::start(const void *src, const ElementType &type) {
  PETACOMM_CHECK_INTERNAL(!started_, "an exchange started twice");
  prepare(type);
  if (src != nullptr) {
    const char *in = static_cast<const char *>(src);
    const std::size_t eb = elem_bytes_;
    char *out = send_buf_.data();
    const std::size_t total = send_.index.size();
    if (eb == 8) {
      for (std::size_t j = 0; j < total; ++j)
        std::memcpy(out + j * 8, in + static_cast<std::size_t>(send_.index[j]) * 8, 8);
    } else if (eb == 24) {  // three float64 (I, Q, U): the map-making element
      for (std::size_t j = 0; j < total; ++j)
        std::memcpy(out + j * 24, in + static_cast<std::size_t>(send_.index[j]) * 24, 24);
    } else {
      for (std::size_t j = 0; j < total; ++j)
        std::memcpy(out + j * eb, in + static_cast<std::size_t>(send_.index[j]) * eb, eb);
    }
  }
  switch (transport_) {
    case Transport::kP2P:
#ifdef PETACOMM_SMPI
      post_nonpersistent();
#else
      if (!persistent_.empty())
        check_mpi(MPI_Startall(static_cast<int>(persistent_.size()), persistent_.data()),
                  "MPI_Startall");
#endif
      if (send_window_ > 0) {
        window_ = std::make_unique<SendWindow>(send_order_, send_window_);
        window_->start([this](std::uint32_t j, MPI_Request *r) { post_send(j, r); });
      }
      break;
    case Transport::kNeighbor:
      check_mpi(MPI_Ineighbor_alltoallv(send_buf_.data(), scounts_.data(), sdispls_.data(),
                                        type.get(), recv_buf_.data(), rcounts_.data(),
                                        rdispls_.data(), type.get(), graph_, &request_),
                "MPI_Ineighbor_alltoallv");
      break;
    case Transport::kAlltoallv:
      check_mpi(MPI_Ialltoallv(send_buf_.data(), scounts_.data(), sdispls_.data(), type.get(),
                               recv_buf_.data(), rcounts_.data(), rdispls_.data(), type.get(),
                               comm_, &request_),
                "MPI_Ialltoallv");
      break;
  }
  started_ = true;
}

void Exchange::wait() {
  PETACOMM_CHECK_INTERNAL(started_, "waiting for an exchange that was not started");
  started_ = false;
  if (transport_ == Transport::kP2P) {
    if (window_) {
      window_->finish([this](std::uint32_t j, MPI_Request *r) { post_send(j, r); });
      window_.reset();
    }
    if (!persistent_.empty())
      check_mpi(MPI_Waitall(static_cast<int>(persistent_.size()), persistent_.data(),
                            MPI_STATUSES_IGNORE),
                "MPI_Waitall");
    return;
  }
  check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
}

const char *Exchange::received(std::size_t peer) const {
  return recv_buf_.data() + static_cast<std::size_t>(recv_.begin[peer]) * elem_bytes_;
}

std::int64_t Exchange::messages() const { return static_cast<std::int64_t>(send_.peers()); }

std::size_t Exchange::schedule_bytes() const {
  return send_.memory_bytes() + recv_.memory_bytes() +
         persistent_.capacity() * sizeof(MPI_Request) +
         (scounts_.capacity() + sdispls_.capacity() + rcounts_.capacity() + rdispls_.capacity()) *
             sizeof(int);
}

RankOrderFold::RankOrderFold(const PeerList &recv, int me) {
  // Distinct received indices, ascending, and each entry's position among them: one pass
  // over the index domain (the rank's keys), no sort and no search per entry.
  std::int32_t domain = 0;
  for (std::int32_t i : recv.index) domain = std::max(domain, i + 1);
  std::vector<std::int32_t> where(static_cast<std::size_t>(domain), -1);
  for (std::int32_t i : recv.index) where[static_cast<std::size_t>(i)] = 0;
  for (std::int32_t i = 0; i < domain; ++i)
    if (where[static_cast<std::size_t>(i)] == 0) {
      where[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(keys_.size());
      keys_.push_back(i);
    }
  keys_.shrink_to_fit();
  slot_.resize(recv.index.size());
  for (std::size_t e = 0; e < recv.index.size(); ++e)
    slot_[e] = where[static_cast<std::size_t>(recv.index[e])];
  while (below_ < recv.peers() && recv.ranks[below_] < me) ++below_;
}

void RankOrderFold::run(const ElementOp &op, const Exchange &exchange, void *data) {
  const PeerList &recv = exchange.recvs();
  const std::size_t eb = op.elem_bytes();
  acc_.resize(keys_.size() * eb);
  const auto fold_peer = [&](std::size_t j) {
    op.fold_indexed(acc_.data(), slot_.data() + recv.begin[j],
                    static_cast<std::size_t>(recv.begin[j + 1] - recv.begin[j]),
                    exchange.received(j));
  };
  op.fill_identity(acc_.data(), keys_.size());
  for (std::size_t j = 0; j < below_; ++j) fold_peer(j);
  op.fold_gathered(acc_.data(), keys_.data(), keys_.size(), data);
  for (std::size_t j = below_; j < recv.peers(); ++j) fold_peer(j);
  char *out = static_cast<char *>(data);
  for (std::size_t i = 0; i < keys_.size(); ++i)
    std::memcpy(out + static_cast<std::size_t>(keys_[i]) * eb, acc_.data() + i * eb, eb);
}

std::size_t RankOrderFold::memory_bytes() const {
  return (keys_.capacity() + slot_.capacity()) * sizeof(std::int32_t) + acc_.capacity();
}

void copy_received(const Exchange &exchange, std::size_t elem_bytes, void *data) {
  const PeerList &recv = exchange.recvs();
  char *out = static_cast<char *>(data);
  for (std::size_t j = 0; j < recv.peers(); ++j) {
    const char *in = exchange.received(j);
    for (std::int64_t e = recv.begin[j]; e < recv.begin[j + 1]; ++e)
      std::memcpy(out + static_cast<std::size_t>(recv.index[e]) * elem_bytes,
                  in + static_cast<std::size_t>(e - recv.begin[j]) * elem_bytes, elem_bytes);
  }
}

}  // namespace petacomm::xchg
