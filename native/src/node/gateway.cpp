#include "gateway.hpp"

#include <algorithm>
#include <cstring>

#include "error.hpp"

namespace petacomm::node {

namespace {

constexpr int kPacketTag = 0;  // batches and heads, in order
// The fragments of a large message carry a tag of their own (named in its head), so large
// messages staged out of order never take each other's fragments.
constexpr int kFirstFragmentTag = 1;

enum PacketType : std::uint32_t { kBatch = 1, kLargeHead = 2 };

struct PacketHeader {
  std::uint32_t type;
  std::uint32_t items;
};
struct ItemHeader {
  std::int32_t source, dest, tag;
  std::int32_t fragment_tag;  // heads: the tag of the message's fragments
  std::int64_t bytes;
};
static_assert(sizeof(PacketHeader) == 8 && sizeof(ItemHeader) == 24, "packet layout");

std::int64_t padded(std::int64_t n) { return (n + 7) / 8 * 8; }

}  // namespace

Gateway::Gateway(const Domain &domain, Engine &engine, StagingPool &staging,
                 petacomm_node_counters &counters, const petacomm_node_options &options)
    : domain_(domain),
      engine_(engine),
      staging_(staging),
      counters_(counters),
      comm_(domain.gateway_comm()),
      aggregate_bytes_(options.aggregate_bytes),
      max_mpi_bytes_(options.max_mpi_bytes) {
  int *tag_ub = nullptr, found = 0;
  PETACOMM_CHECK_MPI(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_ub, &found));
  fragment_tags_ =
      found ? std::min(*tag_ub, 1 << 24) - kFirstFragmentTag : 32767 - kFirstFragmentTag;
}

Gateway::~Gateway() {
  // Free completes every request first; here (error paths, finalized MPI) only local memory.
  if (mpi_finalized()) return;
  for (Outgoing &o : outgoing_)
    for (MPI_Request &r : o.requests)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  for (Delivery &d : deliveries_)
    for (MPI_Request &r : d.fragments)
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Request_free(&r);
      }
}

// ---- outbound -------------------------------------------------------------------------

char *Gateway::append_item(int node, int source, int dest, int tag, std::int64_t bytes) {
  const std::int64_t item = static_cast<std::int64_t>(sizeof(ItemHeader)) + padded(bytes);
  const auto open = batches_.find(node);
  if (open != batches_.end() &&
      static_cast<std::int64_t>(open->second.size()) + item > aggregate_bytes_)
    flush(node);  // erases the entry
  std::vector<char> &batch = batches_[node];
  if (batch.empty()) {
    batch.resize(sizeof(PacketHeader));
    const PacketHeader h{kBatch, 0};
    std::memcpy(batch.data(), &h, sizeof h);
  }
  const std::size_t at = batch.size();
  batch.resize(at + static_cast<std::size_t>(item));
  const ItemHeader ih{source, dest, tag, 0, bytes};
  std::memcpy(batch.data() + at, &ih, sizeof ih);
  reinterpret_cast<PacketHeader *>(batch.data())->items += 1;
  ++counters_.forwarded_messages;
  counters_.forwarded_bytes += bytes;
  return batch.data() + at + sizeof(ItemHeader);
}

void Gateway::flush(int node) {
  const auto it = batches_.find(node);
  if (it == batches_.end() || it->second.empty()) return;
  auto packet = std::make_shared<std::vector<char>>(std::move(it->second));
  batches_.erase(it);
  Outgoing o;
  o.requests.resize(1);
  const int bytes = static_cast<int>(packet->size());  // <= aggregate_bytes + one item
  PETACOMM_CHECK_MPI(
      MPI_Isend(packet->data(), bytes, MPI_BYTE, node, kPacketTag, comm_, &o.requests[0]));
  ++counters_.mpi_messages_sent;
  counters_.mpi_bytes_sent += bytes;
  o.hold = packet;
  outgoing_.push_back(std::move(o));
}

void Gateway::flush_all() {
  while (!batches_.empty()) flush(batches_.begin()->first);
}

int Gateway::send_head(int node, int source, int dest, int tag, std::int64_t bytes) {
  flush(node);  // the head keeps its place after the small messages before it
  auto packet = std::make_shared<std::vector<char>>(sizeof(PacketHeader) + sizeof(ItemHeader));
  const PacketHeader h{kLargeHead, 1};
  const int fragment_tag =
      kFirstFragmentTag + static_cast<int>(next_fragment_tag_[node]++ % fragment_tags_);
  const ItemHeader ih{source, dest, tag, fragment_tag, bytes};
  std::memcpy(packet->data(), &h, sizeof h);
  std::memcpy(packet->data() + sizeof h, &ih, sizeof ih);
  Outgoing o;
  o.requests.resize(1);
  PETACOMM_CHECK_MPI(MPI_Isend(packet->data(), static_cast<int>(packet->size()), MPI_BYTE, node,
                               kPacketTag, comm_, &o.requests[0]));
  ++counters_.mpi_messages_sent;
  counters_.mpi_bytes_sent += static_cast<std::int64_t>(packet->size());
  ++counters_.forwarded_messages;
  counters_.forwarded_bytes += bytes;
  o.hold = packet;
  outgoing_.push_back(std::move(o));
  return fragment_tag;
}

void Gateway::send_fragments(int node, int fragment_tag, const char *data, std::int64_t bytes,
                             std::shared_ptr<const void> hold, Request *send) {
  Outgoing o;
  for (std::int64_t at = 0; at < bytes; at += max_mpi_bytes_) {
    const int n = static_cast<int>(std::min(max_mpi_bytes_, bytes - at));
    o.requests.push_back(MPI_REQUEST_NULL);
    PETACOMM_CHECK_MPI(
        MPI_Isend(data + at, n, MPI_BYTE, node, fragment_tag, comm_, &o.requests.back()));
    ++counters_.mpi_messages_sent;
    counters_.mpi_bytes_sent += n;
  }
  o.hold = std::move(hold);
  o.send = send;
  outgoing_.push_back(std::move(o));
}

Request *Gateway::claim_forward(const Incoming &in) {
  const int node = domain_.locate(in.dest).node;
  PETACOMM_CHECK_INTERNAL(node != domain_.node(), "forward of a message to rank ", in.dest,
                          " of this node");
  if (in.where != Incoming::Where::kRendezvous) {
    // Small: its payload is copied from the slot straight into the batch.
    char *space = append_item(node, in.source, in.dest, in.tag, in.bytes);
    return engine_.post_claimed(space, in.bytes);
  }
  const int fragment_tag = send_head(node, in.source, in.dest, in.tag, in.bytes);
  std::shared_ptr<char> stage = staging_.get(in.bytes);
  ++forwards_staging_;
  const std::int64_t bytes = in.bytes;
  return engine_.post_claimed(
      stage.get(), bytes, [this, node, fragment_tag, stage, bytes](Request &) {
        --forwards_staging_;
        send_fragments(node, fragment_tag, stage.get(), bytes, stage, nullptr);
      });
}

void Gateway::send_remote(Request *send) {
  const int node = domain_.locate(send->peer).node;
  const std::int64_t bytes = send->buffer.bytes;
  if (bytes <= engine_.eager_limit()) {
    char *item = append_item(node, send->as_source, send->peer, send->tag, bytes);
    move_bytes(private_buffer(item, bytes), 0, send->buffer, 0, bytes);
    engine_.complete(send);
    return;
  }
  const int fragment_tag = send_head(node, send->as_source, send->peer, send->tag, bytes);
  send_fragments(node, fragment_tag, send->buffer.data, bytes, nullptr, send);
}

bool Gateway::complete_outgoing() {
  bool moved = false;
  for (auto it = outgoing_.begin(); it != outgoing_.end();) {
    int done = 0;
    PETACOMM_CHECK_MPI(MPI_Testall(static_cast<int>(it->requests.size()), it->requests.data(),
                                   &done, MPI_STATUSES_IGNORE));
    if (!done) {
      ++it;
      continue;
    }
    if (it->send != nullptr) engine_.complete(it->send);
    it = outgoing_.erase(it);
    moved = true;
  }
  return moved;
}

// ---- inbound --------------------------------------------------------------------------

bool Gateway::receive_packets() {
  bool moved = false;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    PETACOMM_CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, kPacketTag, comm_, &flag, &st));
    if (!flag) break;
    int bytes = 0;
    PETACOMM_CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &bytes));
    std::shared_ptr<char> packet(new char[static_cast<std::size_t>(std::max(bytes, 1))],
                                 std::default_delete<char[]>());
    PETACOMM_CHECK_MPI(MPI_Recv(packet.get(), bytes, MPI_BYTE, st.MPI_SOURCE, kPacketTag, comm_,
                                MPI_STATUS_IGNORE));
    ++counters_.mpi_messages_received;
    counters_.mpi_bytes_received += bytes;
    unpack(packet, bytes, st.MPI_SOURCE);
    moved = true;
  }
  return moved;
}

void Gateway::unpack(const std::shared_ptr<char> &packet, std::int64_t bytes, int from) {
  PETACOMM_CHECK_INTERNAL(bytes >= static_cast<std::int64_t>(sizeof(PacketHeader)), "packet of ",
                          bytes, " bytes from node ", from);
  PacketHeader h;
  std::memcpy(&h, packet.get(), sizeof h);
  std::int64_t at = sizeof h;
  for (std::uint32_t i = 0; i < h.items; ++i) {
    PETACOMM_CHECK_INTERNAL(at + static_cast<std::int64_t>(sizeof(ItemHeader)) <= bytes,
                            "truncated packet from node ", from);
    ItemHeader ih;
    std::memcpy(&ih, packet.get() + at, sizeof ih);
    at += sizeof ih;
    PETACOMM_CHECK_INTERNAL(domain_.local_of(ih.dest) >= 0, "node ", from,
                            " sent a message for rank ", ih.dest, " to the wrong gateway");
    Delivery d;
    d.source = ih.source;
    d.dest = ih.dest;
    d.tag = ih.tag;
    d.bytes = ih.bytes;
    if (h.type == kLargeHead) {
      std::shared_ptr<char> stage = staging_.get(ih.bytes);
      for (std::int64_t off = 0; off < ih.bytes; off += max_mpi_bytes_) {
        const int n = static_cast<int>(std::min(max_mpi_bytes_, ih.bytes - off));
        d.fragments.push_back(MPI_REQUEST_NULL);
        PETACOMM_CHECK_MPI(MPI_Irecv(stage.get() + off, n, MPI_BYTE, from, ih.fragment_tag, comm_,
                                     &d.fragments.back()));
      }
      d.data = stage;
    } else {
      PETACOMM_CHECK_INTERNAL(at + padded(ih.bytes) <= bytes, "truncated item from node ", from);
      d.data = std::shared_ptr<const char>(packet, packet.get() + at);
      at += padded(ih.bytes);
    }
    enqueue(std::move(d));
  }
}

void Gateway::enqueue(Delivery d) {
  if (deliveries_.empty() && d.fragments.empty()) {
    hand_over(d);  // the usual case: nothing waiting, deliver at once
    return;
  }
  deliveries_.push_back(std::move(d));
}

void Gateway::hand_over(Delivery &d) {
  ++counters_.delivered_messages;
  counters_.delivered_bytes += d.bytes;
  if (d.dest == domain_.rank()) {
    Incoming in;
    in.where = Incoming::Where::kHeld;
    in.source = d.source;
    in.dest = d.dest;
    in.tag = d.tag;
    in.bytes = d.bytes;
    in.held = std::move(d.data);
    engine_.inject(std::move(in));
    return;
  }
  std::shared_ptr<const char> data = std::move(d.data);
  const char *p = data.get();
  engine_.post_send(p, d.bytes, d.dest, d.tag, d.source, false, [data](Request &) {});
}

bool Gateway::deliver_ready() {
  bool moved = false;
  std::vector<std::pair<int, int>> blocked;  // (source, dest) pairs behind an arriving message
  for (auto it = deliveries_.begin(); it != deliveries_.end();) {
    Delivery &d = *it;
    if (!d.fragments.empty()) {
      int done = 0;
      PETACOMM_CHECK_MPI(MPI_Testall(static_cast<int>(d.fragments.size()), d.fragments.data(),
                                     &done, MPI_STATUSES_IGNORE));
      if (done) {
        counters_.mpi_messages_received += static_cast<std::int64_t>(d.fragments.size());
        counters_.mpi_bytes_received += d.bytes;
        d.fragments.clear();
        moved = true;
      }
    }
    const std::pair<int, int> pair{d.source, d.dest};
    const bool behind = std::find(blocked.begin(), blocked.end(), pair) != blocked.end();
    if (!d.fragments.empty() || behind) {
      if (!behind) blocked.push_back(pair);
      ++it;
      continue;
    }
    hand_over(d);
    it = deliveries_.erase(it);
    moved = true;
  }
  return moved;
}

bool Gateway::progress() {
  bool moved = receive_packets();
  if (!deliveries_.empty()) moved |= deliver_ready();
  if (!batches_.empty()) {
    flush_all();
    moved = true;
  }
  if (!outgoing_.empty()) moved |= complete_outgoing();
  return moved;
}

bool Gateway::outbound_done() const {
  return batches_.empty() && outgoing_.empty() && forwards_staging_ == 0;
}

std::int64_t Gateway::private_bytes() const {
  std::int64_t total = sizeof(*this);
  for (const auto &b : batches_) total += static_cast<std::int64_t>(b.second.capacity() + 32);
  total += static_cast<std::int64_t>(outgoing_.size() * sizeof(Outgoing));
  for (const Delivery &d : deliveries_)
    total += static_cast<std::int64_t>(sizeof(Delivery) + d.fragments.size() * sizeof(MPI_Request));
  return total;
}

}  // namespace petacomm::node
