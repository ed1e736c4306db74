// MPI_Sendrecv per face, in offset order: face k to the +offset neighbour while receiving
// face k from the -offset one (every rank does the same shift at the same time).
#include "app_support.hpp"
#include "exchange.hpp"

namespace petacomm::apps::halo {
namespace {

class SendrecvExchange final : public HaloExchange {
 public:
  explicit SendrecvExchange(const HaloSetup &s) : s_(s) {}
  void exchange() override {
    const auto count = static_cast<int>(s_.bytes);
    for (std::size_t k = 0; k < s_.neighbours->offsets.size(); ++k)
      PETACOMM_APP_MPI(MPI_Sendrecv(
          s_.send + k * s_.bytes, count, MPI_BYTE, mpi_rank(s_.neighbours->send_to[k]),
          static_cast<int>(k), s_.recv + k * s_.bytes, count, MPI_BYTE,
          mpi_rank(s_.neighbours->recv_from[k]), static_cast<int>(k), s_.comm, MPI_STATUS_IGNORE));
  }

 private:
  HaloSetup s_;
};

std::string always(const HaloSetup &) { return {}; }
std::unique_ptr<HaloExchange> make(const HaloSetup &s) {
  return std::make_unique<SendrecvExchange>(s);
}

}  // namespace

extern const ExchangeEntry kSendrecv;
const ExchangeEntry kSendrecv{
    {"sendrecv", "MPI_Sendrecv per face, one direction after the other", ""}, always, make};

}  // namespace petacomm::apps::halo
