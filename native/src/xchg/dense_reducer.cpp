#include "dense_reducer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "error.hpp"

namespace petacomm::xchg {

std::vector<std::uint64_t> touched_chunks(MPI_Comm comm,
                                          const std::vector<std::uint64_t> &positions,
                                          std::uint64_t chunk_keys, std::uint64_t space) {
  std::vector<std::uint64_t> mine;
  for (std::uint64_t pos : positions) {
    const std::uint64_t c = pos / chunk_keys;
    if (mine.empty() || mine.back() != c) mine.push_back(c);
  }
  if (space == 0) return {};
  const std::uint64_t nchunks = (space - 1) / chunk_keys + 1;
  std::vector<std::uint64_t> all;
  constexpr std::uint64_t kBitmapLimit = std::uint64_t{1} << 23;
  if (nchunks <= kBitmapLimit) {
    std::vector<std::uint64_t> bits((nchunks + 63) / 64, 0), merged(bits.size(), 0);
    for (std::uint64_t c : mine) bits[c / 64] |= std::uint64_t{1} << (c % 64);
    check_mpi(MPI_Allreduce(bits.data(), merged.data(), static_cast<int>(bits.size()), MPI_UINT64_T,
                            MPI_BOR, comm),
              "MPI_Allreduce");
    for (std::uint64_t w = 0; w < merged.size(); ++w)
      for (std::uint64_t b = 0; b < 64; ++b)
        if (merged[w] >> b & 1U) all.push_back(w * 64 + b);
    return all;
  }
  int p = 1;
  check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  int count = to_int_count(mine.size(), "touched chunks");
  std::vector<int> counts(p), displs(p);
  check_mpi(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  std::size_t total = 0;
  for (int r = 0; r < p; ++r) {
    displs[r] = to_int_count(total, "touched chunks of all ranks");
    total += static_cast<std::size_t>(counts[r]);
  }
  all.resize(total);
  check_mpi(MPI_Allgatherv(mine.data(), count, MPI_UINT64_T, all.data(), counts.data(),
                           displs.data(), MPI_UINT64_T, comm),
            "MPI_Allgatherv");
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

DenseReducer::DenseReducer(MPI_Comm comm, std::vector<std::uint64_t> positions,
                           std::vector<std::int32_t> local, std::vector<std::uint64_t> chunks,
                           std::uint64_t chunk_keys, std::uint64_t space, bool deterministic)
    : comm_(comm),
      positions_(std::move(positions)),
      local_(std::move(local)),
      chunks_(std::move(chunks)),
      chunk_keys_(chunk_keys),
      space_(space),
      deterministic_(deterministic) {
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  chunk_first_.resize(chunks_.size() + 1);
  std::size_t j = 0;
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    while (j < positions_.size() && positions_[j] / chunk_keys_ < chunks_[c]) ++j;
    chunk_first_[c] = static_cast<std::int64_t>(j);
  }
  chunk_first_[chunks_.size()] = static_cast<std::int64_t>(positions_.size());
}

std::uint64_t DenseReducer::chunk_length(std::size_t c) const {
  const std::uint64_t start = chunks_[c] * chunk_keys_;
  return std::min(chunk_keys_, space_ - start);
}

bool DenseReducer::ordered(const ExecContext &ctx) const {
  return ctx.deterministic || deterministic_ || !ctx.op.builtin();
}

void DenseReducer::pack(const ExecContext &ctx, std::size_t c, const void *own, char *buf) const {
  const std::size_t eb = ctx.op.elem_bytes();
  const std::uint64_t start = chunks_[c] * chunk_keys_;
  const char *in = static_cast<const char *>(own);
  for (std::int64_t j = chunk_first_[c]; j < chunk_first_[c + 1]; ++j)
    std::memcpy(buf + (positions_[j] - start) * eb, in + static_cast<std::size_t>(local_[j]) * eb,
                eb);
}

void DenseReducer::unpack(const ExecContext &ctx, std::size_t c, const char *buf,
                          void *result) const {
  const std::size_t eb = ctx.op.elem_bytes();
  const std::uint64_t start = chunks_[c] * chunk_keys_;
  char *out = static_cast<char *>(result);
  for (std::int64_t j = chunk_first_[c]; j < chunk_first_[c + 1]; ++j)
    std::memcpy(out + static_cast<std::size_t>(local_[j]) * eb, buf + (positions_[j] - start) * eb,
                eb);
}

void DenseReducer::start_allreduce(const ExecContext &ctx, std::size_t c, const void *own) {
  const std::size_t len = chunk_length(c);
  char *buf = buf_[c % 2].data();
  ctx.op.fill_identity(buf, len);
  pack(ctx, c, own, buf);
  // Under SMPI a blocking allreduce per chunk (start_allreduce): only the overlap of a
  // chunk's reduction with packing the next is lost there.
  xchg::start_allreduce(MPI_IN_PLACE, buf, to_int_count(len * ctx.op.k(), "chunk_keys * k"),
                        dtype_mpi(ctx.op.dtype()), op_mpi(ctx.op.op()), comm_, &req_[c % 2],
                        nullptr);
}

void DenseReducer::start_ordered(const ExecContext &ctx, std::size_t c, const void *own) {
  const std::size_t len = chunk_length(c);
  const std::size_t slice = (len + size_ - 1) / size_;
  char *buf = buf_[0].data();
  ctx.op.fill_identity(buf, slice * size_);
  pack(ctx, c, own, buf);
  const int count = to_int_count(slice, "chunk slice");
  check_mpi(MPI_Ialltoall(buf, count, ctx.type.get(), recv_.data(), count, ctx.type.get(), comm_,
                          &req_[0]),
            "MPI_Ialltoall");
}

void DenseReducer::finish_ordered(const ExecContext &ctx, std::size_t c, void *result) {
  const std::size_t len = chunk_length(c);
  const std::size_t slice = (len + size_ - 1) / size_;
  const std::size_t eb = ctx.op.elem_bytes();
  check_mpi(MPI_Wait(&req_[0], MPI_STATUS_IGNORE), "MPI_Wait");
  ctx.op.fill_identity(acc_.data(), slice);
  for (int r = 0; r < size_; ++r) ctx.op.fold(acc_.data(), recv_.data() + r * slice * eb, slice);
  const int count = static_cast<int>(slice);
  check_mpi(MPI_Allgather(acc_.data(), count, ctx.type.get(), buf_[1].data(), count, ctx.type.get(),
                          comm_),
            "MPI_Allgather");
  unpack(ctx, c, buf_[1].data(), result);
}

void DenseReducer::begin(const ExecContext &ctx, const void *data) {
  if (chunks_.empty()) return;
  const std::size_t eb = ctx.op.elem_bytes();
  const std::size_t longest = std::min<std::uint64_t>(chunk_keys_, space_);
  if (ordered(ctx)) {
    const std::size_t slice = (longest + size_ - 1) / size_;
    for (auto *b : {&buf_[0], &buf_[1], &recv_}) b->resize(slice * size_ * eb);
    acc_.resize(slice * eb);
    start_ordered(ctx, 0, data);
    return;
  }
  buf_[0].resize(longest * eb);
  buf_[1].resize(chunks_.size() > 1 ? longest * eb : 0);
  start_allreduce(ctx, 0, data);
  if (chunks_.size() > 1) start_allreduce(ctx, 1, data);
}

void DenseReducer::end(const ExecContext &ctx, void *data) {
  if (chunks_.empty()) return;
  if (ordered(ctx)) {
    finish_ordered(ctx, 0, data);
    for (std::size_t c = 1; c < chunks_.size(); ++c) {
      start_ordered(ctx, c, data);
      finish_ordered(ctx, c, data);
    }
    return;
  }
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    check_mpi(MPI_Wait(&req_[c % 2], MPI_STATUS_IGNORE), "MPI_Wait");
    unpack(ctx, c, buf_[c % 2].data(), data);
    if (c + 2 < chunks_.size()) start_allreduce(ctx, c + 2, data);
  }
}

Traffic DenseReducer::traffic() const {
  Traffic t;
  if (size_ == 1) return t;
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    const double len = static_cast<double>(chunk_length(c));
    if (deterministic_) {
      const double slice = std::ceil(len / size_);
      t.messages += 2.0 * (size_ - 1);
      t.entries += 2.0 * (size_ - 1) * slice;
    } else {
      t.messages += 2.0 * ceil_log2(size_);
      t.entries += 2.0 * (size_ - 1) / size_ * len;
    }
  }
  return t;
}

std::size_t DenseReducer::schedule_bytes() const {
  return positions_.capacity() * 8 + local_.capacity() * 4 + chunks_.capacity() * 8 +
         chunk_first_.capacity() * 8;
}

std::int64_t DenseReducer::buffer_entries() const {
  if (chunks_.empty()) return 0;
  const std::int64_t longest = static_cast<std::int64_t>(std::min(chunk_keys_, space_));
  return deterministic_ ? 4 * longest : (chunks_.size() > 1 ? 2 : 1) * longest;
}

std::int64_t DenseReducer::my_chunks() const {
  std::int64_t n = 0;
  for (std::size_t c = 0; c < chunks_.size(); ++c) n += chunk_first_[c + 1] > chunk_first_[c];
  return n;
}

}  // namespace petacomm::xchg
