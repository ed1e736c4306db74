#include "node_stage.hpp"

#include "error.hpp"
#include "mpi_resources.hpp"

namespace petacomm::transpose {
namespace {

class MpiNodeStage final : public NodeStage {
 public:
  MpiNodeStage(MPI_Comm node, MPI_Datatype element, std::size_t elem)
      : node_(node), element_(element), elem_(elem) {
    PETACOMM_CHECK_MPI(MPI_Comm_rank(node, &rank_));
  }

  void gather(const char *mine, std::size_t my_bytes, char *gathered,
              const std::vector<std::size_t> &bytes) override {
    std::vector<int> counts, displs;
    if (rank_ == 0) layout(bytes, &counts, &displs);
    PETACOMM_CHECK_MPI(MPI_Gatherv(mine, elements(my_bytes), element_, gathered, counts.data(),
                                   displs.data(), element_, 0, node_));
  }

  void scatter(const char *scattered, const std::vector<std::size_t> &bytes, char *mine,
               std::size_t my_bytes) override {
    std::vector<int> counts, displs;
    if (rank_ == 0) layout(bytes, &counts, &displs);
    PETACOMM_CHECK_MPI(MPI_Scatterv(scattered, counts.data(), displs.data(), element_, mine,
                                    elements(my_bytes), element_, 0, node_));
  }

 private:
  int elements(std::size_t bytes) const {
    return int_count(static_cast<std::int64_t>(bytes / elem_), "two-level node buffer");
  }
  void layout(const std::vector<std::size_t> &bytes, std::vector<int> *counts,
              std::vector<int> *displs) const {
    std::size_t at = 0;
    for (std::size_t b : bytes) {
      counts->push_back(elements(b));
      displs->push_back(elements(at));
      at += b;
    }
    elements(at);
  }
  MPI_Comm node_;
  MPI_Datatype element_;
  std::size_t elem_;
  int rank_ = 0;
};

}  // namespace

std::unique_ptr<NodeStage> make_node_stage(MPI_Comm node, MPI_Datatype element, std::size_t elem) {
  return std::make_unique<MpiNodeStage>(node, element, elem);
}

}  // namespace petacomm::transpose
