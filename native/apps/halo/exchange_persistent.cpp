// Persistent requests: MPI_Recv_init / MPI_Send_init once per message size, then
// MPI_Startall + MPI_Waitall per exchange.
#include <vector>

#include "app_support.hpp"
#include "exchange.hpp"

namespace petacomm::apps::halo {
namespace {

class PersistentExchange final : public HaloExchange {
 public:
  explicit PersistentExchange(const HaloSetup &s) {
    const auto count = static_cast<int>(s.bytes);
    const std::size_t faces = s.neighbours->offsets.size();
    requests_.assign(2 * faces, MPI_REQUEST_NULL);
    for (std::size_t k = 0; k < faces; ++k)
      PETACOMM_APP_MPI(MPI_Recv_init(s.recv + k * s.bytes, count, MPI_BYTE,
                                     mpi_rank(s.neighbours->recv_from[k]), static_cast<int>(k),
                                     s.comm, &requests_[k]));
    for (std::size_t k = 0; k < faces; ++k)
      PETACOMM_APP_MPI(MPI_Send_init(s.send + k * s.bytes, count, MPI_BYTE,
                                     mpi_rank(s.neighbours->send_to[k]), static_cast<int>(k),
                                     s.comm, &requests_[faces + k]));
  }
  ~PersistentExchange() override {
    for (MPI_Request &r : requests_)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  }
  void exchange() override {
    PETACOMM_APP_MPI(MPI_Startall(static_cast<int>(requests_.size()), requests_.data()));
    PETACOMM_APP_MPI(
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  }

 private:
  std::vector<MPI_Request> requests_;
};

std::string always(const HaloSetup &) { return {}; }
std::unique_ptr<HaloExchange> make(const HaloSetup &s) {
  return std::make_unique<PersistentExchange>(s);
}

}  // namespace

extern const ExchangeEntry kPersistent;
const ExchangeEntry kPersistent{
    {"persistent", "MPI_Send_init/MPI_Recv_init once, MPI_Startall + MPI_Waitall per exchange", ""},
    always,
    make};

}  // namespace petacomm::apps::halo
