// Memory ordering (C++ atomics on the shared window; all flags are lock-free, so address-free
// and valid between processes):
//  - slot: the sender writes header and payload with plain stores, then state = FULL with
//    release; the receiver loads state with acquire, so a FULL slot's contents are visible.
//    The receiver reads the payload, then state = EMPTY with release; the sender loads EMPTY
//    with acquire before writing again, so the receiver's reads happen before the new
//    writes (no torn message).
//  - descriptor ring: the receiver writes the entry, then tail with release; the sender
//    loads tail with acquire. The sender copies the entry out, then head with release; the
//    receiver loads head with acquire before reusing the entry.
//  - put: the sender copies into the receiver's heap buffer, then stores `completed` with
//    release; the receiver loads it with acquire before completing the receive, so the data
//    is visible when the receive completes.
//  - pull: the receiver copies from the sender's heap buffer, then publishes a "pulled"
//    descriptor (release); the sender completes its send only after loading the tail with
//    acquire, so the sender cannot overwrite its buffer while it is being read.
#include "engine.hpp"

#include <algorithm>
#include <cstring>

#include "error.hpp"

namespace petacomm::node {

namespace {

bool tag_matches(int wanted, int tag) {
  return wanted == PETACOMM_NODE_ANY_TAG ? tag >= 0 : wanted == tag;
}

}  // namespace

Engine::Engine(const Domain &domain, petacomm_node_counters &counters)
    : domain_(domain),
      counters_(counters),
      me_(domain.local_rank()),
      rank_(domain.rank()),
      payload_(domain.geometry().payload_bytes()),
      out_(static_cast<std::size_t>(domain.local_size())),
      in_(static_cast<std::size_t>(domain.local_size())),
      local_queues_(static_cast<std::size_t>(domain.local_size())) {}

Engine::~Engine() = default;

Request *Engine::make_request() {
  if (free_.empty()) {
    pool_.push_back(std::make_unique<Request>());
    pool_.back()->magic = kRequestLive;
    return pool_.back().get();
  }
  Request *r = free_.back();
  free_.pop_back();
  r->magic = kRequestLive;
  return r;
}

void Engine::release(Request *r) {
  *r = Request{};
  free_.push_back(r);
}

void Engine::complete(Request *r) {
  PETACOMM_CHECK_INTERNAL(!r->done, "request completed twice");
  r->done = true;
  if (r->user) {
    --outstanding_user_;
  } else {
    finished_.push_back(r);
  }
}

void Engine::run_callbacks() {
  if (in_callbacks_) return;  // the outer call drains what these callbacks add
  in_callbacks_ = true;
  while (!finished_.empty()) {
    Request *r = finished_.back();
    finished_.pop_back();
    if (r->on_complete) r->on_complete(*r);
    release(r);
  }
  in_callbacks_ = false;
}

Engine::SourceQueues &Engine::queues_for(int source) {
  const int l = domain_.local_of(source);
  if (l >= 0) return local_queues_[static_cast<std::size_t>(l)];
  return remote_queues_[source];
}

void Engine::forget_if_empty(int source) {
  if (domain_.local_of(source) >= 0) return;
  const auto it = remote_queues_.find(source);
  if (it != remote_queues_.end() && it->second.unmatched.empty() && it->second.posted.empty())
    remote_queues_.erase(it);
}

// ---- sends ----------------------------------------------------------------------------

Request *Engine::post_send(const void *data, std::int64_t bytes, int dest, int tag, int as_source,
                           bool user, Completion on_complete) {
  Request *r = make_request();
  r->is_send = true;
  r->user = user;
  r->buffer = classify(domain_, data, bytes);
  r->peer = dest;
  r->tag = tag;
  r->as_source = as_source;
  r->status = {as_source, tag, bytes};
  r->on_complete = std::move(on_complete);
  if (user) ++outstanding_user_;
  if (user && tag >= 0) {  // the caller's messages (the layer's own have negative tags)
    if (domain_.local_of(dest) >= 0) {
      ++counters_.local_messages;
      counters_.local_bytes += bytes;
    } else {
      ++counters_.remote_messages;
      counters_.remote_bytes += bytes;
    }
  }
  start_send(r);
  run_callbacks();
  return r;
}

void Engine::start_send(Request *r) {
  int j = domain_.local_of(r->peer);
  if (j < 0) {
    if (domain_.is_leader()) {  // this rank is the gateway: straight to the network
      PETACOMM_CHECK_INTERNAL(remote_ != nullptr, "gateway without a remote sender");
      remote_->send_remote(r);
      return;
    }
    j = 0;  // through this node's gateway
  }
  OutChannel &oc = out_[static_cast<std::size_t>(j)];
  if (!oc.queued.empty() || !try_push(j, r)) oc.queued.push_back(r);
}

SlotHeader *Engine::free_slot(int j) {
  OutChannel &oc = out_[static_cast<std::size_t>(j)];
  SlotHeader *h = domain_.slot(j, me_, oc.next_seq);
  if (h->state.load(std::memory_order_acquire) == kSlotEmpty) return h;
  // Flow control: the slot still holds an older message. Say which message waits for it
  // (once per message): the receiver copies the old one out only then.
  if (oc.wanted != oc.next_seq + 1) {
    oc.wanted = oc.next_seq + 1;
    domain_.channel(j, me_)->wanted.store(oc.wanted, std::memory_order_release);
  }
  return nullptr;
}

bool Engine::try_push(int j, Request *r) {
  OutChannel &oc = out_[static_cast<std::size_t>(j)];
  SlotHeader *h = free_slot(j);
  if (h == nullptr) return false;
  const std::int64_t bytes = r->buffer.bytes;
  const bool eager = bytes <= payload_;
  h->kind = static_cast<std::uint32_t>(eager ? SlotKind::kEager : SlotKind::kRendezvous);
  h->seq = oc.next_seq;
  h->source = r->as_source;
  h->dest = r->peer;
  h->tag = r->tag;
  h->bytes = bytes;
  if (eager) {
    h->send_id = 0;
    h->heap_offset = -1;
    move_bytes(slot_buffer(h), 0, r->buffer, 0, bytes);
  } else {
    r->send_id = oc.next_send_id++;
    h->send_id = r->send_id;
    h->heap_offset = r->buffer.heap_offset;
    oc.awaiting.emplace(r->send_id, r);
  }
  h->state.store(kSlotFull, std::memory_order_release);  // publishes header and payload
  ++oc.next_seq;
  if (eager) complete(r);
  return true;
}

bool Engine::push_chunk(int j, Request *r) {
  OutChannel &oc = out_[static_cast<std::size_t>(j)];
  SlotHeader *h = free_slot(j);
  if (h == nullptr) return false;
  const std::int64_t n = std::min(payload_, r->buffer.bytes - r->moved);
  h->kind = static_cast<std::uint32_t>(SlotKind::kChunk);
  h->seq = oc.next_seq;
  h->source = r->as_source;
  h->dest = r->peer;
  h->tag = r->tag;
  h->bytes = n;
  h->send_id = r->send_id;
  h->heap_offset = -1;
  move_bytes(slot_buffer(h), 0, r->buffer, r->moved, n);
  h->state.store(kSlotFull, std::memory_order_release);
  ++oc.next_seq;
  r->moved += n;
  if (r->moved == r->buffer.bytes) {
    oc.pipes.pop_front();
    complete(r);
  }
  return true;
}

bool Engine::push_out(int j) {
  OutChannel &oc = out_[static_cast<std::size_t>(j)];
  bool moved = false;
  // Granted transfers first: their receivers are waiting; chunks are not matched, so they
  // may overtake queued sends.
  while (!oc.pipes.empty() && push_chunk(j, oc.pipes.front())) moved = true;
  while (!oc.queued.empty() && try_push(j, oc.queued.front())) {
    oc.queued.pop_front();
    moved = true;
  }
  return moved;
}

void Engine::bump_completed(int j) {
  OutChannel &oc = out_[static_cast<std::size_t>(j)];
  ++oc.completed;
  domain_.channel(j, me_)->completed.store(oc.completed, std::memory_order_release);
}

bool Engine::consume_descriptors(int j) {
  OutChannel &oc = out_[static_cast<std::size_t>(j)];
  const std::uint64_t tail = domain_.ring_producer(me_, j)->tail.load(std::memory_order_acquire);
  if (oc.desc_head == tail) return false;
  while (oc.desc_head < tail) {
    const Descriptor d = *domain_.ring_entry(me_, j, oc.desc_head);
    ++oc.desc_head;
    domain_.ring_consumer(me_, j)->head.store(oc.desc_head, std::memory_order_release);
    const auto it = oc.awaiting.find(d.send_id);
    PETACOMM_CHECK_INTERNAL(it != oc.awaiting.end(), "descriptor for unknown send ", d.send_id,
                            " from local rank ", j);
    Request *s = it->second;
    oc.awaiting.erase(it);
    PETACOMM_CHECK_INTERNAL(d.bytes == s->buffer.bytes, "descriptor of ", d.bytes,
                            " bytes for a send of ", s->buffer.bytes);
    switch (static_cast<DescriptorMode>(d.mode)) {
      case DescriptorMode::kPut:
        // One copy, straight into the receiver's buffer; `completed` is stored after it.
        move_bytes(heap_buffer(d.heap_offset, d.bytes), 0, s->buffer, 0, d.bytes);
        bump_completed(j);
        complete(s);
        break;
      case DescriptorMode::kPulled:
      case DescriptorMode::kDiscard:
        bump_completed(j);
        complete(s);
        break;
      case DescriptorMode::kPipeline:
        bump_completed(j);
        s->moved = 0;
        oc.pipes.push_back(s);
        break;
      default:
        fail_internal("descriptor mode ", d.mode);
    }
  }
  return true;
}

// ---- receives -------------------------------------------------------------------------

Request *Engine::post_recv(void *data, std::int64_t capacity, int source, int tag, bool user,
                           Completion on_complete) {
  Request *r = make_request();
  r->is_send = false;
  r->user = user;
  r->buffer = classify(domain_, data, capacity);
  r->peer = source;
  r->tag = tag;
  r->on_complete = std::move(on_complete);
  if (user) ++outstanding_user_;
  SourceQueues &q = queues_for(source);
  for (auto it = q.unmatched.begin(); it != q.unmatched.end(); ++it) {
    if (!tag_matches(tag, it->tag)) continue;
    Incoming in = std::move(*it);
    q.unmatched.erase(it);
    deliver(in, r);
    forget_if_empty(source);
    run_callbacks();
    return r;
  }
  q.posted.push_back(r);
  return r;
}

Request *Engine::post_claimed(void *data, std::int64_t capacity, Completion on_complete) {
  Request *r = make_request();
  r->user = false;
  r->buffer = classify(domain_, data, capacity);
  r->on_complete = std::move(on_complete);
  return r;
}

void Engine::inject(Incoming in) {
  arrive(std::move(in));
  run_callbacks();
}

bool Engine::probe(int source, int tag, petacomm_node_status *status) {
  const int l = domain_.local_of(source);
  const SourceQueues *q = nullptr;
  if (l >= 0) {
    q = &local_queues_[static_cast<std::size_t>(l)];
  } else {
    const auto it = remote_queues_.find(source);
    if (it == remote_queues_.end()) return false;
    q = &it->second;
  }
  for (const Incoming &in : q->unmatched) {
    if (!tag_matches(tag, in.tag)) continue;
    if (status) *status = {in.source, in.tag, in.bytes};
    return true;
  }
  return false;
}

void Engine::arrive(Incoming in) {
  const bool forward = in.dest != rank_;
  if (claimer_ != nullptr && (forward || in.tag == kTagRpcCall)) {
    Request *r = claimer_->claim(in);
    if (r != nullptr) {
      deliver(in, r);
      return;
    }
  }
  PETACOMM_CHECK_INTERNAL(!forward, "message for rank ", in.dest, " arrived at rank ", rank_);
  SourceQueues &q = queues_for(in.source);
  for (auto it = q.posted.begin(); it != q.posted.end(); ++it) {
    if (!tag_matches((*it)->tag, in.tag)) continue;
    Request *r = *it;
    q.posted.erase(it);
    deliver(in, r);
    forget_if_empty(in.source);
    return;
  }
  q.unmatched.push_back(std::move(in));
}

void Engine::deliver(Incoming &in, Request *r) {
  r->status = {in.source, in.tag, in.bytes};
  if (in.bytes > r->buffer.bytes) {
    r->error = PETACOMM_ERR_ARG;
    r->error_message = concat("capacity: the message from rank ", in.source, " (tag ", in.tag,
                              ") has ", in.bytes, " bytes, the receive buffer ", r->buffer.bytes,
                              "; the message was dropped, the buffer is unchanged");
    discard(in);
    complete(r);
    return;
  }
  switch (in.where) {
    case Incoming::Where::kSlot: {
      SlotHeader *h = domain_.slot(me_, in.channel, in.seq);
      move_bytes(r->buffer, 0, slot_buffer(h), 0, in.bytes);
      h->state.store(kSlotEmpty, std::memory_order_release);  // after the reads of the payload
      complete(r);
      break;
    }
    case Incoming::Where::kHeld:
      move_bytes(r->buffer, 0, private_buffer(in.held.get(), in.bytes), 0, in.bytes);
      in.held.reset();
      complete(r);
      break;
    case Incoming::Where::kRendezvous:
      if (r->buffer.space == MemorySpace::kHostWindow) {
        grant(in.channel, {DescriptorMode::kPut, in.send_id, r->buffer.heap_offset, in.bytes, r});
      } else if (in.sender_heap_offset >= 0) {
        move_bytes(r->buffer, 0, heap_buffer(in.sender_heap_offset, in.bytes), 0, in.bytes);
        grant(in.channel, {DescriptorMode::kPulled, in.send_id, -1, in.bytes, nullptr});
        complete(r);
      } else {
        r->moved = 0;
        grant(in.channel, {DescriptorMode::kPipeline, in.send_id, -1, in.bytes, r});
      }
      break;
  }
}

void Engine::discard(Incoming &in) {
  switch (in.where) {
    case Incoming::Where::kSlot:
      domain_.slot(me_, in.channel, in.seq)->state.store(kSlotEmpty, std::memory_order_release);
      break;
    case Incoming::Where::kHeld:
      in.held.reset();
      break;
    case Incoming::Where::kRendezvous:
      grant(in.channel, {DescriptorMode::kDiscard, in.send_id, -1, in.bytes, nullptr});
      break;
  }
}

void Engine::grant(int j, const Grant &g) {
  InChannel &ic = in_[static_cast<std::size_t>(j)];
  if (!ic.to_grant.empty() || !publish(j, g)) ic.to_grant.push_back(g);
}

bool Engine::publish(int j, const Grant &g) {
  InChannel &ic = in_[static_cast<std::size_t>(j)];
  const std::uint64_t head = domain_.ring_consumer(j, me_)->head.load(std::memory_order_acquire);
  if (ic.desc_tail - head >= static_cast<std::uint64_t>(domain_.geometry().descriptors))
    return false;
  Descriptor *d = domain_.ring_entry(j, me_, ic.desc_tail);
  d->send_id = g.send_id;
  d->heap_offset = g.heap_offset;
  d->bytes = g.bytes;
  d->mode = static_cast<std::uint32_t>(g.mode);
  d->unused = 0;
  const std::uint64_t index = ic.desc_tail++;
  if (g.mode == DescriptorMode::kPut) ic.puts.emplace_back(index, g.recv);
  if (g.mode == DescriptorMode::kPipeline) ic.pipes.push_back(g.recv);
  domain_.ring_producer(j, me_)->tail.store(ic.desc_tail, std::memory_order_release);
  return true;
}

bool Engine::check_puts(int j) {
  InChannel &ic = in_[static_cast<std::size_t>(j)];
  if (ic.puts.empty()) return false;
  const std::uint64_t done = domain_.channel(me_, j)->completed.load(std::memory_order_acquire);
  bool moved = false;
  while (!ic.puts.empty() && ic.puts.front().first < done) {
    complete(ic.puts.front().second);
    ic.puts.pop_front();
    moved = true;
  }
  return moved;
}

void Engine::spill(int j, SlotHeader *h) {
  // The sender wants this slot back for a newer message: copy the unmatched one out.
  SourceQueues &q = queues_for(h->source);
  for (Incoming &in : q.unmatched) {
    if (in.where != Incoming::Where::kSlot || in.channel != j || in.seq != h->seq) continue;
    std::shared_ptr<char> copy(
        new char[static_cast<std::size_t>(std::max<std::int64_t>(in.bytes, 1))],
        std::default_delete<char[]>());
    move_host(copy.get(), payload(h), in.bytes);
    in.held = copy;
    in.where = Incoming::Where::kHeld;
    h->state.store(kSlotEmpty, std::memory_order_release);
    ++counters_.spilled_messages;
    return;
  }
  fail_internal("slot ", h->seq, " from local rank ", j, " is full but not waiting for a match");
}

bool Engine::scan(int j) {
  InChannel &ic = in_[static_cast<std::size_t>(j)];
  bool moved = false;
  for (;;) {
    SlotHeader *h = domain_.slot(me_, j, ic.next_seq);
    if (h->state.load(std::memory_order_acquire) != kSlotFull) break;
    if (h->seq != ic.next_seq) {
      // An older unmatched message holds the slot of the next one: copy it out only if the
      // sender waits for that slot (`wanted` is one past the seq that waits).
      const std::uint64_t wanted = domain_.channel(me_, j)->wanted.load(std::memory_order_acquire);
      if (wanted <= ic.next_seq) break;
      spill(j, h);
      moved = true;
      continue;
    }
    ++ic.next_seq;
    moved = true;
    const auto kind = static_cast<SlotKind>(h->kind);
    if (kind == SlotKind::kChunk) {
      PETACOMM_CHECK_INTERNAL(!ic.pipes.empty(), "chunk from local rank ", j, " with no transfer");
      Request *r = ic.pipes.front();
      PETACOMM_CHECK_INTERNAL(r->moved + h->bytes <= r->status.bytes, "chunk past the message end");
      move_bytes(r->buffer, r->moved, slot_buffer(h), 0, h->bytes);
      r->moved += h->bytes;
      h->state.store(kSlotEmpty, std::memory_order_release);
      if (r->moved == r->status.bytes) {
        ic.pipes.pop_front();
        complete(r);
      }
      continue;
    }
    Incoming in;
    in.source = h->source;
    in.dest = h->dest;
    in.tag = h->tag;
    in.bytes = h->bytes;
    in.channel = j;
    in.seq = h->seq;
    if (kind == SlotKind::kRendezvous) {
      in.where = Incoming::Where::kRendezvous;
      in.send_id = h->send_id;
      in.sender_heap_offset = h->heap_offset;
      h->state.store(kSlotEmpty, std::memory_order_release);  // the header is copied
    } else {
      PETACOMM_CHECK_INTERNAL(kind == SlotKind::kEager, "slot kind ", h->kind);
      in.where = Incoming::Where::kSlot;  // stays in the slot until matched or spilled
    }
    arrive(std::move(in));
  }
  return moved;
}

bool Engine::progress() {
  bool moved = false;
  const int n = domain_.local_size();
  for (int j = 0; j < n; ++j) {
    moved |= scan(j);
    InChannel &ic = in_[static_cast<std::size_t>(j)];
    while (!ic.to_grant.empty() && publish(j, ic.to_grant.front())) {
      ic.to_grant.pop_front();
      moved = true;
    }
    if (!out_[static_cast<std::size_t>(j)].awaiting.empty()) moved |= consume_descriptors(j);
    moved |= push_out(j);
    moved |= check_puts(j);
  }
  run_callbacks();
  return moved;
}

bool Engine::idle() const {
  for (const OutChannel &oc : out_)
    if (!oc.queued.empty() || !oc.pipes.empty() || !oc.awaiting.empty()) return false;
  for (const InChannel &ic : in_)
    if (!ic.to_grant.empty() || !ic.puts.empty() || !ic.pipes.empty()) return false;
  return finished_.empty();
}

std::int64_t Engine::private_bytes() const {
  auto deque_bytes = [](std::size_t n, std::size_t each) {
    return static_cast<std::int64_t>(n * each);
  };
  std::int64_t total = sizeof(*this);
  total +=
      static_cast<std::int64_t>(out_.size() * sizeof(OutChannel) + in_.size() * sizeof(InChannel) +
                                local_queues_.size() * sizeof(SourceQueues));
  for (const OutChannel &oc : out_) {
    total += deque_bytes(oc.queued.size() + oc.pipes.size(), sizeof(Request *));
    total += deque_bytes(oc.awaiting.size(), sizeof(std::uint64_t) + 3 * sizeof(void *));
  }
  for (const InChannel &ic : in_) {
    total += deque_bytes(ic.to_grant.size(), sizeof(Grant)) +
             deque_bytes(ic.puts.size(), 2 * sizeof(std::uint64_t)) +
             deque_bytes(ic.pipes.size(), sizeof(Request *));
  }
  auto queue_bytes = [&](const SourceQueues &q) {
    std::int64_t b = deque_bytes(q.unmatched.size(), sizeof(Incoming)) +
                     deque_bytes(q.posted.size(), sizeof(Request *));
    for (const Incoming &in : q.unmatched)
      if (in.where == Incoming::Where::kHeld) b += in.bytes;
    return b;
  };
  for (const SourceQueues &q : local_queues_) total += queue_bytes(q);
  for (const auto &entry : remote_queues_)
    total +=
        static_cast<std::int64_t>(sizeof(entry) + 2 * sizeof(void *)) + queue_bytes(entry.second);
  total += static_cast<std::int64_t>(pool_.size() * (sizeof(Request) + sizeof(void *)));
  return total;
}

}  // namespace petacomm::node
