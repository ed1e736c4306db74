#include "face_pattern.hpp"

namespace petacomm::apps::halo {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint64_t face_seed(int sender, int face_index, std::int64_t exchange) {
  return mix((static_cast<std::uint64_t>(sender) << 40) ^
             (static_cast<std::uint64_t>(face_index) << 32) ^ static_cast<std::uint64_t>(exchange));
}

unsigned char byte_at(std::uint64_t seed, std::size_t b) {
  return static_cast<unsigned char>((seed >> (8 * (b & 7))) ^ (b >> 3));
}

}  // namespace

void fill_face(unsigned char *face, std::size_t bytes, int sender, int face_index,
               std::int64_t exchange) {
  const std::uint64_t seed = face_seed(sender, face_index, exchange);
  for (std::size_t b = 0; b < bytes; ++b) face[b] = byte_at(seed, b);
}

std::string check_face(const unsigned char *face, std::size_t bytes, int sender, int face_index,
                       std::int64_t exchange) {
  const std::uint64_t seed = face_seed(sender, face_index, exchange);
  for (std::size_t b = 0; b < bytes; ++b)
    if (face[b] != byte_at(seed, b))
      return "byte " + std::to_string(b) + " is " + std::to_string(face[b]) + ", expected " +
             std::to_string(byte_at(seed, b));
  return {};
}

}  // namespace petacomm::apps::halo
