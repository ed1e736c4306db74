// Non-blocking and persistent requests: a posting is recorded when it completes (in any
// MPI_Wait*/MPI_Test*), with the posting call's time, the region it was posted in and, for
// receives, the bytes and source of the status.
//
// Handle values do not identify requests: Open MPI returns one shared handle for every
// request that completed at once (sends to MPI_PROC_NULL, small eager sends), and with
// MPI_THREAD_MULTIPLE a handle freed by one thread's MPI_Wait can be returned to another
// thread's MPI_Isend before the first thread has recorded its completion. So the pending
// requests are a multimap of handle -> postings, each with a serial number: a completion
// call claims one unclaimed posting per array slot before calling MPI, and after the call
// records exactly the postings it claimed that completed.
#include <cstdlib>
#include <cstring>

#include "handle_table.hpp"
#include "state.hpp"

namespace petacomm::prof {

namespace {

HandleTable<RequestInfo> g_reqs;
uint64_t g_serial = 0;

RequestInfo *find_posting(uintptr_t key, uint64_t serial) {
  return g_reqs.find(key, [serial](const RequestInfo &r) { return r.serial == serial; });
}

RequestInfo *find_unclaimed(uintptr_t key) {
  return g_reqs.find(key, [](const RequestInfo &r) { return !r.claimed; });
}

// Records one completed transfer of a claimed posting and releases its slot.
void record_completed(const RequestInfo &info, const MPI_Status *status) {
  uint64_t bytes = info.bytes;
  int peer = info.peer;
  if ((info.flags & kReqRecv) && status && status != MPI_STATUS_IGNORE) {
    bytes = status_bytes(status);  // before taking the lock: these take it themselves
    peer = peer_status(info.comm, status, MPI_ANY_SOURCE);
    if (peer == kPeerAny) peer = info.peer;
  }
  Lock lock;
  if (peer == kPeerProcNull) bytes = 0;
  RequestInfo *posting = find_posting(info.key, info.serial);
  if (info.flags & kReqPersistent) {
    if (posting) {
      posting->active = 0;
      posting->claimed = 0;
    }
    if (info.active && info.start_call >= 0)
      table_add_at(info.site, info.region, info.start_call, bytes, bytes, peer, 0);
    return;
  }
  if (posting) g_reqs.erase(posting);
  table_add_at(info.site, info.region, info.call, bytes, bytes, peer, info.post_ns);
}

}  // namespace

bool requests_init() { return g_reqs.init(g.settings.request_slots); }

void request_posted(int call, int start_call, MPI_Request request, uint64_t bytes, int peer,
                    uint64_t post_ns, unsigned flags, MPI_Comm comm) {
  Lock lock;
  Live &l = *g_hot.live;
  g.last_was_barrier = false;
  if (peer == kPeerProcNull) bytes = 0;
  const bool persistent = flags & kReqPersistent;
  // The *_init call itself moves nothing: counted now, with its message size.
  if (persistent) table_add_at(t_site, l.cur_region, call, bytes, 0, peer, post_ns);
  if (request == MPI_REQUEST_NULL) {
    if (!persistent) table_add_at(t_site, l.cur_region, call, bytes, bytes, peer, post_ns);
    return;
  }
  RequestInfo *slot = g_reqs.insert(handle_key(request));
  if (!slot) {
    // More pending requests than PETACOMM_PROF_REQUESTS: recorded now, with what is known.
    ++l.requests_untracked;
    if (!persistent) table_add_at(t_site, l.cur_region, call, bytes, bytes, peer, post_ns);
    return;
  }
  slot->serial = ++g_serial;
  slot->comm = comm;
  slot->bytes = bytes;
  slot->post_ns = persistent ? 0 : post_ns;
  slot->call = call;
  slot->start_call = start_call;
  slot->peer = peer;
  slot->site = t_site;
  slot->region = static_cast<unsigned short>(l.cur_region);
  slot->flags = static_cast<unsigned char>(flags);
}

void request_started(MPI_Request request, bool counted) {
  if (request == MPI_REQUEST_NULL) return;
  Lock lock;
  RequestInfo *info = find_unclaimed(handle_key(request));
  if (info && (info->flags & kReqPersistent)) {
    info->active = counted ? 1 : 0;
    info->site = t_site;  // an activation is counted under the site of its MPI_Start
    info->region = static_cast<unsigned short>(g_hot.live->cur_region);
  }
}

void request_freeing(MPI_Request request) {
  if (request == MPI_REQUEST_NULL) return;
  Lock lock;
  RequestInfo *info = find_unclaimed(handle_key(request));
  if (!info) return;
  // A request freed before completion still moves its data: count what was posted.
  if (!(info->flags & kReqPersistent))
    table_add_at(info->site, info->region, info->call, info->bytes, info->bytes, info->peer,
                 info->post_ns);
  else if (info->active && info->start_call >= 0)
    table_add_at(info->site, info->region, info->start_call, info->bytes, info->bytes, info->peer,
                 0);
  g_reqs.erase(info);
}

void requests_flush_incomplete() {
  Lock lock;
  Live &l = *g_hot.live;
  g_reqs.for_each([&l](RequestInfo &info) {
    if (info.flags & kReqPersistent) return;
    table_add_at(info.site, info.region, info.call, info.bytes, info.bytes, info.peer,
                 info.post_ns);
    ++l.requests_incomplete;
  });
}

// ---- completion calls ------------------------------------------------------------------

RequestClaims::RequestClaims(int count, const MPI_Request *requests) {
  if (count <= 0 || !requests) return;
  Lock lock;
  for (int i = 0; i < count; ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    RequestInfo *info = find_unclaimed(handle_key(requests[i]));
    if (!info) continue;
    if (tracked_ == kInline && items_ == inline_) {
      Item *heap = static_cast<Item *>(std::malloc(sizeof(Item) * static_cast<size_t>(count)));
      if (!heap) break;  // the others stay pending: flushed at finalize
      std::memcpy(heap, inline_, sizeof(inline_));
      items_ = heap;
    }
    info->claimed = 1;
    items_[tracked_] = Item{i, false, *info};
    if (info->flags & kReqRecv) needs_status_ = true;
    ++tracked_;
  }
}

RequestClaims::~RequestClaims() {
  if (tracked_ > 0) {
    Lock lock;
    for (int t = 0; t < tracked_; ++t) {
      if (items_[t].done) continue;
      if (RequestInfo *info = find_posting(items_[t].info.key, items_[t].info.serial))
        info->claimed = 0;
    }
  }
  if (items_ != inline_) std::free(items_);
}

void RequestClaims::finish(int index, const MPI_Status *status) {
  // Items are in increasing array index.
  int lo = 0, hi = tracked_;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (items_[mid].index < index)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == tracked_ || items_[lo].index != index || items_[lo].done) return;
  items_[lo].done = true;
  record_completed(items_[lo].info, status);
}

namespace {
bool ignored(const MPI_Status *s) { return s == MPI_STATUS_IGNORE || s == MPI_STATUSES_IGNORE; }
}  // namespace

Completions::Completions(int count, const MPI_Request *requests, MPI_Status *statuses, bool array)
    : claims_(count, requests), pass_(statuses), array_(array) {
  if (ignored(statuses) && claims_.needs_status() && count > 0) {
    if (!array) {
      pass_ = &one_;
    } else {
      own_ =
          static_cast<MPI_Status *>(std::malloc(sizeof(MPI_Status) * static_cast<size_t>(count)));
      if (own_) pass_ = own_;
    }
  }
}

Completions::~Completions() { std::free(own_); }

void Completions::finish(int index, int position) {
  const MPI_Status *status = ignored(pass_) ? nullptr : (array_ ? pass_ + position : pass_);
  claims_.finish(index, status);
}

void Completions::finish_all() {
  for (int t = 0; t < claims_.tracked(); ++t) finish(claims_.index_of(t), claims_.index_of(t));
}

}  // namespace petacomm::prof
