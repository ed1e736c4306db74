// Command-line options of petacomm-netbench (OSU-style flags).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace netbench {

struct Options {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = std::uint64_t{64} << 20;
  int warmup = 10;       // -x: untimed iterations before each size
  int iterations = 100;  // -i: timed iterations per repetition (small messages)
  int repetitions = 5;   // -r: timed repetitions per size (min/median/max over these)
  std::uint64_t max_buffer = std::uint64_t{64} << 20;  // per-rank buffer cap for collectives
  std::vector<std::string> ops;                        // empty = all
  std::string json_path;                               // where rank 0 writes the raw measurements
  bool progress = false;  // --progress: rank 0 prints a line on stdout after each size
};

// Parses argv; on error returns false and sets `error` to a one-line message naming the flag.
bool parse_options(int argc, char **argv, Options &options, std::string &error, bool &help);

// Sizes by powers of two from min_bytes to max_bytes inclusive.
std::vector<std::uint64_t> message_sizes(const Options &options);

const std::vector<std::string> &all_operations();

const char *usage();

}  // namespace netbench
