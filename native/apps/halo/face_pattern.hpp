// The bytes of every face: a function of the sending rank, the face (offset index), the
// exchange number and the byte position, so a receiver can check every byte it got — a face
// from the wrong neighbour, of the wrong direction or of an earlier exchange fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace petacomm::apps::halo {

void fill_face(unsigned char *face, std::size_t bytes, int sender, int face_index,
               std::int64_t exchange);

// Empty when the face is right, else a sentence naming the first wrong byte.
std::string check_face(const unsigned char *face, std::size_t bytes, int sender, int face_index,
                       std::int64_t exchange);

// What a receive buffer holds before an exchange: a face whose neighbour does not exist must
// still hold it afterwards.
constexpr unsigned char kUntouched = 0xA5;

}  // namespace petacomm::apps::halo
