// node-aware: the ranks of a node hand their shared keys' values to the node's leader (its
// lowest rank), the leaders exchange one message per pair of nodes holding common keys, and
// each leader folds every key in rank order and returns the results to its ranks. Messages
// between nodes drop from one per pair of ranks sharing a key to one per pair of nodes.
//
// What travels between leaders: with partials (node_partials_allowed: nodes are consecutive
// rank ranges and the plan is not deterministic) one value per key, the fold of the node's
// holders; otherwise every holder's own value, so the leader folds exactly the sequence the
// other strategies fold (e (+) c_r1 (+) c_r2 ... in rank order: bitwise identical floats,
// and the rank-order result of a non-commutative operator whatever the rank placement).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "directory.hpp"
#include "error.hpp"
#include "node_sharing.hpp"
#include "registry.hpp"

namespace petacomm::xchg {
namespace {

constexpr int kTagUp = 501, kTagDown = 502, kTagLeaders = 503;

// One peer with the given value indices (none: an empty list).
PeerList single_peer(int peer, std::vector<std::int32_t> index) {
  PeerList list;
  list.begin.push_back(0);
  if (index.empty()) return list;
  list.ranks.push_back(peer);
  list.begin.push_back(static_cast<std::int64_t>(index.size()));
  list.index = std::move(index);
  return list;
}

std::int32_t index32(std::size_t i, const char *what) {
  return static_cast<std::int32_t>(to_int_count(i, what));
}

// Its own node communicators (not the plan creation's shared ones): its exchanges on them
// must never meet another plan's.
std::shared_ptr<const NodeTopology> node_layout(const BuildContext &ctx) {
  MpiWait wait(ctx.clock);
  return std::make_shared<NodeTopology>(ctx.comm, 0);
}

class NodeAware final : public Strategy {
 public:
  explicit NodeAware(const BuildContext &ctx)
      : nodes_(node_layout(ctx)), partials_(node_partials_allowed(*nodes_, ctx.deterministic)) {
    check_mpi(MPI_Comm_rank(ctx.comm, &me_), "MPI_Comm_rank");
    const int me = me_;
    const Sharing &sharing = *ctx.sharing;
    const std::vector<std::int64_t> &keys = ctx.index.keys();
    const int node = nodes_->node_of(me);
    // What the leader must know of my shared keys (ascending): the key, and, when I am its
    // lowest holder on this node, its holders (else 0 of them).
    std::vector<std::int64_t> record;
    std::vector<int> holders;
    for (const std::int32_t shared_key : sharing.shared) {
      const auto u = static_cast<std::size_t>(shared_key);
      PETACOMM_CHECK_INTERNAL(sharing.has_list(u), "node-aware built without the holders of key ",
                              keys[u]);
      shared_.push_back(index32(u, "node-aware: distinct keys"));
      holders_of(sharing, u, me, &holders);
      bool first_here = true;
      for (int h : holders) first_here = first_here && (nodes_->node_of(h) != node || h >= me);
      record.push_back(keys[u]);
      record.push_back(first_here ? static_cast<std::int64_t>(holders.size()) : 0);
      if (first_here) record.insert(record.end(), holders.begin(), holders.end());
    }
    const MPI_Comm node_comm = nodes_->node();
    const bool leader = nodes_->node_rank() == 0;
    const int count = to_int_count(record.size(), "node-aware: holder records");
    std::vector<int> counts(leader ? static_cast<std::size_t>(nodes_->node_ranks()) : 0);
    std::vector<int> displs(counts.size(), 0);
    std::vector<std::int64_t> gathered;
    {
      MpiWait wait(ctx.clock);
      check_mpi(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, node_comm),
                "MPI_Gather");
      std::size_t total = 0;
      for (std::size_t j = 0; j < counts.size(); ++j) {
        displs[j] = to_int_count(total, "node-aware: node's holder records");
        total += static_cast<std::size_t>(counts[j]);
      }
      gathered.resize(total);
      check_mpi(MPI_Gatherv(record.data(), count, MPI_INT64_T, gathered.data(), counts.data(),
                            displs.data(), MPI_INT64_T, 0, node_comm),
                "MPI_Gatherv");
    }
    if (leader) {
      build_leader(gathered, counts, displs, ctx.transport, ctx.clock, ctx.options.send_window);
    } else {
      up_ = std::make_unique<Exchange>(node_comm, single_peer(0, shared_), PeerList{{}, {0}, {}},
                                       Transport::kP2P, kTagUp, ctx.clock);
      down_ = std::make_unique<Exchange>(node_comm, PeerList{{}, {0}, {}}, single_peer(0, shared_),
                                         Transport::kP2P, kTagDown, ctx.clock);
    }
  }

  const char *name() const override { return "node-aware"; }
  std::string detail() const {
    return concat(
        nodes_->nodes(), nodes_->nodes() == 1 ? " node" : " nodes", " of up to ",
        nodes_->max_node_ranks(), nodes_->max_node_ranks() == 1 ? " rank" : " ranks",
        partials_ ? ", one partial per key and node" : ", every holder's value (rank-order fold)");
  }

  // The members' values go to the leader while the argument check is in flight (start);
  // the rest depends on the operator (end).
  void start(const ExecContext &ctx, const void *data) override { up_->start(data, ctx.type); }
  void begin(const ExecContext &, void *) override {}

  void end(const ExecContext &ctx, void *data) override {
    const ElementOp &op = ctx.op;
    const std::size_t eb = op.elem_bytes();
    if (!leader()) {
      down_->start(data, ctx.type);  // receives the results only
      up_->wait();
      down_->wait();
      copy_received(*down_, eb, data);
      return;
    }
    up_->wait();
    const std::size_t unions = union_keys();
    slots_.resize(slot_key_.size() * eb);
    union_.resize(unions * eb);
    // The node's values: into their slots, or (partials) into the local table first.
    char *contributions = slots_.data();
    if (partials_) {
      local_.resize(local_key_.size() * eb);
      contributions = local_.data();
    }
    copy_received(*up_, eb, contributions);
    char *mine = static_cast<char *>(data);
    for (std::size_t i = 0; i < shared_.size(); ++i)
      std::memcpy(contributions + static_cast<std::size_t>(own_slot_[i]) * eb,
                  mine + static_cast<std::size_t>(shared_[i]) * eb, eb);
    if (partials_) {  // the node's partial of each key, in rank order, into its node slot
      op.fill_identity(union_.data(), unions);
      op.fold_indexed(union_.data(), local_key_.data(), local_key_.size(), local_.data());
      for (std::size_t g = 0; g < unions; ++g)
        std::memcpy(slots_.data() + static_cast<std::size_t>(node_slot_[g]) * eb,
                    union_.data() + g * eb, eb);
    }
    if (between_) {
      between_->start(slots_.data(), ctx.type);
      between_->wait();
      copy_received(*between_, eb, slots_.data());
    }
    // Every key: e (+) its slots in order (holders by rank, or nodes by node).
    op.fill_identity(union_.data(), unions);
    op.fold_indexed(union_.data(), slot_key_.data(), slot_key_.size(), slots_.data());
    down_->start(union_.data(), ctx.type);
    for (std::size_t i = 0; i < shared_.size(); ++i)
      std::memcpy(mine + static_cast<std::size_t>(shared_[i]) * eb,
                  union_.data() + static_cast<std::size_t>(own_union_[i]) * eb, eb);
    down_->wait();
  }

  void abandon() override {
    if (up_->started()) up_->wait();
  }

  Traffic traffic() const override {
    Traffic t;
    t.messages = static_cast<double>(up_->messages() + down_->messages());
    t.entries = static_cast<double>(up_->entries() + down_->entries());
    t.inter_node_messages = 0;
    if (between_) {
      t.messages += static_cast<double>(between_->messages());
      t.entries += static_cast<double>(between_->entries());
      t.inter_node_messages = static_cast<double>(between_->messages());
    }
    return t;
  }
  std::size_t schedule_bytes() const override {
    std::size_t b = up_->schedule_bytes() + down_->schedule_bytes() + shared_.capacity() * 4 +
                    (own_slot_.capacity() + own_union_.capacity() + slot_key_.capacity() +
                     local_key_.capacity() + node_slot_.capacity()) *
                        4;
    if (between_) b += between_->schedule_bytes();
    return b;
  }
  std::int64_t buffer_entries() const override {
    std::int64_t e = up_->buffer_entries() + down_->buffer_entries();
    if (leader())
      e += static_cast<std::int64_t>(slot_key_.size() + local_key_.size() + union_keys());
    if (between_) e += between_->buffer_entries();
    return e;
  }

 private:
  bool leader() const { return nodes_->node_rank() == 0; }
  std::size_t union_keys() const { return node_slot_.size(); }

  // One holder record as the leader reads it: member j's i-th shared key.
  struct Record {
    std::int64_t key;
    int member;
    std::int32_t i;
    std::size_t holders_at;  // into the gathered records; holders count 0: not the first here
    std::int64_t holders;
  };

  void build_leader(const std::vector<std::int64_t> &gathered, const std::vector<int> &counts,
                    const std::vector<int> &displs, Transport transport, SetupClock *clock,
                    int send_window) {
    const int node = nodes_->node_of(me_);
    const std::vector<int> &members = nodes_->members(node);
    std::vector<Record> records;
    std::vector<std::size_t> shared_of(members.size(), 0);
    for (std::size_t j = 0; j < members.size(); ++j) {
      std::size_t at = static_cast<std::size_t>(displs[j]);
      const std::size_t end = at + static_cast<std::size_t>(counts[j]);
      std::int32_t i = 0;
      while (at < end) {
        const std::int64_t holders = gathered[at + 1];
        records.push_back({gathered[at], static_cast<int>(j), i++, at + 2, holders});
        at += 2 + static_cast<std::size_t>(holders);
      }
      shared_of[j] = static_cast<std::size_t>(i);
    }
    std::sort(records.begin(), records.end(), [](const Record &a, const Record &b) {
      return a.key != b.key ? a.key < b.key : a.member < b.member;
    });
    // Per member: the slot (or local-table entry) of each of its values, and its key's
    // position in the node's union of shared keys.
    std::vector<std::vector<std::int32_t>> slot_of(members.size()), union_of(members.size());
    for (std::size_t j = 0; j < members.size(); ++j) {
      slot_of[j].resize(shared_of[j]);
      union_of[j].resize(shared_of[j]);
    }
    std::vector<std::pair<int, std::int32_t>> sends, recvs;  // (node, slot)
    std::vector<int> remote;
    for (std::size_t g0 = 0; g0 < records.size();) {
      std::size_t g1 = g0;
      while (g1 < records.size() && records[g1].key == records[g0].key) ++g1;
      const Record &first = records[g0];  // the lowest member holding the key knows its holders
      PETACOMM_CHECK_INTERNAL(first.holders >= 2, "node-aware: key ", first.key,
                              " reached its leader without its holders");
      const auto g = index32(node_slot_.size(), "node-aware: node's shared keys");
      const std::int64_t *holders = gathered.data() + first.holders_at;
      std::size_t next_local = g0;  // records of this key's local holders, in rank order
      remote.clear();
      std::int32_t node_slot = -1;
      for (std::int64_t h = 0; h < first.holders; ++h) {
        const int rank = static_cast<int>(holders[h]);
        const int n = nodes_->node_of(rank);
        if (n != node) {
          if (partials_ && !remote.empty() && remote.back() == n) continue;  // one slot per node
          if (remote.empty() || remote.back() != n) remote.push_back(n);
          const auto slot = index32(slot_key_.size(), "node-aware: slots");
          slot_key_.push_back(g);
          recvs.emplace_back(n, slot);
          continue;
        }
        PETACOMM_CHECK_INTERNAL(
            next_local < g1 &&
                members[static_cast<std::size_t>(records[next_local].member)] == rank,
            "node-aware: holders of key ", first.key, " disagree");
        const Record &r = records[next_local++];
        const auto j = static_cast<std::size_t>(r.member);
        union_of[j][static_cast<std::size_t>(r.i)] = g;
        if (partials_) {
          slot_of[j][static_cast<std::size_t>(r.i)] =
              index32(local_key_.size(), "node-aware: local values");
          local_key_.push_back(g);
          if (node_slot < 0) {
            node_slot = index32(slot_key_.size(), "node-aware: slots");
            slot_key_.push_back(g);
          }
        } else {
          const auto slot = index32(slot_key_.size(), "node-aware: slots");
          slot_of[j][static_cast<std::size_t>(r.i)] = slot;
          slot_key_.push_back(g);
          if (node_slot < 0) node_slot = slot;
        }
      }
      PETACOMM_CHECK_INTERNAL(next_local == g1, "node-aware: holders of key ", first.key,
                              " disagree");
      node_slot_.push_back(node_slot);
      // To each other node holding the key: the node's partial, or each local holder's value.
      std::sort(remote.begin(), remote.end());
      remote.erase(std::unique(remote.begin(), remote.end()), remote.end());
      for (int n : remote) {
        if (partials_) {
          sends.emplace_back(n, node_slot);
        } else {
          for (std::size_t k = g0; k < g1; ++k)
            sends.emplace_back(n, slot_of[static_cast<std::size_t>(records[k].member)]
                                         [static_cast<std::size_t>(records[k].i)]);
        }
      }
      g0 = g1;
    }
    // Without partials the slots of a key follow its holders' rank order, which interleaves
    // nodes when nodes are not consecutive: recvs from one node are in rank order per key,
    // which is what that node sends (its holders of the key in rank order).
    std::vector<std::pair<int, std::int32_t>> up, down;
    for (std::size_t j = 1; j < members.size(); ++j)
      for (std::size_t i = 0; i < shared_of[j]; ++i) {
        up.emplace_back(static_cast<int>(j), slot_of[j][i]);
        down.emplace_back(static_cast<int>(j), union_of[j][i]);
      }
    own_slot_ = std::move(slot_of[0]);
    own_union_ = std::move(union_of[0]);
    const MPI_Comm node_comm = nodes_->node();
    up_ = std::make_unique<Exchange>(node_comm, PeerList{{}, {0}, {}},
                                     group_by_peer(std::move(up), nodes_->node_ranks()),
                                     Transport::kP2P, kTagUp, clock);
    down_ =
        std::make_unique<Exchange>(node_comm, group_by_peer(std::move(down), nodes_->node_ranks()),
                                   PeerList{{}, {0}, {}}, Transport::kP2P, kTagDown, clock);
    between_ = std::make_unique<Exchange>(nodes_->leaders(),
                                          group_by_peer(std::move(sends), nodes_->nodes()),
                                          group_by_peer(std::move(recvs), nodes_->nodes()),
                                          transport, kTagLeaders, clock, send_window);
  }

  std::shared_ptr<const NodeTopology> nodes_;
  bool partials_;
  int me_ = 0;
  std::vector<std::int32_t> shared_;               // my distinct keys with d >= 2, ascending
  std::unique_ptr<Exchange> up_, down_, between_;  // between_: leaders only
  // Leader only: per own shared key its slot (or local entry) and union position; per slot
  // its union key; per local entry its union key; per union key its node's slot.
  std::vector<std::int32_t> own_slot_, own_union_, slot_key_, local_key_, node_slot_;
  std::vector<char> slots_, local_, union_;
};

enum Term { kExecute, kSetup, kMessages, kBytes, kKnown, kTerms };

void rank_terms(const RankCost &in, double *out) {
  const petacomm_xchg_rank_stats &r = in.rank;
  const CostModel &cost = in.cost;
  const double eb = in.elem_bytes, gamma_e = eb * cost.params().local_beta;
  const double own = static_cast<double>(r.n_shared);
  // Elements read and written: every rank fills its u results and folds its own values in
  // (3u); a member packs its shared values and copies their results in (4 n_s).
  const double everyone = 3.0 * static_cast<double>(r.n_unique);
  out[kKnown] = r.nodes > 0 ? 1.0 : 0.0;
  if (r.node_leader == 0) {
    // My shared values to the leader and their results back (one message each way).
    const double messages = own > 0 ? 1.0 : 0.0;
    out[kExecute] = 2.0 * cost.p2p(messages, own * eb) + (everyone + 4.0 * own) * gamma_e;
    out[kMessages] = messages;
    out[kBytes] = own * eb;
    out[kSetup] = directory_setup_time(in);
    return;
  }
  const double members = static_cast<double>(r.node_members);
  const double member_values = static_cast<double>(r.node_member_values);
  const double unions = static_cast<double>(r.node_union_keys);
  const double partners = static_cast<double>(r.node_partners);
  const double sent = static_cast<double>(r.node_send_values);
  const double received = static_cast<double>(r.node_recv_values);
  const double volume = std::max(sent, received) * eb;
  // Between leaders on the plan's transport (MPI_Alltoallv: every other leader).
  const double leaders = in.alltoallv
                             ? static_cast<double>(r.nodes - 1) * cost.params().alltoallv_alpha +
                                   volume * cost.params().alltoallv_beta
                             : cost.p2p(partners, volume);
  // Members' values in and the results out, each one message per member.
  const double node = 2.0 * cost.p2p(members, member_values * eb);
  // The leader places the node's values (2 per value), folds them into partials (2 per
  // value, fill and copy out 3 U), packs what leaves (2 S), places what arrives (2 R), fills
  // and folds every key's slots (U + 2 (U + R)), packs the members' results and copies its
  // own (2 per value): 6 (node values) + 6 U + 2 S + 4 R (without partials less: no
  // partials, and the slots are the values themselves).
  const double local =
      (everyone + 6.0 * (member_values + own) + 6.0 * unions + 2.0 * sent + 4.0 * received) *
      gamma_e;
  out[kExecute] = node + leaders + local;
  out[kMessages] = members + partners;
  out[kBytes] = (member_values + sent) * eb;
  // Discovery, then the members' keys and holders gathered (about 2 + d integers per key)
  // and sorted at the leader.
  out[kSetup] = directory_setup_time(in) + cost.p2p(members, 8.0 * (member_values * 3.0)) +
                (member_values + own) * 8.0 * std::log2(std::max(2.0, member_values + own)) *
                    cost.params().local_beta;
}

petacomm_xchg_prediction predict(const double *m, const GlobalCost &) {
  if (m[kKnown] == 0) {
    const double unknown = std::numeric_limits<double>::quiet_NaN();
    return {nullptr, unknown, unknown, unknown, unknown, 0, 0};
  }
  return {nullptr, m[kExecute], m[kSetup], m[kMessages], m[kBytes], 0, 0};
}

const char *when_nodes_known(const petacomm_xchg_prediction &p) {
  return std::isnan(p.execute_seconds) ? "the plan did not look at nodes (no node statistics)" : "";
}

std::unique_ptr<Strategy> build(BuildContext &ctx) {
  auto built = std::make_unique<NodeAware>(ctx);
  ctx.detail = built->detail();
  return built;
}

}  // namespace

extern const XchgStrategy kNodeAwareStrategy{
    {"node-aware",
     "shared keys reduced at one leader per node (PETACOMM_NODE_SIZE: virtual nodes), one "
     "message per pair of nodes between leaders, results handed back inside the node; wins "
     "when many ranks of a node each share keys with many ranks (latency bound)",
     "transport deterministic send_window"},
    Discovery::kDirectory,
    all_holder_lists,
    kTerms,
    rank_terms,
    predict,
    when_nodes_known,
    build,
    true,  // needs_nodes: the plan computes the topology and the node statistics
};

}  // namespace petacomm::xchg
