// Node-aware: the faces travel through petacomm's node layer (node.h). Ranks of one
// (virtual) node exchange faces through the node's shared-memory window; faces for other
// nodes go through the node's gateway. Both face rings live in the node heap, so the
// kernel writes an outgoing face straight into shared memory and an intra-node face moves
// with one copy. Receives are posted kDepth blocks ahead, as in the non-blocking transport.
#include <petacomm/node.h>

#include "error.hpp"
#include "transport.hpp"

namespace petacomm::apps::sweep3d {
namespace {

constexpr int kTagX = 1, kTagY = 2;
constexpr std::size_t kDepth = 4;

void check(petacomm_status status, const char *call) {
  if (status != PETACOMM_SUCCESS) throw Error(status, concat(call, ": ", petacomm_last_error()));
}

class NodeTransport final : public SweepTransport {
 public:
  NodeTransport(MPI_Comm comm, const TransportOptions &options) {
    petacomm_node_options opts;
    check(petacomm_node_options_default(&opts), "petacomm_node_options_default");
    opts.node_size = options.node_size;
    check(petacomm_node_create(comm, &opts, &node_), "petacomm_node_create");
  }
  // Collective (every rank destroys its transport at the end of the same case); the node
  // heap, and the face rings in it, go with the layer.
  ~NodeTransport() override {
    if (node_ != nullptr) petacomm_node_free(&node_);
  }

  void plan(const std::vector<SweepStep> &steps, const FaceShape &shape) override {
    steps_ = steps;
    shape_ = shape;
    const std::size_t slot = shape.x_doubles + shape.y_doubles;
    void *in = nullptr, *out = nullptr;
    check(
        petacomm_node_alloc(node_, static_cast<std::int64_t>(kDepth * slot * sizeof(double)), &in),
        "petacomm_node_alloc (receive faces)");
    check(
        petacomm_node_alloc(node_, static_cast<std::int64_t>(kDepth * slot * sizeof(double)), &out),
        "petacomm_node_alloc (send faces)");
    in_ = static_cast<double *>(in);
    out_ = static_cast<double *>(out);
    // The servant answers allocations only inside layer calls: keep every rank in the layer
    // until all of its node have theirs.
    check(petacomm_node_barrier(node_, PETACOMM_NODE_SCOPE_ALL), "petacomm_node_barrier");
    zeros_.assign(std::max(shape.x_doubles, shape.y_doubles), 0.0);
    receives_.assign(2 * kDepth, nullptr);
    sends_.assign(2 * kDepth, nullptr);
    counters_ = count_messages(steps, shape);
    petacomm_node_layout layout;
    check(petacomm_node_get_layout(node_, &layout), "petacomm_node_get_layout");
    counters_.messages_in_node = 0;
    for (const SweepStep &s : steps)
      for (int to : {s.down_x, s.down_y}) {
        if (to == MPI_PROC_NULL) continue;
        int node = 0, local = 0;
        check(petacomm_node_locate(node_, to, &node, &local), "petacomm_node_locate");
        counters_.messages_in_node += node == layout.node;
      }
  }

  void begin_sweep() override {
    for (std::size_t s = 0; s < kDepth && s < steps_.size(); ++s) post_receives(s);
  }

  IncomingFaces receive(std::size_t s) override {
    if (s >= 1 && s - 1 + kDepth < steps_.size()) post_receives(s - 1 + kDepth);
    const std::size_t slot = s % kDepth;
    wait(&receives_[2 * slot], 2);
    const SweepStep &step = steps_.at(s);
    return {step.up_x != MPI_PROC_NULL ? x_face(in_, slot) : zeros_.data(),
            step.up_y != MPI_PROC_NULL ? y_face(in_, slot) : zeros_.data()};
  }

  OutgoingFaces outgoing(std::size_t s) override {
    const std::size_t slot = s % kDepth;
    wait(&sends_[2 * slot], 2);
    return {x_face(out_, slot), y_face(out_, slot)};
  }

  void send(std::size_t s) override {
    const SweepStep &step = steps_.at(s);
    const std::size_t slot = s % kDepth;
    if (step.down_x != MPI_PROC_NULL)
      check(petacomm_node_isend(node_, x_face(out_, slot), x_bytes(), step.down_x, kTagX,
                                &sends_[2 * slot]),
            "petacomm_node_isend");
    if (step.down_y != MPI_PROC_NULL)
      check(petacomm_node_isend(node_, y_face(out_, slot), y_bytes(), step.down_y, kTagY,
                                &sends_[2 * slot + 1]),
            "petacomm_node_isend");
  }

  void end_sweep() override {
    wait(sends_.data(), sends_.size());
    wait(receives_.data(), receives_.size());
    // A gateway must not leave the layer (for the solver's MPI_Allreduce) while faces of its
    // node are still on their way: the layer barrier keeps every rank progressing until all
    // arrived.
    check(petacomm_node_barrier(node_, PETACOMM_NODE_SCOPE_ALL), "petacomm_node_barrier");
  }

  TransportCounters counters() const override { return counters_; }

 private:
  double *x_face(double *ring, std::size_t slot) const {
    return ring + slot * (shape_.x_doubles + shape_.y_doubles);
  }
  double *y_face(double *ring, std::size_t slot) const {
    return x_face(ring, slot) + shape_.x_doubles;
  }
  std::int64_t x_bytes() const { return static_cast<std::int64_t>(shape_.x_doubles * 8); }
  std::int64_t y_bytes() const { return static_cast<std::int64_t>(shape_.y_doubles * 8); }

  void wait(petacomm_node_request *requests, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
      if (requests[i] != nullptr)
        check(petacomm_node_wait(node_, &requests[i], nullptr), "petacomm_node_wait");
  }

  void post_receives(std::size_t s) {
    const SweepStep &step = steps_.at(s);
    const std::size_t slot = s % kDepth;
    if (step.up_x != MPI_PROC_NULL)
      check(petacomm_node_irecv(node_, x_face(in_, slot), x_bytes(), step.up_x, kTagX,
                                &receives_[2 * slot]),
            "petacomm_node_irecv");
    if (step.up_y != MPI_PROC_NULL)
      check(petacomm_node_irecv(node_, y_face(in_, slot), y_bytes(), step.up_y, kTagY,
                                &receives_[2 * slot + 1]),
            "petacomm_node_irecv");
  }

  petacomm_node node_ = nullptr;
  std::vector<SweepStep> steps_;
  FaceShape shape_;
  double *in_ = nullptr, *out_ = nullptr;  // kDepth slots of (x face, y face), node heap
  std::vector<double> zeros_;
  std::vector<petacomm_node_request> receives_, sends_;  // [2 slot] x, [2 slot + 1] y
  TransportCounters counters_;
};

std::unique_ptr<SweepTransport> make_node(MPI_Comm comm, const TransportOptions &options) {
  return std::make_unique<NodeTransport>(comm, options);
}

}  // namespace

extern const TransportEntry kNodeTransport;
const TransportEntry kNodeTransport{
    {"node",
     "node-aware layer (node.h): faces in the node heap, shared memory inside a node, "
     "gateways between nodes; receives posted 4 blocks ahead",
     "node_size"},
    true,
    make_node};

}  // namespace petacomm::apps::sweep3d
