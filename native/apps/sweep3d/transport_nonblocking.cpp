// Flat MPI, non-blocking: receives are posted kDepth steps ahead into a ring of buffers and
// sends leave with MPI_Isend from a ring of kDepth buffers, so a rank computes its next
// block while its faces travel and its next inputs arrive.
#include "app_support.hpp"
#include "transport.hpp"

namespace petacomm::apps::sweep3d {
namespace {

constexpr int kTagX = 1, kTagY = 2;
constexpr std::size_t kDepth = 4;

class NonblockingTransport final : public SweepTransport {
 public:
  explicit NonblockingTransport(MPI_Comm comm) : comm_(comm) {}

  void plan(const std::vector<SweepStep> &steps, const FaceShape &shape) override {
    steps_ = steps;
    shape_ = shape;
    x_in_.assign(kDepth * shape.x_doubles, 0.0);
    y_in_.assign(kDepth * shape.y_doubles, 0.0);
    x_out_.assign(kDepth * shape.x_doubles, 0.0);
    y_out_.assign(kDepth * shape.y_doubles, 0.0);
    zeros_.assign(std::max(shape.x_doubles, shape.y_doubles), 0.0);
    receives_.assign(2 * kDepth, MPI_REQUEST_NULL);
    sends_.assign(2 * kDepth, MPI_REQUEST_NULL);
    counters_ = count_messages(steps, shape);
  }

  void begin_sweep() override {
    for (std::size_t s = 0; s < kDepth && s < steps_.size(); ++s) post_receives(s);
  }

  IncomingFaces receive(std::size_t s) override {
    // The slot of step s - 1 is free again: post the receives of step s - 1 + kDepth into it.
    if (s >= 1 && s - 1 + kDepth < steps_.size()) post_receives(s - 1 + kDepth);
    const std::size_t slot = s % kDepth;
    PETACOMM_APP_MPI(MPI_Waitall(2, &receives_[2 * slot], MPI_STATUSES_IGNORE));
    const SweepStep &step = steps_.at(s);
    return {step.up_x != MPI_PROC_NULL ? &x_in_[slot * shape_.x_doubles] : zeros_.data(),
            step.up_y != MPI_PROC_NULL ? &y_in_[slot * shape_.y_doubles] : zeros_.data()};
  }

  OutgoingFaces outgoing(std::size_t s) override {
    const std::size_t slot = s % kDepth;
    // The sends of step s - kDepth still read this slot.
    PETACOMM_APP_MPI(MPI_Waitall(2, &sends_[2 * slot], MPI_STATUSES_IGNORE));
    return {&x_out_[slot * shape_.x_doubles], &y_out_[slot * shape_.y_doubles]};
  }

  void send(std::size_t s) override {
    const SweepStep &step = steps_.at(s);
    const std::size_t slot = s % kDepth;
    if (step.down_x != MPI_PROC_NULL)
      PETACOMM_APP_MPI(MPI_Isend(&x_out_[slot * shape_.x_doubles],
                                 static_cast<int>(shape_.x_doubles), MPI_DOUBLE, step.down_x, kTagX,
                                 comm_, &sends_[2 * slot]));
    if (step.down_y != MPI_PROC_NULL)
      PETACOMM_APP_MPI(MPI_Isend(&y_out_[slot * shape_.y_doubles],
                                 static_cast<int>(shape_.y_doubles), MPI_DOUBLE, step.down_y, kTagY,
                                 comm_, &sends_[2 * slot + 1]));
  }

  void end_sweep() override {
    PETACOMM_APP_MPI(
        MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE));
    PETACOMM_APP_MPI(
        MPI_Waitall(static_cast<int>(receives_.size()), receives_.data(), MPI_STATUSES_IGNORE));
  }

  TransportCounters counters() const override { return counters_; }

 private:
  void post_receives(std::size_t s) {
    const SweepStep &step = steps_.at(s);
    const std::size_t slot = s % kDepth;
    if (step.up_x != MPI_PROC_NULL)
      PETACOMM_APP_MPI(MPI_Irecv(&x_in_[slot * shape_.x_doubles],
                                 static_cast<int>(shape_.x_doubles), MPI_DOUBLE, step.up_x, kTagX,
                                 comm_, &receives_[2 * slot]));
    if (step.up_y != MPI_PROC_NULL)
      PETACOMM_APP_MPI(MPI_Irecv(&y_in_[slot * shape_.y_doubles],
                                 static_cast<int>(shape_.y_doubles), MPI_DOUBLE, step.up_y, kTagY,
                                 comm_, &receives_[2 * slot + 1]));
  }

  MPI_Comm comm_;
  std::vector<SweepStep> steps_;
  FaceShape shape_;
  std::vector<double> x_in_, y_in_, x_out_, y_out_, zeros_;
  std::vector<MPI_Request> receives_, sends_;  // [2 * slot] x face, [2 * slot + 1] y face
  TransportCounters counters_;
};

std::unique_ptr<SweepTransport> make_nonblocking(MPI_Comm comm, const TransportOptions &) {
  return std::make_unique<NonblockingTransport>(comm);
}

}  // namespace

extern const TransportEntry kNonblockingTransport;
const TransportEntry kNonblockingTransport{
    {"nonblocking",
     "flat MPI: receives posted 4 blocks ahead, MPI_Isend from a ring of 4 face buffers", ""},
    false,
    make_nonblocking};

}  // namespace petacomm::apps::sweep3d
