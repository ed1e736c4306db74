#include "transposer.hpp"

#include <algorithm>
#include <cstring>

#include "blocks.hpp"
#include "json_out.hpp"
#include "node_topology.hpp"

namespace petacomm::transpose {

Transposer::Transposer(MPI_Comm comm, Geometry forward, Geometry backward,
                       const TransposeOptions &o)
    : comm_(comm), forward_(std::move(forward)), backward_(std::move(backward)), options_(o) {
  PETACOMM_CHECK_MPI(MPI_Comm_size(comm, &q_));
  PETACOMM_CHECK_MPI(MPI_Comm_rank(comm, &me_));
  MPI_Datatype element;
  PETACOMM_CHECK_MPI(MPI_Type_contiguous(static_cast<int>(forward_.elem), MPI_BYTE, &element));
  PETACOMM_CHECK_MPI(MPI_Type_commit(&element));
  element_ = Datatype(element);
  {
    const NodeTopology nodes(comm, o.node_size);
    ranks_per_node_ = nodes.max_node_ranks();
    nodes_ = nodes.nodes();
  }
  ProblemStats stats;
  stats.q = q_;
  stats.n_rows = forward_.n_rows;
  stats.n_cols = forward_.n_cols;
  stats.batch = forward_.batch;
  stats.elem = static_cast<double>(forward_.elem);
  stats.ranks_per_node = ranks_per_node_;
  stats.col_kept = forward_.col_kept;
  planned_ = decide(stats, o.cost, o.strategy);
  if (o.measure) {
    pending_measure_ = true;  // the first execution times the candidates
    return;
  }
  build_chosen();
}

ExchangeSetup Transposer::setup(Direction d) const {
  return ExchangeSetup{
      comm_, q_, me_, geometry(d), element_.get(), options_.window, options_.node_size};
}

void Transposer::build_chosen() {
  chosen_ = &registry().require("strategy", planned_.decision.choice);
  exchange_[0] = chosen_->build(setup(Direction::kForward));
  exchange_[1] = chosen_->build(setup(Direction::kBackward));
}

std::size_t Transposer::input_bytes(Direction d) const {
  return static_cast<std::size_t>(geometry(d).in_extent(input_rows(d))) * forward_.elem;
}

std::size_t Transposer::output_bytes(Direction d) const {
  return static_cast<std::size_t>(geometry(d).out_extent(output_rows(d))) * forward_.elem;
}

void Transposer::execute(Direction d, const char *in, char *out) {
  if (pending_measure_) {
    measure(d, in, out);
    return;
  }
  exchange_[static_cast<int>(d)]->execute(in, out);
  if (geometry(d).zero_output_outside_mask) zero_excluded(geometry(d), q_, me_, out);
}

void Transposer::measure(Direction d, const char *in, char *out) {
  const bool in_place = in == out;
  // In place, every trial destroys the input: keep a copy to restore it before each one.
  Buffer saved;
  if (in_place) {
    saved.resize(input_bytes(d));
    std::memcpy(saved.data(), in, saved.size());
  }
  auto restore = [&] {
    if (in_place) std::memcpy(out, saved.data(), saved.size());
  };
  for (CandidateCost &c : planned_.decision.candidates) {
    if (!c.applicable) continue;
    std::unique_ptr<Exchange> trial = registry().require("strategy", c.name).build(setup(d));
    std::vector<double> times;
    for (int rep = 0; rep <= options_.measure_reps; ++rep) {  // rep 0 warms up
      restore();
      PETACOMM_CHECK_MPI(MPI_Barrier(comm_));
      const double start = MPI_Wtime();
      trial->execute(in, out);
      double local = MPI_Wtime() - start, slowest = 0;
      PETACOMM_CHECK_MPI(MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm_));
      if (rep > 0) times.push_back(slowest);
    }
    std::sort(times.begin(), times.end());
    c.measured_seconds = times[times.size() / 2];  // median of the max over ranks
  }
  // Every rank holds the same reduced times, so every rank makes the same choice.
  planned_.decision = decide_cheapest(std::move(planned_.decision.candidates));
  pending_measure_ = false;
  build_chosen();
  restore();
  execute(d, in, out);
}

const char *Transposer::strategy_name() const {
  return pending_measure_ ? "measure-pending" : chosen_->about.name;
}

double Transposer::messages(Direction d) const {
  const auto &e = exchange_[static_cast<int>(d)];
  return e ? e->messages() : 0.0;
}
double Transposer::bytes(Direction d) const {
  const auto &e = exchange_[static_cast<int>(d)];
  return e ? e->bytes() : 0.0;
}
std::size_t Transposer::memory_bytes() const {
  std::size_t total = 0;
  for (const auto &e : exchange_)
    if (e) total += e->memory_bytes();
  return total;
}

std::string Transposer::describe_json() const {
  JsonOut j;
  j.begin_object();
  j.value("strategy", strategy_name());
  j.value("planner", options_.measure ? "measure" : "estimate");
  j.value("ranks", q_).value("ranks_per_node", ranks_per_node_).value("nodes", nodes_);
  j.value("n_rows", forward_.n_rows).value("n_cols", forward_.n_cols);
  j.value("batch", forward_.batch).value("elem_bytes", static_cast<std::int64_t>(forward_.elem));
  std::int64_t kept = 0;
  for (unsigned char k : forward_.col_kept) kept += k;
  j.value("masked", !forward_.col_kept.empty());
  j.value("kept_columns", forward_.col_kept.empty() ? forward_.n_cols : kept);
  j.raw("decision", decision_json(planned_));
  j.end_object();
  return j.str();
}

}  // namespace petacomm::transpose
