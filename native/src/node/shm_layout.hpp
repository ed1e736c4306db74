// What lives in the node's shared window, and where.
//
// Each rank of a node owns one segment of the window (MPI_Win_allocate_shared, non-contiguous,
// so a segment's pages are first touched by its owner). Segment of local rank r:
//
//   SegmentHeader
//   inbox[s]     for every local rank s: a channel s -> r (written by s, drained by r):
//                  ChannelControl (the completion counter s writes) + `slots` slots
//   rings[d]     for every local rank d: descriptors d -> r (d grants r's rendezvous sends to
//                  d: written by d, consumed by r) -- "the receiver writes a small descriptor
//                  into the sender's memory"
//   CollControl + coll_bytes   this rank's area for the node collectives
//   (leader only) the rank map, then the node heap
//
// Only offsets travel between processes (the window maps at different addresses in each).
// Every field other processes read is either written before a release store of an atomic
// they load with acquire, or is itself atomic; the argument is spelled out where each flag is
// used (engine.cpp, collectives.cpp) and in docs/node-layer.md.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace petacomm::node {

constexpr std::int64_t kCacheLine = 64;

static_assert(std::atomic<std::uint32_t>::is_always_lock_free &&
                  std::atomic<std::uint64_t>::is_always_lock_free,
              "shared-memory flags need lock-free (address-free) atomics");

inline std::int64_t round_up(std::int64_t n, std::int64_t to) { return (n + to - 1) / to * to; }

// What a slot carries.
enum class SlotKind : std::uint32_t {
  kEager = 1,       // a whole message, payload inline
  kRendezvous = 2,  // header only: the receiver answers with a descriptor
  kChunk = 3,       // a piece of a pipelined (two-copy) rendezvous transfer
};

enum SlotState : std::uint32_t { kSlotEmpty = 0, kSlotFull = 1 };

// One cache line; the payload follows it in the slot.
struct alignas(kCacheLine) SlotHeader {
  std::atomic<std::uint32_t> state;  // the publication flag: kSlotEmpty / kSlotFull
  std::uint32_t kind;                // SlotKind
  std::uint64_t seq;                 // position in the channel's stream (0, 1, 2, ...)
  std::int32_t source;               // the message's sender (the original one for deliveries)
  std::int32_t dest;                 // its final destination (not the channel's receiver
                                     // when a gateway is to forward it)
  std::int32_t tag;
  std::uint32_t unused;
  std::int64_t bytes;        // message length (rendezvous, eager) or chunk length (chunk)
  std::uint64_t send_id;     // rendezvous: the sender's transfer id, echoed in descriptors
  std::int64_t heap_offset;  // rendezvous: the send buffer's offset in the node heap, or -1
};
static_assert(sizeof(SlotHeader) == kCacheLine, "slot header is one cache line");

// Written by the channel's sender. `completed`: rendezvous descriptors of this channel it
// has fulfilled (in descriptor order), stored with release after the data it copied.
// `wanted`: the sequence number of a message it could not write because its slot was
// still full (monotonic); the receiver copies an unmatched message out of that slot only
// when the sender wants it, so flow control is real: unmatched messages stay in their
// slots and a sender waits until its receiver has room or makes some.
struct alignas(kCacheLine) ChannelControl {
  std::atomic<std::uint64_t> completed;
  std::atomic<std::uint64_t> wanted;
};

// How a rendezvous transfer is done, as the receiver decided.
enum class DescriptorMode : std::uint32_t {
  kPut = 1,       // the sender copies into heap_offset (the receive buffer is in the heap)
  kPulled = 2,    // the receiver copied from the sender's heap buffer already
  kPipeline = 3,  // the sender streams chunks through the channel's slots
  kDiscard = 4,   // the receive buffer is too small: the message is dropped
};

struct Descriptor {
  std::uint64_t send_id;
  std::int64_t heap_offset;  // kPut: where the data goes
  std::int64_t bytes;
  std::uint32_t mode;  // DescriptorMode
  std::uint32_t unused;
};
static_assert(sizeof(Descriptor) == 32, "descriptor size");

// A single-producer (the receiver d), single-consumer (the sender r) ring of descriptors.
struct alignas(kCacheLine) RingProducer {
  std::atomic<std::uint64_t> tail;  // descriptors published
};
struct alignas(kCacheLine) RingConsumer {
  std::atomic<std::uint64_t> head;  // descriptors consumed
};

// A rank's area for node collectives: the step it reached and the step it released (the
// leader's release is what the others wait for), plus a status word for error agreement.
struct alignas(kCacheLine) CollControl {
  std::atomic<std::uint64_t> arrive;
  std::atomic<std::uint64_t> release;
  std::atomic<std::int32_t> status;  // nonzero: this rank (or, in release, the scope) failed
  std::atomic<std::uint64_t> args;   // fingerprint of this rank's arguments (arrive)
};

// One run of consecutive ranks on one node: ranks first..first+count-1 are local ranks
// first_local..first_local+count-1 of node `node`.
struct RankRun {
  std::int32_t first;
  std::int32_t count;
  std::int32_t node;
  std::int32_t first_local;
};

struct alignas(kCacheLine) SegmentHeader {
  std::uint64_t magic;
  std::int64_t segment_bytes;
};
constexpr std::uint64_t kSegmentMagic = 0x7065746163306e64ULL;

// Byte offsets of everything in a segment; identical on every rank of every node for the
// non-leader part (the options agree), so any rank computes any other rank's addresses.
struct Geometry {
  int local_size = 1;
  int slots = 8;
  std::int64_t slot_bytes = 8192;
  int descriptors = 16;
  std::int64_t coll_bytes = 256 << 10;
  std::int64_t heap_bytes = 0;
  std::int64_t runs = 0;

  std::int64_t payload_bytes() const { return slot_bytes - kCacheLine; }
  std::int64_t channel_bytes() const { return kCacheLine + slots * slot_bytes; }
  std::int64_t ring_bytes() const {
    return 2 * kCacheLine + round_up(descriptors * std::int64_t{sizeof(Descriptor)}, kCacheLine);
  }
  std::int64_t inbox_offset() const { return kCacheLine; }
  std::int64_t channel_offset(int source) const {
    return inbox_offset() + source * channel_bytes();
  }
  std::int64_t rings_offset() const { return inbox_offset() + local_size * channel_bytes(); }
  std::int64_t ring_offset(int receiver) const { return rings_offset() + receiver * ring_bytes(); }
  std::int64_t coll_offset() const { return rings_offset() + local_size * ring_bytes(); }
  std::int64_t common_bytes() const { return coll_offset() + kCacheLine + coll_bytes; }
  // Leader only.
  std::int64_t runs_offset() const { return common_bytes(); }
  std::int64_t runs_bytes() const {
    return round_up(runs * std::int64_t{sizeof(RankRun)}, kCacheLine);
  }
  std::int64_t heap_offset() const { return runs_offset() + runs_bytes(); }
  std::int64_t leader_bytes() const { return heap_offset() + heap_bytes; }
};

}  // namespace petacomm::node
