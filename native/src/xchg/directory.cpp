#include "directory.hpp"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "error.hpp"
#include "mpi_support.hpp"
#include "recycled.hpp"
#include "send_window.hpp"
#include "sorted_runs.hpp"

namespace petacomm::xchg {
namespace {
constexpr std::uint64_t kOwnerSalt = 0x5bd1e9955bd1e995ULL;
}  // namespace

Directory::Directory(MPI_Comm comm, int tag_base, const std::vector<std::int64_t> *keys,
                     SetupClock *clock, int send_window)
    : comm_(comm), tag_base_(tag_base), clock_(clock), send_window_(send_window) {
  check_mpi(MPI_Comm_rank(comm, &me_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  static const std::vector<std::int64_t> none;
  u_count_ = keys ? keys->size() : 0;
  incoming_ = send_keys_home(keys ? *keys : none);
}

void Directory::resolve(int list_limit) {
  build_home_table(std::move(incoming_));
  incoming_.clear();
  std::vector<std::vector<std::int32_t>> received = exchange_replies(make_replies(list_limit));
  decode_replies(received, u_count_, list_limit);
}

std::vector<Message> Directory::send_keys_home(const std::vector<std::int64_t> &keys) {
  // My keys to their homes, ascending within each home (keys are ascending in index order).
  const std::size_t u_count = keys.size();
  const auto p = static_cast<std::uint64_t>(size_);
  std::vector<Message> outgoing;
  if (static_cast<std::size_t>(size_) <= u_count) {
    // A counting sort by home (O(p) <= O(keys) memory): count, size each message exactly,
    // then fill in index order, which keeps every home's keys ascending.
    std::vector<std::uint32_t> home_of(u_count);
    std::vector<std::uint32_t> count(static_cast<std::size_t>(size_), 0);
    for (std::size_t u = 0; u < u_count; ++u) {
      const std::uint32_t h = hash_to_range(mix64(static_cast<std::uint64_t>(keys[u])), p);
      home_of[u] = h;
      ++count[h];
    }
    std::vector<std::uint32_t> slot(static_cast<std::size_t>(size_), 0);
    for (int h = 0; h < size_; ++h) {
      if (count[static_cast<std::size_t>(h)] == 0) continue;
      slot[static_cast<std::size_t>(h)] = static_cast<std::uint32_t>(homes_.size());
      homes_.push_back(h);
    }
    keys_at_home_.resize(homes_.size());
    outgoing.resize(homes_.size());
    std::vector<std::int64_t *> key_at(homes_.size());
    std::vector<std::int32_t *> index_at(homes_.size());
    for (std::size_t i = 0; i < homes_.size(); ++i) {
      const std::size_t n = count[static_cast<std::size_t>(homes_[i])];
      outgoing[i].rank = homes_[i];
      outgoing[i].data.resize(n);
      keys_at_home_[i].resize(n);
      key_at[i] = outgoing[i].data.data();
      index_at[i] = keys_at_home_[i].data();
    }
    for (std::size_t u = 0; u < u_count; ++u) {
      const std::uint32_t i = slot[home_of[u]];
      *key_at[i]++ = keys[u];
      *index_at[i]++ = static_cast<std::int32_t>(u);
    }
  } else {
    // Fewer keys than ranks: sort (home, index) pairs packed in one integer.
    std::vector<std::uint64_t> by_home(u_count);
    for (std::size_t u = 0; u < u_count; ++u)
      by_home[u] = std::uint64_t{hash_to_range(mix64(static_cast<std::uint64_t>(keys[u])), p)}
                       << 32 |
                   static_cast<std::uint64_t>(u);
    std::sort(by_home.begin(), by_home.end());
    for (std::size_t j = 0; j < by_home.size(); ++j) {
      const int home = static_cast<int>(by_home[j] >> 32);
      const auto u = static_cast<std::int32_t>(by_home[j] & 0xffffffffU);
      if (j == 0 || home != homes_.back()) {
        homes_.push_back(home);
        keys_at_home_.emplace_back();
        outgoing.push_back(Message{home, {}});
      }
      keys_at_home_.back().push_back(u);
      outgoing.back().data.push_back(keys[static_cast<std::size_t>(u)]);
    }
  }
  return nbx_exchange(comm_, tag_base_ + kTagKeys, tag_base_ + kTagBarrier, std::move(outgoing),
                      traffic_, clock_, send_window_);
}

void Directory::build_home_table(std::vector<Message> incoming) {
  // Every (key, holder) pair homed here, sorted by key then holder. When the keys span at
  // most 8 values per pair (dense key sets, as pixels are), a counting sort over the span
  // does it in two linear passes. Otherwise: each message is ascending by key, so with the
  // messages in holder order the table is a row of sorted runs, and merging them pairwise
  // (stable, ceil(log2 runs) linear passes) sorts it. Either way a key's holders ascend.
  std::sort(incoming.begin(), incoming.end(),
            [](const Message &a, const Message &b) { return a.rank < b.rank; });
  std::size_t total = 0;
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const Message &m : incoming) {
    sources_.push_back(m.rank);
    if (m.data.empty()) continue;
    total += m.data.size();
    lo = std::min(lo, m.data.front());
    hi = std::max(hi, m.data.back());
  }
  table_ = Recycled<HomeEntry>::take(total);
  table_.resize(total);
  const auto entry = [](std::int64_t key, std::size_t j, std::size_t s) {
    return HomeEntry{key, static_cast<std::int32_t>(j), static_cast<std::int32_t>(s)};
  };
  // Keys are in [0, 2^63): the span fits.
  if (total > 0 && dense_span(lo, hi, total)) {
    std::vector<std::uint32_t> start(static_cast<std::size_t>(hi - lo) + 2, 0);
    for (const Message &m : incoming)
      for (std::int64_t key : m.data) ++start[static_cast<std::size_t>(key - lo) + 1];
    for (std::size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    for (std::size_t s = 0; s < incoming.size(); ++s) {
      const std::vector<std::int64_t> &keys = incoming[s].data;
      for (std::size_t j = 0; j < keys.size(); ++j)
        table_[start[static_cast<std::size_t>(keys[j] - lo)]++] = entry(keys[j], j, s);
    }
    return;
  }
  std::vector<std::size_t> bounds = {0};
  HomeEntry *out = table_.data();
  for (std::size_t s = 0; s < incoming.size(); ++s) {
    const std::vector<std::int64_t> &keys = incoming[s].data;
    for (std::size_t j = 0; j < keys.size(); ++j) *out++ = entry(keys[j], j, s);
    std::vector<std::int64_t>().swap(incoming[s].data);
    bounds.push_back(static_cast<std::size_t>(out - table_.data()));
  }
  merge_sorted_runs(table_, std::move(bounds),
                    [](const HomeEntry &a, const HomeEntry &b) { return a.key < b.key; });
}

std::vector<std::vector<std::int32_t>> Directory::make_replies(int list_limit) {
  // Per holder, for each of its shared keys here in the order it sent them: the key's
  // position in that message, d, the owner and (when listed) the other holders. A key held
  // once is left out: its holder owns it alone, which is what it assumes unless told
  // otherwise, so most of a reply's bytes and of both sides' work go to shared keys only.
  // The shared keys' runs are found first, to size every reply exactly.
  const auto listed = [list_limit](std::size_t d) {
    return static_cast<std::int64_t>(d) <= list_limit;
  };
  const auto owner_entry = [this](std::size_t g, std::size_t d) {
    return g + mix64(static_cast<std::uint64_t>(table_[g].key) ^ kOwnerSalt) % d;
  };
  // The shared keys' runs, found in one pass without a branch on where runs end (whether a
  // key is shared is as good as random): entry j begins one when it differs from the entry
  // before and equals the one after, ends one when the reverse. Begins are kept at even
  // slots, ends at odd ones (at most n / 2 runs); a slot not kept is written over.
  const std::size_t n = table_.size();
  std::vector<std::size_t> runs(n + 2);
  std::size_t distinct = 0, shared = 0, ends = 0;
  bool same_as_previous = false;
  for (std::size_t j = 0; j < n; ++j) {
    const bool same_as_next = j + 1 < n && table_[j + 1].key == table_[j].key;
    distinct += !same_as_previous;
    runs[2 * shared] = j;
    shared += !same_as_previous & same_as_next;
    runs[2 * ends + 1] = j + 1;
    ends += same_as_previous & !same_as_next;
    same_as_previous = same_as_next;
  }
  histogram_[0] += static_cast<std::int64_t>(distinct - shared);
  std::vector<std::size_t> sizes(sources_.size(), 0);
  for (std::size_t r = 0; r < shared; ++r) {
    const std::size_t g = runs[2 * r], end = runs[2 * r + 1], d = end - g;
    histogram_[multiplicity_bucket(static_cast<std::int64_t>(d))] += 1;
    const std::size_t each = 3 + (listed(d) ? d - 1 : 0);
    for (std::size_t j = g; j < end; ++j) sizes[static_cast<std::size_t>(table_[j].source)] += each;
    if (!listed(d))  // the owner always gets the list
      sizes[static_cast<std::size_t>(table_[owner_entry(g, d)].source)] += d - 1;
  }
  std::vector<std::vector<std::int32_t>> replies(sources_.size());
  std::vector<std::int32_t *> at(sources_.size());
  for (std::size_t s = 0; s < sources_.size(); ++s) {
    replies[s].resize(sizes[s]);
    at[s] = replies[s].data();
  }
  for (std::size_t r = 0; r < shared; ++r) {
    const std::size_t g = runs[2 * r], end = runs[2 * r + 1], d = end - g;
    const std::size_t owner_at = owner_entry(g, d);
    const int owner = sources_[static_cast<std::size_t>(table_[owner_at].source)];
    for (std::size_t j = g; j < end; ++j) {
      std::int32_t *&out = at[static_cast<std::size_t>(table_[j].source)];
      *out++ = table_[j].position;
      *out++ = static_cast<std::int32_t>(d);
      *out++ = owner;
      if (listed(d) || j == owner_at)
        for (std::size_t q = g; q < end; ++q)
          if (q != j) *out++ = sources_[static_cast<std::size_t>(table_[q].source)];
    }
  }
  return replies;
}

std::vector<std::vector<std::int32_t>> Directory::exchange_replies(
    std::vector<std::vector<std::int32_t>> replies) {
  std::vector<int> dest;  // the sources other than me, ascending (positions in replies: at)
  std::vector<std::size_t> at;
  std::vector<std::int32_t> self_reply;
  for (std::size_t s = 0; s < sources_.size(); ++s) {
    if (sources_[s] == me_) {
      self_reply = std::move(replies[s]);
      continue;
    }
    to_int_count(replies[s].size(), "directory reply");
    dest.push_back(sources_[s]);
    at.push_back(s);
    traffic_.messages += 1;
    traffic_.bytes += static_cast<std::int64_t>(replies[s].size() * 4);
  }
  // Windowed sends are synchronous: one completes (freeing its slot) once matched, not as
  // soon as an eager message is buffered.
  const bool windowed = window_binds(send_window_, dest.size());
  const std::vector<std::uint32_t> order = posting_order(dest, me_, size_, send_window_);
  const auto post = [&](std::uint32_t j, MPI_Request *request) {
    const std::vector<std::int32_t> &reply = replies[at[j]];
    check_mpi((windowed ? MPI_Issend : MPI_Isend)(reply.data(), static_cast<int>(reply.size()),
                                                  MPI_INT32_T, dest[j], tag_base_ + kTagReply,
                                                  comm_, request),
              windowed ? "MPI_Issend" : "MPI_Isend");
  };
  SendWindow sends(order, send_window_);
  sends.start(post);
  // One reply per home I sent keys to (homes_ ascending), on the private communicator:
  // probe, then receive. While sends wait for their turn the probe must not block (the
  // homes may be waiting for this rank's replies to post theirs).
  std::vector<std::vector<std::int32_t>> received(homes_.size());
  std::size_t pending = homes_.size();
  const auto mine = std::lower_bound(homes_.begin(), homes_.end(), me_);
  if (mine != homes_.end() && *mine == me_) {
    received[static_cast<std::size_t>(mine - homes_.begin())] = std::move(self_reply);
    --pending;
  }
  MpiWait wait(clock_);
  while (pending > 0) {
    int found = 1;
    MPI_Status status;
    if (sends.done())
      check_mpi(MPI_Probe(MPI_ANY_SOURCE, tag_base_ + kTagReply, comm_, &status), "MPI_Probe");
    else
      check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, tag_base_ + kTagReply, comm_, &found, &status),
                "MPI_Iprobe");
    if (!found) {
      sends.progress(post, false);
      sched_yield();
      continue;
    }
    const auto home = std::lower_bound(homes_.begin(), homes_.end(), status.MPI_SOURCE);
    PETACOMM_CHECK_INTERNAL(home != homes_.end() && *home == status.MPI_SOURCE,
                            "a directory reply from rank ", status.MPI_SOURCE,
                            ", which homes none of my keys");
    std::vector<std::int32_t> &reply = received[static_cast<std::size_t>(home - homes_.begin())];
    int count = 0;
    check_mpi(MPI_Get_count(&status, MPI_INT32_T, &count), "MPI_Get_count");
    reply.resize(static_cast<std::size_t>(count));
    check_mpi(MPI_Recv(reply.data(), count, MPI_INT32_T, status.MPI_SOURCE, tag_base_ + kTagReply,
                       comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
    reply_ints_ += count;
    --pending;
  }
  sends.finish(post);
  return received;
}

void Directory::decode_replies(const std::vector<std::vector<std::int32_t>> &received,
                               std::size_t u_count, int list_limit) {
  // Every key starts as held here alone; the replies name the shared ones by their position
  // in the message sent home (ascending), with d, the owner and the other holders when
  // listed. The lists are copied in a second pass, once their offsets are known.
  sharing_.multiplicity = Recycled<std::int32_t>::take(u_count);
  sharing_.multiplicity.assign(u_count, 1);
  sharing_.owner = Recycled<std::int32_t>::take(u_count);
  sharing_.owner.assign(u_count, me_);
  sharing_.list_begin = Recycled<std::int64_t>::take(u_count + 1);
  sharing_.list_begin.assign(u_count + 1, 0);
  std::size_t shared_count = 0;
  struct Listed {
    std::int32_t u;
    std::int32_t home;  // index into received
    std::size_t at;     // offset of the list in that reply
  };
  std::vector<Listed> lists;
  std::int32_t *multiplicity = sharing_.multiplicity.data(), *owner = sharing_.owner.data();
  std::int64_t *length = sharing_.list_begin.data() + 1;  // list lengths, summed below
  for (std::size_t h = 0; h < homes_.size(); ++h) {
    const std::vector<std::int32_t> &r = received[h];
    const std::vector<std::int32_t> &sent = keys_at_home_[h];
    std::size_t at = 0;
    std::int64_t last = -1;
    while (at < r.size()) {
      PETACOMM_CHECK_INTERNAL(at + 3 <= r.size(), "short directory reply from rank ", homes_[h]);
      const std::int32_t position = r[at], d = r[at + 1], o = r[at + 2];
      PETACOMM_CHECK_INTERNAL(
          position > last && static_cast<std::size_t>(position) < sent.size() && d >= 2,
          "directory reply from rank ", homes_[h], ": key position ", position, " with d = ", d,
          " after position ", last, " of ", sent.size());
      last = position;
      at += 3;
      ++shared_count;
      const std::int32_t u = sent[static_cast<std::size_t>(position)];
      multiplicity[u] = d;
      owner[u] = o;
      if (d <= list_limit || o == me_) {
        PETACOMM_CHECK_INTERNAL(at + static_cast<std::size_t>(d - 1) <= r.size(),
                                "short directory reply from rank ", homes_[h]);
        lists.push_back(Listed{u, static_cast<std::int32_t>(h), at});
        length[u] = d - 1;
        at += static_cast<std::size_t>(d - 1);
      }
    }
  }
  // List offsets and the shared keys in one pass, through plain pointers and without a
  // branch on d (which is as good as random): every key is written at the cursor, which
  // moves past the shared ones only (one spare slot for the keys after the last).
  sharing_.shared.resize(shared_count + 1);
  std::int64_t *list_begin = sharing_.list_begin.data();
  std::int32_t *shared = sharing_.shared.data();
  std::int64_t offset = 0;  // in a register: summing in place chains every key's store and load
  for (std::size_t u = 0; u < u_count; ++u) {
    offset += list_begin[u + 1];
    list_begin[u + 1] = offset;
    *shared = static_cast<std::int32_t>(u);
    shared += multiplicity[u] >= 2 ? 1 : 0;
  }
  sharing_.shared.pop_back();
  sharing_.list_ranks.resize(static_cast<std::size_t>(sharing_.list_begin[u_count]));
  for (const Listed &l : lists) {
    const std::int32_t *from = received[static_cast<std::size_t>(l.home)].data() + l.at;
    std::copy(from, from + (multiplicity[l.u] - 1),
              sharing_.list_ranks.begin() + sharing_.list_begin[static_cast<std::size_t>(l.u)]);
  }
}

std::int64_t Directory::assign_hubs(int threshold) {
  // Number this home's hub keys, offset by the hub keys of lower homes.
  std::int64_t local_hubs = 0;
  for_each_key([&](std::size_t g, std::size_t end) {
    if (static_cast<int>(end - g) > threshold) ++local_hubs;
  });
  std::int64_t offset = 0, total = 0;
  {
    MpiWait wait(clock_);
    check_mpi(MPI_Exscan(&local_hubs, &offset, 1, MPI_INT64_T, MPI_SUM, comm_), "MPI_Exscan");
    check_mpi(MPI_Allreduce(&local_hubs, &total, 1, MPI_INT64_T, MPI_SUM, comm_), "MPI_Allreduce");
  }
  if (me_ == 0) offset = 0;

  std::vector<std::vector<std::int64_t>> numbers(sources_.size());
  std::int64_t next = offset;
  for_each_key([&](std::size_t g, std::size_t end) {
    if (static_cast<int>(end - g) <= threshold) return;
    for (std::size_t j = g; j < end; ++j) numbers[table_[j].source].push_back(next);
    ++next;
  });
  std::vector<MPI_Request> sends;
  std::vector<std::int64_t> self_numbers;
  for (std::size_t s = 0; s < sources_.size(); ++s) {
    if (numbers[s].empty()) continue;
    if (sources_[s] == me_) {
      self_numbers = std::move(numbers[s]);
      continue;
    }
    MPI_Request req;
    check_mpi(MPI_Isend(numbers[s].data(), to_int_count(numbers[s].size(), "hub numbers"),
                        MPI_INT64_T, sources_[s], tag_base_ + kTagHub, comm_, &req),
              "MPI_Isend");
    sends.push_back(req);
  }
  sharing_.hub_index.assign(sharing_.keys(), -1);
  for (std::size_t h = 0; h < homes_.size(); ++h) {
    std::vector<std::int32_t> mine;
    for (std::int32_t u : keys_at_home_[h])
      if (sharing_.multiplicity[u] > threshold) mine.push_back(u);
    if (mine.empty()) continue;
    std::vector<std::int64_t> got;
    if (homes_[h] == me_) {
      got = std::move(self_numbers);
    } else {
      got.resize(mine.size());
      MpiWait wait(clock_);
      check_mpi(MPI_Recv(got.data(), static_cast<int>(got.size()), MPI_INT64_T, homes_[h],
                         tag_base_ + kTagHub, comm_, MPI_STATUS_IGNORE),
                "MPI_Recv");
    }
    PETACOMM_CHECK_INTERNAL(got.size() == mine.size(), "hub numbers from rank ", homes_[h], ": ",
                            got.size(), " for ", mine.size(), " hub keys");
    for (std::size_t j = 0; j < mine.size(); ++j) sharing_.hub_index[mine[j]] = got[j];
  }
  MpiWait wait(clock_);
  check_mpi(MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall");
  return total;
}

Directory::~Directory() {
  release_home_table();
  Recycled<std::int32_t>::give(std::move(sharing_.multiplicity));
  Recycled<std::int32_t>::give(std::move(sharing_.owner));
  Recycled<std::int64_t>::give(std::move(sharing_.list_begin));
}

void Directory::release_home_table() {
  Recycled<HomeEntry>::give(std::move(table_));
  std::vector<HomeEntry>().swap(table_);
  std::vector<int>().swap(sources_);
  std::vector<int>().swap(homes_);
  std::vector<std::vector<std::int32_t>>().swap(keys_at_home_);
}

}  // namespace petacomm::xchg
