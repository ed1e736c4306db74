// The device-agnostic buffer interface: every byte the layer moves goes through a Buffer
// (where the memory is) and move_bytes (how to copy between two spaces). The space decides
// the protocol: a receive buffer another rank can address (the node heap) is written by the
// sender in one copy; private memory is reached through slots (two copies).
//
// Host memory is all this build supports. A device space (GPU memory) adds three things and
// nothing else (docs/node-layer.md, "GPU-resident buffers"): classify() recognising device
// pointers, a device entry in move_bytes (a DMA-engine copy), and descriptors naming device
// memory by an IPC handle instead of a heap offset.
#pragma once

#include <cstdint>

#include "petacomm/node.h"

namespace petacomm::node {

class Domain;

enum class MemorySpace : int {
  kHostPrivate = PETACOMM_NODE_HOST_PRIVATE,  // only this process addresses it
  kHostWindow = PETACOMM_NODE_HOST_WINDOW,    // the node heap: every rank of the node maps it
};

struct Buffer {
  char *data = nullptr;
  std::int64_t bytes = 0;
  MemorySpace space = MemorySpace::kHostPrivate;
  std::int64_t heap_offset = -1;  // kHostWindow: node-wide name of data
};

// Where [data, data + bytes) lives.
Buffer classify(const Domain &domain, const void *data, std::int64_t bytes);

// The layer's own memory: a slot payload or heap staging in the window, or private memory.
inline Buffer window_buffer(char *data, std::int64_t bytes, std::int64_t heap_offset = -1) {
  return {data, bytes, MemorySpace::kHostWindow, heap_offset};
}
inline Buffer private_buffer(const char *data, std::int64_t bytes) {
  return {const_cast<char *>(data), bytes, MemorySpace::kHostPrivate, -1};
}

// Copies n bytes from src + src_at to dst + dst_at. Both ranges are the caller's to check.
void move_bytes(const Buffer &dst, std::int64_t dst_at, const Buffer &src, std::int64_t src_at,
                std::int64_t n);

// Copies n bytes between raw host addresses in one of the spaces above.
void move_host(char *dst, const char *src, std::int64_t n);

}  // namespace petacomm::node
