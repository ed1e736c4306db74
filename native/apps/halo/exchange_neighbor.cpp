// Neighbourhood collectives: one MPI_Neighbor_alltoallv per exchange on a communicator that
// carries the neighbourhood, either a Cartesian one (MPI_Cart_create; star stencils only,
// as MPI's Cartesian neighbours are the 2d face neighbours) or a distributed graph
// (MPI_Dist_graph_create_adjacent; any stencil, missing neighbours left out).
#include <vector>

#include "app_support.hpp"
#include "exchange.hpp"

namespace petacomm::apps::halo {
namespace {

class NeighborExchange final : public HaloExchange {
 public:
  ~NeighborExchange() override {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  void exchange() override {
    PETACOMM_APP_MPI(MPI_Neighbor_alltoallv(send_, send_counts_.data(), send_displs_.data(),
                                            MPI_BYTE, recv_, recv_counts_.data(),
                                            recv_displs_.data(), MPI_BYTE, comm_));
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  const unsigned char *send_ = nullptr;
  unsigned char *recv_ = nullptr;
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;
};

// MPI's Cartesian neighbour order is, per dimension d, the -1 neighbour then the +1 one.
// Block 2d goes to the -e_d neighbour (our face -e_d) and arrives from it carrying the face
// it sent along +e_d; block 2d+1 the other way round.
std::unique_ptr<HaloExchange> make_cart(const HaloSetup &s) {
  auto x = std::make_unique<NeighborExchange>();
  const int ndim = static_cast<int>(s.grid->dims.size());
  std::vector<int> periods(s.grid->periodic.begin(), s.grid->periodic.end());
  PETACOMM_APP_MPI(
      MPI_Cart_create(s.comm, ndim, s.grid->dims.data(), periods.data(), 0, &x->comm_));
  const int bytes = static_cast<int>(s.bytes);
  for (int d = 0; d < ndim; ++d) {
    const int plus = d, minus = ndim + d;  // star offset indices of +e_d and -e_d
    x->send_displs_.insert(x->send_displs_.end(), {minus * bytes, plus * bytes});
    x->recv_displs_.insert(x->recv_displs_.end(), {plus * bytes, minus * bytes});
  }
  x->send_counts_.assign(static_cast<std::size_t>(2 * ndim), bytes);
  x->recv_counts_ = x->send_counts_;
  x->send_ = s.send;
  x->recv_ = s.recv;
  return x;
}

std::string cart_not_applicable(const HaloSetup &s) {
  return s.stencil == "star" ? std::string()
                             : "Cartesian communicators know only the 2d face neighbours (star)";
}

std::unique_ptr<HaloExchange> make_graph(const HaloSetup &s) {
  auto x = std::make_unique<NeighborExchange>();
  const Neighbours &n = *s.neighbours;
  std::vector<int> sources, destinations;
  const int bytes = static_cast<int>(s.bytes);
  for (std::size_t k = 0; k < n.offsets.size(); ++k) {
    if (n.recv_from[k] >= 0) {
      sources.push_back(n.recv_from[k]);
      x->recv_displs_.push_back(static_cast<int>(k) * bytes);
    }
    if (n.send_to[k] >= 0) {
      destinations.push_back(n.send_to[k]);
      x->send_displs_.push_back(static_cast<int>(k) * bytes);
    }
  }
  PETACOMM_APP_MPI(MPI_Dist_graph_create_adjacent(
      s.comm, static_cast<int>(sources.size()), sources.data(), MPI_UNWEIGHTED,
      static_cast<int>(destinations.size()), destinations.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
      &x->comm_));
  x->send_counts_.assign(destinations.size(), bytes);
  x->recv_counts_.assign(sources.size(), bytes);
  x->send_ = s.send;
  x->recv_ = s.recv;
  return x;
}

std::string always(const HaloSetup &) { return {}; }

}  // namespace

extern const ExchangeEntry kNeighborCart, kNeighborGraph;
const ExchangeEntry kNeighborCart{
    {"neighbor-cart", "MPI_Neighbor_alltoallv on a Cartesian communicator (star only)", ""},
    cart_not_applicable,
    make_cart};
const ExchangeEntry kNeighborGraph{
    {"neighbor-graph",
     "MPI_Neighbor_alltoallv on a distributed graph communicator of the neighbours", ""},
    always,
    make_graph};

}  // namespace petacomm::apps::halo
