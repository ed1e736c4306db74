// Non-blocking point-to-point: MPI_Irecv every face, MPI_Isend every face, MPI_Waitall.
#include <vector>

#include "app_support.hpp"
#include "exchange.hpp"

namespace petacomm::apps::halo {
namespace {

class NonblockingExchange final : public HaloExchange {
 public:
  explicit NonblockingExchange(const HaloSetup &s)
      : s_(s), requests_(2 * s.neighbours->offsets.size(), MPI_REQUEST_NULL) {}
  void exchange() override {
    const auto count = static_cast<int>(s_.bytes);
    const std::size_t faces = s_.neighbours->offsets.size();
    for (std::size_t k = 0; k < faces; ++k)
      PETACOMM_APP_MPI(MPI_Irecv(s_.recv + k * s_.bytes, count, MPI_BYTE,
                                 mpi_rank(s_.neighbours->recv_from[k]), static_cast<int>(k),
                                 s_.comm, &requests_[k]));
    for (std::size_t k = 0; k < faces; ++k)
      PETACOMM_APP_MPI(MPI_Isend(s_.send + k * s_.bytes, count, MPI_BYTE,
                                 mpi_rank(s_.neighbours->send_to[k]), static_cast<int>(k), s_.comm,
                                 &requests_[faces + k]));
    PETACOMM_APP_MPI(
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  }

 private:
  HaloSetup s_;
  std::vector<MPI_Request> requests_;
};

std::string always(const HaloSetup &) { return {}; }
std::unique_ptr<HaloExchange> make(const HaloSetup &s) {
  return std::make_unique<NonblockingExchange>(s);
}

}  // namespace

extern const ExchangeEntry kNonblocking;
const ExchangeEntry kNonblocking{
    {"nonblocking", "MPI_Irecv and MPI_Isend for every face, then MPI_Waitall", ""}, always, make};

}  // namespace petacomm::apps::halo
