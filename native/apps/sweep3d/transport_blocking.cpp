// Flat MPI, blocking: MPI_Recv the two upstream faces, compute, MPI_Send the two downstream
// faces (Sweep3D's original scheme). One buffer per face; a send returns when its buffer
// may be reused.
#include "app_support.hpp"
#include "transport.hpp"

namespace petacomm::apps::sweep3d {
namespace {

constexpr int kTagX = 1, kTagY = 2;

class BlockingTransport final : public SweepTransport {
 public:
  explicit BlockingTransport(MPI_Comm comm) : comm_(comm) {}

  void plan(const std::vector<SweepStep> &steps, const FaceShape &shape) override {
    steps_ = steps;
    shape_ = shape;
    x_in_.assign(shape.x_doubles, 0.0);
    y_in_.assign(shape.y_doubles, 0.0);
    x_out_.assign(shape.x_doubles, 0.0);
    y_out_.assign(shape.y_doubles, 0.0);
    zeros_.assign(std::max(shape.x_doubles, shape.y_doubles), 0.0);
    counters_ = count_messages(steps, shape);
  }
  void begin_sweep() override {}

  IncomingFaces receive(std::size_t s) override {
    const SweepStep &step = steps_.at(s);
    IncomingFaces in{zeros_.data(), zeros_.data()};
    if (step.up_x != MPI_PROC_NULL) {
      PETACOMM_APP_MPI(MPI_Recv(x_in_.data(), static_cast<int>(shape_.x_doubles), MPI_DOUBLE,
                                step.up_x, kTagX, comm_, MPI_STATUS_IGNORE));
      in.x = x_in_.data();
    }
    if (step.up_y != MPI_PROC_NULL) {
      PETACOMM_APP_MPI(MPI_Recv(y_in_.data(), static_cast<int>(shape_.y_doubles), MPI_DOUBLE,
                                step.up_y, kTagY, comm_, MPI_STATUS_IGNORE));
      in.y = y_in_.data();
    }
    return in;
  }

  OutgoingFaces outgoing(std::size_t) override { return {x_out_.data(), y_out_.data()}; }

  void send(std::size_t s) override {
    const SweepStep &step = steps_.at(s);
    if (step.down_x != MPI_PROC_NULL)
      PETACOMM_APP_MPI(MPI_Send(x_out_.data(), static_cast<int>(shape_.x_doubles), MPI_DOUBLE,
                                step.down_x, kTagX, comm_));
    if (step.down_y != MPI_PROC_NULL)
      PETACOMM_APP_MPI(MPI_Send(y_out_.data(), static_cast<int>(shape_.y_doubles), MPI_DOUBLE,
                                step.down_y, kTagY, comm_));
  }

  void end_sweep() override {}
  TransportCounters counters() const override { return counters_; }

 private:
  MPI_Comm comm_;
  std::vector<SweepStep> steps_;
  FaceShape shape_;
  std::vector<double> x_in_, y_in_, x_out_, y_out_, zeros_;
  TransportCounters counters_;
};

std::unique_ptr<SweepTransport> make_blocking(MPI_Comm comm, const TransportOptions &) {
  return std::make_unique<BlockingTransport>(comm);
}

}  // namespace

extern const TransportEntry kBlockingTransport;
const TransportEntry kBlockingTransport{
    {"blocking", "flat MPI: MPI_Recv upstream faces, compute, MPI_Send downstream faces", ""},
    false,
    make_blocking};

}  // namespace petacomm::apps::sweep3d
