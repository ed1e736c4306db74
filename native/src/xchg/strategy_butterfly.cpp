// butterfly: recursive halving over the keys' hash. In step i every rank exchanges with
// the rank whose (virtual) number differs in bit i, keeping the values of the keys whose
// hash has its own bit i and passing on the others; after log2 p steps each rank holds
// every rank's values of one slice of the hash space, folds each key's values in rank
// order, and the results retrace the same path back. 2 ceil(log2 p) messages per rank
// whatever the sharing — where keys are shared with hundreds of partners, the other
// strategies' messages are hundreds. The values travel unfolded (each tagged with its rank
// at setup), so the fold is e (+) c_r1 (+) c_r2 ... in rank order, as every strategy's.
// p not a power of two: the first 2 (p - p') ranks pair up (2j, 2j + 1); the even one hands
// all its values to the odd one first and gets its results from it last.
#include <algorithm>
#include <cstring>

#include "error.hpp"
#include "planner.hpp"
#include "registry.hpp"

namespace petacomm::xchg {
namespace {

// One exchange of the plan. Forward: the values at pool positions `send` go to `peer`, and
// `recv_count` values arrive at the end of the pool (positions recv_begin...). Backward (in
// the reverse order of the steps): the results of the received positions go back, and the
// results of the sent ones arrive.
struct Step {
  int peer = 0;
  std::vector<std::int32_t> send;
  std::int32_t recv_begin = 0, recv_count = 0;
};

// The virtual numbering: p' = the largest power of two <= p; of the first 2 (p - p') ranks
// the odd ones take part (the even ones hand over to them), then every rank from 2 (p - p').
struct Butterfly {
  int p = 1, me = 0, width = 1, rem = 0;
  bool folded_away() const { return me < 2 * rem && me % 2 == 0; }
  int vid() const { return me < 2 * rem ? me / 2 : me - rem; }
  int rank_of(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
  int rounds() const { return __builtin_ctz(static_cast<unsigned>(width)); }
  int steps() const { return rounds() + (rem > 0 ? 1 : 0); }  // the hand-over included
};

Butterfly butterfly_of(int p, int me) {
  Butterfly b;
  b.p = p;
  b.me = me;
  while (b.width * 2 <= b.p) b.width *= 2;
  b.rem = b.p - b.width;
  return b;
}

class ButterflyStrategy final : public Strategy {
 public:
  explicit ButterflyStrategy(const BuildContext &ctx)
      : comm_(ctx.comm), tag_(ctx.tag(kTagButterfly)) {
    int p = 1, me = 0;
    check_mpi(MPI_Comm_size(comm_, &p), "MPI_Comm_size");
    check_mpi(MPI_Comm_rank(comm_, &me), "MPI_Comm_rank");
    const Butterfly b = butterfly_of(p, me);
    const std::vector<std::int64_t> &keys = ctx.index.keys();
    own_ = static_cast<std::int32_t>(to_int_count(keys.size(), "distinct keys"));
    // The pool: (key, rank it came from) of every value this rank ever holds.
    std::vector<std::int64_t> pool_key(keys.begin(), keys.end());
    std::vector<std::int32_t> pool_rank(keys.size(), b.me);
    std::vector<std::int32_t> held(keys.size());
    for (std::int32_t u = 0; u < own_; ++u) held[static_cast<std::size_t>(u)] = u;
    // One step: send `send` (pool positions) to peer, receive whatever it sends (one
    // direction only in the hand-over: the other side is MPI_PROC_NULL).
    const auto exchange = [&](int peer, std::vector<std::int32_t> send, bool sends, bool receives) {
      const int to = sends ? peer : MPI_PROC_NULL, from = receives ? peer : MPI_PROC_NULL;
      std::vector<std::int64_t> out;
      out.reserve(send.size() * 2);
      for (std::int32_t at : send) {
        out.push_back(pool_key[static_cast<std::size_t>(at)]);
        out.push_back(pool_rank[static_cast<std::size_t>(at)]);
      }
      std::int64_t out_count = static_cast<std::int64_t>(send.size()), in_count = 0;
      std::vector<std::int64_t> in;
      {
        MpiWait wait(ctx.clock);
        check_mpi(MPI_Sendrecv(&out_count, 1, MPI_INT64_T, to, tag_, &in_count, 1, MPI_INT64_T,
                               from, tag_, comm_, MPI_STATUS_IGNORE),
                  "MPI_Sendrecv");
        in.resize(static_cast<std::size_t>(in_count) * 2);
        check_mpi(MPI_Sendrecv(out.data(), to_int_count(out.size(), "butterfly keys"), MPI_INT64_T,
                               to, tag_, in.data(), to_int_count(in.size(), "butterfly keys"),
                               MPI_INT64_T, from, tag_, comm_, MPI_STATUS_IGNORE),
                  "MPI_Sendrecv");
      }
      Step step;
      step.peer = peer;
      step.send = std::move(send);
      step.recv_begin = static_cast<std::int32_t>(pool_key.size());
      step.recv_count = static_cast<std::int32_t>(in_count);
      to_int_count(pool_key.size() + static_cast<std::size_t>(in_count),
                   "butterfly pool");  // throws
      for (std::int64_t j = 0; j < in_count; ++j) {
        held.push_back(static_cast<std::int32_t>(pool_key.size()));
        pool_key.push_back(in[static_cast<std::size_t>(2 * j)]);
        pool_rank.push_back(static_cast<std::int32_t>(in[static_cast<std::size_t>(2 * j + 1)]));
      }
      steps_.push_back(std::move(step));
    };
    if (b.me < 2 * b.rem) {  // the pairs (2j, 2j + 1): the even rank hands everything over
      if (b.folded_away()) {
        exchange(b.me + 1, std::move(held), true, false);
        held.clear();
      } else {
        exchange(b.me - 1, {}, false, true);
      }
    }
    if (!b.folded_away()) {
      const int v = b.vid();
      for (int i = 0; i < b.rounds(); ++i) {
        const std::uint64_t mine = (static_cast<std::uint64_t>(v) >> i) & 1U;
        std::vector<std::int32_t> keep, send;
        for (std::int32_t at : held) {
          const std::uint64_t bit =
              (mix64(static_cast<std::uint64_t>(pool_key[static_cast<std::size_t>(at)])) >> i) & 1U;
          (bit == mine ? keep : send).push_back(at);
        }
        held.swap(keep);
        exchange(b.rank_of(v ^ (1 << i)), std::move(send), true, true);
      }
    }
    pool_size_ = pool_key.size();
    // What this rank folds: the held values by rank (then key), so each key's values fold in
    // rank order; slots number the held keys.
    std::sort(held.begin(), held.end(), [&](std::int32_t a, std::int32_t c) {
      const auto x = static_cast<std::size_t>(a), y = static_cast<std::size_t>(c);
      return pool_key[x] != pool_key[y] ? pool_key[x] < pool_key[y] : pool_rank[x] < pool_rank[y];
    });
    std::vector<std::int32_t> slot_of(held.size());
    std::int32_t slot = -1;
    for (std::size_t j = 0; j < held.size(); ++j) {
      if (j == 0 || pool_key[static_cast<std::size_t>(held[j])] !=
                        pool_key[static_cast<std::size_t>(held[j - 1])])
        ++slot;
      slot_of[j] = slot;
    }
    slots_ = static_cast<std::size_t>(slot + 1);
    std::vector<std::size_t> order(held.size());
    for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t c) {
      return pool_rank[static_cast<std::size_t>(held[a])] <
             pool_rank[static_cast<std::size_t>(held[c])];
    });
    fold_pos_.resize(held.size());
    fold_slot_.resize(held.size());
    for (std::size_t j = 0; j < order.size(); ++j) {
      fold_pos_[j] = held[order[j]];
      fold_slot_[j] = slot_of[order[j]];
    }
  }

  const char *name() const override { return "butterfly"; }

  // Forward: the values travel (operator-independent, so ahead of the argument check).
  void start(const ExecContext &ctx, const void *data) override {
    const std::size_t eb = ctx.op.elem_bytes();
    pool_.resize(pool_size_ * eb);
    // memcpy's pointers must be valid even for 0 bytes: a rank with no keys has neither.
    if (data != nullptr && own_ > 0)
      std::memcpy(pool_.data(), data, static_cast<std::size_t>(own_) * eb);
    for (const Step &s : steps_) {
      if (s.recv_count == 0 && s.send.empty()) continue;
      pack(s.send, pool_.data(), eb);
      char *in = pool_.data() + static_cast<std::size_t>(s.recv_begin) * eb;
      transfer(ctx, s.peer, packed_.data(), static_cast<int>(s.send.size()), in, s.recv_count);
    }
  }
  void begin(const ExecContext &, void *) override {}
  void abandon() override {}

  // Fold each held key in rank order, then the results go back the way the values came.
  void end(const ExecContext &ctx, void *data) override {
    const std::size_t eb = ctx.op.elem_bytes();
    acc_.resize(slots_ * eb);
    ctx.op.fill_identity(acc_.data(), slots_);
    pack(fold_pos_, pool_.data(), eb);
    ctx.op.fold_indexed(acc_.data(), fold_slot_.data(), fold_slot_.size(), packed_.data());
    for (std::size_t j = 0; j < fold_pos_.size(); ++j)  // results in the pool's places
      std::memcpy(pool_.data() + static_cast<std::size_t>(fold_pos_[j]) * eb,
                  acc_.data() + static_cast<std::size_t>(fold_slot_[j]) * eb, eb);
    for (auto s = steps_.rbegin(); s != steps_.rend(); ++s) {
      if (s->recv_count == 0 && s->send.empty()) continue;
      const char *back = pool_.data() + static_cast<std::size_t>(s->recv_begin) * eb;
      packed_.resize(s->send.size() * eb);
      transfer(ctx, s->peer, back, s->recv_count, packed_.data(), static_cast<int>(s->send.size()));
      for (std::size_t j = 0; j < s->send.size(); ++j)
        std::memcpy(pool_.data() + static_cast<std::size_t>(s->send[j]) * eb,
                    packed_.data() + j * eb, eb);
    }
    if (own_ > 0) std::memcpy(data, pool_.data(), static_cast<std::size_t>(own_) * eb);
  }

  Traffic traffic() const override {
    // Sent: forward what it passes on, backward the results of what it received.
    double messages = 0, entries = 0;
    for (const Step &s : steps_) {
      messages += (s.send.empty() ? 0 : 1) + (s.recv_count > 0 ? 1 : 0);
      entries += static_cast<double>(s.send.size() + s.recv_count);
    }
    return Traffic{messages, entries};
  }
  std::size_t schedule_bytes() const override {
    std::size_t bytes = (fold_pos_.size() + fold_slot_.size()) * sizeof(std::int32_t);
    for (const Step &s : steps_) bytes += s.send.size() * sizeof(std::int32_t) + sizeof(Step);
    return bytes;
  }
  std::int64_t buffer_entries() const override {
    std::size_t largest = fold_pos_.size();
    for (const Step &s : steps_) largest = std::max(largest, s.send.size());
    return static_cast<std::int64_t>(pool_size_ + slots_ + largest);
  }

 private:
  void pack(const std::vector<std::int32_t> &at, const char *from, std::size_t eb) {
    packed_.resize(at.size() * eb);
    for (std::size_t j = 0; j < at.size(); ++j)
      std::memcpy(packed_.data() + j * eb, from + static_cast<std::size_t>(at[j]) * eb, eb);
  }
  // Sends `out` elements to peer and receives `in` elements from it (either may be 0).
  void transfer(const ExecContext &ctx, int peer, const void *out, int out_count, void *in,
                int in_count) {
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (in_count > 0)
      check_mpi(MPI_Irecv(in, in_count, ctx.type.get(), peer, tag_, comm_, &req[0]), "MPI_Irecv");
    if (out_count > 0)
      check_mpi(MPI_Isend(out, out_count, ctx.type.get(), peer, tag_, comm_, &req[1]), "MPI_Isend");
    check_mpi(MPI_Waitall(2, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

  MPI_Comm comm_;
  int tag_;
  std::int32_t own_ = 0;     // my distinct keys: pool positions 0 .. own_
  std::vector<Step> steps_;  // in forward order
  std::size_t pool_size_ = 0;
  std::size_t slots_ = 0;                           // keys this rank folds
  std::vector<std::int32_t> fold_pos_, fold_slot_;  // in rank order: pool position, slot
  std::vector<char> pool_, acc_, packed_;
};

enum Term { kExecute, kSetup, kMessages, kBytes, kTerms };

void rank_terms(const RankCost &in, double *out) {
  const double p = static_cast<double>(in.ranks);
  const double steps = butterfly_of(static_cast<int>(in.ranks), 0).steps();
  // Each step passes on about half of what the rank holds, which stays about u when the
  // keys spread evenly over the hash space (2^i ranks' values of 1/2^i of it).
  const double u = static_cast<double>(in.rank.n_unique);
  const double half = p > 1 ? u / 2.0 : 0.0;
  const double gamma_e = in.elem_bytes * in.cost.params().local_beta;
  const double step = in.cost.p2p(1.0, half * in.elem_bytes);
  // Per step: pack and receive half, forward and back; then copy in u, fold and place u.
  out[kExecute] = 2.0 * steps * step + (4.0 * steps * half + 4.0 * u) * gamma_e;
  // Setup: the same steps with (key, rank) pairs, then the sort of what is held.
  out[kSetup] = steps * in.cost.p2p(2.0, half * 16.0) +
                (steps * half * 16.0 + 8.0 * u * 16.0) * in.cost.params().local_beta;
  out[kMessages] = 2.0 * steps;
  out[kBytes] = 2.0 * steps * half * in.elem_bytes;
}

petacomm_xchg_prediction predict(const double *m, const GlobalCost &) {
  return {nullptr, m[kExecute], m[kSetup], m[kMessages], m[kBytes], 0, 0};
}

std::unique_ptr<Strategy> build(BuildContext &ctx) {
  return std::make_unique<ButterflyStrategy>(ctx);
}

}  // namespace

extern const XchgStrategy kButterflyStrategy{
    {"butterfly",
     "recursive halving over the keys' hash: every rank's values of a hash slice meet at one "
     "rank in log2 p rounds with one partner each, are folded there in rank order and go "
     "back the same way; 2 log2 p messages per rank whatever the sharing, so it wins where "
     "keys are shared with very many partners",
     ""},
    Discovery::kNone,
    all_holder_lists,
    kTerms,
    rank_terms,
    predict,
    always_a_candidate,
    build,
};

}  // namespace petacomm::xchg
