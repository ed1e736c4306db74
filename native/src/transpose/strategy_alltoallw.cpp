// alltoallw: no packing. The send datatype of block (me -> d) picks my rows' runs of d's
// columns straight from the input; the receive datatype scatters each arriving row down a
// column of the output, so MPI's datatype engine performs the transpose.
#include <algorithm>

#include "blocks.hpp"
#include "cost_model.hpp"
#include "mpi_resources.hpp"
#include "strategy.hpp"

namespace petacomm::transpose {
namespace {

// Commits `base` shifted by `offset` bytes (displacements of MPI_Alltoallw are int, so the
// offsets live in the datatypes and every displacement is 0).
Datatype shifted(MPI_Datatype base, MPI_Aint offset) {
  MPI_Datatype t;
  PETACOMM_CHECK_MPI(MPI_Type_create_hindexed_block(1, 1, &offset, base, &t));
  PETACOMM_CHECK_MPI(MPI_Type_commit(&t));
  return Datatype(t);
}

class AlltoallwExchange final : public Exchange {
 public:
  explicit AlltoallwExchange(const ExchangeSetup &s)
      : comm_(s.comm), blocks_(s.geometry, s.q, s.me, false), q_(s.q), me_(s.me) {
    const Geometry &g = s.geometry;
    const BlockDistribution rows = g.rows(s.q), cols = g.cols(s.q);
    const MPI_Aint E = static_cast<MPI_Aint>(g.elem);
    const int my_rows = int_count(rows.count(s.me), "alltoallw rows");
    const int my_cols = int_count(cols.count(s.me), "alltoallw columns");
    const int batch = int_count(g.batch, "alltoallw batch");
    for (int r = 0; r < s.q; ++r) {
      // Send: my rows x r's columns, each row a contiguous run, batches in_batch apart.
      const int cols_r = int_count(cols.count(r), "alltoallw columns");
      MPI_Datatype row, rows_t, all;
      PETACOMM_CHECK_MPI(MPI_Type_create_hvector(my_rows, cols_r, g.in_row * E, s.element, &row));
      PETACOMM_CHECK_MPI(MPI_Type_create_hvector(batch, 1, g.in_batch * E, row, &all));
      send_types_.push_back(shifted(all, cols.offset(r) * E));
      PETACOMM_CHECK_MPI(MPI_Type_free(&row));
      PETACOMM_CHECK_MPI(MPI_Type_free(&all));
      // Receive: r's rows x my columns, arriving row by row; row i goes down column
      // row0(r) + i of my output (one element per output row).
      const int rows_r = int_count(rows.count(r), "alltoallw rows");
      MPI_Datatype column;
      PETACOMM_CHECK_MPI(MPI_Type_create_hvector(my_cols, 1, g.out_row * E, s.element, &column));
      PETACOMM_CHECK_MPI(MPI_Type_create_hvector(rows_r, 1, E, column, &rows_t));
      PETACOMM_CHECK_MPI(MPI_Type_create_hvector(batch, 1, g.out_batch * E, rows_t, &all));
      recv_types_.push_back(shifted(all, rows.offset(r) * E));
      PETACOMM_CHECK_MPI(MPI_Type_free(&column));
      PETACOMM_CHECK_MPI(MPI_Type_free(&rows_t));
      PETACOMM_CHECK_MPI(MPI_Type_free(&all));
    }
    extent_bytes_ = static_cast<std::size_t>(g.in_extent(rows.count(s.me))) * g.elem;
  }

  void execute(const char *in, char *out) override {
    const bool in_place = in == out;
    const char *source = in;
    if (in_place) {  // the datatypes read the input while writing the output: copy it first
      scratch_.resize(extent_bytes_);
      std::copy(in, in + extent_bytes_, scratch_.data());
      source = scratch_.data();
    }
    std::vector<int> send_counts(q_), recv_counts(q_), displs(q_, 0);
    std::vector<MPI_Datatype> send_types(q_), recv_types(q_);
    for (int r = 0; r < q_; ++r) {
      const bool skip = r == me_ && !in_place;  // the own block by the blocked transpose
      send_counts[r] = !skip && blocks_.elements(me_, r) > 0;
      recv_counts[r] = !skip && blocks_.elements(r, me_) > 0;
      send_types[r] = send_types_[r].get();
      recv_types[r] = recv_types_[r].get();
    }
    if (!in_place) blocks_.transpose_self(in, out);
    PETACOMM_CHECK_MPI(MPI_Alltoallw(source, send_counts.data(), displs.data(), send_types.data(),
                                     out, recv_counts.data(), displs.data(), recv_types.data(),
                                     comm_));
  }
  double messages() const override {
    double n = 0;
    for (int r = 0; r < q_; ++r) n += r != me_ && blocks_.elements(me_, r) > 0;
    return n;
  }
  double bytes() const override {
    return static_cast<double>(blocks_.send_bytes() - blocks_.bytes(me_, me_));
  }
  std::size_t memory_bytes() const override { return scratch_.size(); }

 private:
  MPI_Comm comm_;
  Blocks blocks_;
  int q_, me_;
  std::vector<Datatype> send_types_, recv_types_;
  std::size_t extent_bytes_ = 0;
  Buffer scratch_;  // in-place executions only
};

CostEstimate cost(const ProblemStats &s, const petacomm_transpose_cost_params &c) {
  const Volumes v = volumes(s, c);
  CostEstimate e;
  e.messages = s.q - 1;
  e.steps = s.q - 1;
  e.bytes = v.remote_bytes;
  const double link = link_seconds(v, e.bytes, c, &e.node_link_bytes);
  // Rows leave by contiguous runs; they arrive element by element through the datatype
  // engine. The own block goes by the blocked transpose.
  const double local = v.self_bytes * c.transpose_beta + v.remote_bytes * c.copy_beta +
                       (v.out_bytes - v.self_bytes) * c.datatype_beta;
  e.seconds =
      (s.q - 1) * collective_alpha(v, c) + std::max(e.bytes * collective_beta(v, c), link) + local;
  return e;
}

std::string applicable(const ProblemStats &) { return {}; }

std::unique_ptr<Exchange> build(const ExchangeSetup &s) {
  return std::make_unique<AlltoallwExchange>(s);
}

}  // namespace

extern const TransposeStrategy kAlltoallw{
    {"alltoallw",
     "MPI_Alltoallw with derived datatypes, no packing: MPI's datatype engine does the "
     "transpose; wins where that engine is fast (it did on IBM Power6 in the study)",
     ""},
    applicable,
    cost,
    build};

}  // namespace petacomm::transpose
