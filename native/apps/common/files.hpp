// Files the mini-apps write: atomically (temporary file in the same directory, fsync,
// rename), so a reader never sees a half-written file and a failed run leaves any previous
// file intact; and numpy .npy arrays of float64 (the map format of the map-maker).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace petacomm::apps {

// Throws (naming the option) unless a file can be created where `path` points: run before
// the work whose result goes there. Empty paths pass.
void check_parent_writable(const std::string &path, const std::string &option);

// Writes bytes to path atomically. option names the command-line option in errors
// (e.g. "--json: cannot write 'x': No such file or directory").
void write_file_atomic(const std::string &path, const std::string &bytes,
                       const std::string &option);

struct NpyArray {
  std::vector<std::int64_t> shape;
  std::vector<double> data;  // C order
};

// Reads a .npy file holding a C-ordered little-endian float64 array (format 1.0 to 3.0).
NpyArray read_npy(const std::string &path, const std::string &option);
// Writes a C-ordered float64 array as .npy (format 1.0), atomically.
void write_npy(const std::string &path, const std::vector<std::int64_t> &shape,
               const std::vector<double> &data, const std::string &option);

}  // namespace petacomm::apps
