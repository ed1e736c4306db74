#include "netbench_options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace netbench {
namespace {

// Parses "64", "4K", "4KiB", "64M", "1G" (powers of 1024) into bytes.
bool parse_size(const std::string &text, std::uint64_t &value) {
  if (text.empty() || text[0] == '-') return false;
  errno = 0;
  char *end = nullptr;
  const unsigned long long number = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str()) return false;
  std::string suffix(end);
  for (auto &c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix == "B") suffix.clear();
  if (suffix.size() == 3 && suffix.substr(1) == "IB") suffix = suffix.substr(0, 1);
  if (suffix.size() == 2 && suffix[1] == 'B') suffix = suffix.substr(0, 1);
  int shift = 0;
  if (suffix.empty())
    shift = 0;
  else if (suffix == "K")
    shift = 10;
  else if (suffix == "M")
    shift = 20;
  else if (suffix == "G")
    shift = 30;
  else
    return false;
  if (number > (~std::uint64_t{0} >> shift)) return false;
  value = static_cast<std::uint64_t>(number) << shift;
  return true;
}

bool parse_positive_int(const std::string &text, int minimum, int &value) {
  errno = 0;
  char *end = nullptr;
  const long number = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || number < minimum || number > 1000000000)
    return false;
  value = static_cast<int>(number);
  return true;
}

}  // namespace

const std::vector<std::string> &all_operations() {
  static const std::vector<std::string> ops = {
      "pingpong",  "allreduce", "allgather",           "alltoall",
      "alltoallv", "bcast",     "reduce_scatter_block"};
  return ops;
}

const char *usage() {
  return "usage: petacomm-netbench [-m MIN:MAX] [-x WARMUP] [-i ITERS] [-r REPS]\n"
         "                         [--ops OP,OP,...] [--max-buffer BYTES] [--progress]\n"
         "                         --json PATH\n"
         "  -m MIN:MAX       message sizes in bytes, powers of two (default 8:64M)\n"
         "  -x WARMUP        untimed iterations per size (default 10)\n"
         "  -i ITERS         timed iterations per repetition for small messages (default 100)\n"
         "  -r REPS          repetitions per size; min/median/max are over these (default 5)\n"
         "  --ops LIST       subset of: pingpong,allreduce,allgather,alltoall,alltoallv,\n"
         "                   bcast,reduce_scatter_block (default all)\n"
         "  --max-buffer B   skip collective sizes whose per-rank buffer exceeds B (default 64M)\n"
         "  --json PATH      rank 0 writes the raw measurements there (JSON)\n"
         "  --progress       rank 0 prints 'petacomm-netbench progress DONE TOTAL OP BYTES'\n"
         "                   on stdout after each size\n";
}

bool parse_options(int argc, char **argv, Options &options, std::string &error, bool &help) {
  help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      help = true;
      return true;
    }
    if (flag == "--progress") {
      options.progress = true;
      continue;
    }
    if (i + 1 >= argc) {
      error = flag + ": expects a value";
      return false;
    }
    const std::string value = argv[++i];
    if (flag == "-m") {
      const auto colon = value.find(':');
      std::uint64_t lo = 0, hi = 0;
      if (colon == std::string::npos || !parse_size(value.substr(0, colon), lo) ||
          !parse_size(value.substr(colon + 1), hi) || lo == 0 || lo > hi) {
        error = "-m: expected MIN:MAX with 0 < MIN <= MAX (e.g. 8:64M), got '" + value + "'";
        return false;
      }
      if (hi > (std::uint64_t{1} << 30)) {
        // Counts are passed to MPI as int: the largest power of two that fits is 1 GiB.
        error = "-m: MAX must be at most 1G (MPI counts are int), got '" + value + "'";
        return false;
      }
      options.min_bytes = lo;
      options.max_bytes = hi;
    } else if (flag == "-x") {
      if (!parse_positive_int(value, 0, options.warmup)) {
        error = "-x: expected a non-negative integer, got '" + value + "'";
        return false;
      }
    } else if (flag == "-i") {
      if (!parse_positive_int(value, 1, options.iterations)) {
        error = "-i: expected a positive integer, got '" + value + "'";
        return false;
      }
    } else if (flag == "-r") {
      if (!parse_positive_int(value, 1, options.repetitions)) {
        error = "-r: expected a positive integer, got '" + value + "'";
        return false;
      }
    } else if (flag == "--max-buffer") {
      if (!parse_size(value, options.max_buffer) || options.max_buffer == 0) {
        error = "--max-buffer: expected a positive size, got '" + value + "'";
        return false;
      }
    } else if (flag == "--ops") {
      options.ops.clear();
      std::size_t start = 0;
      while (start <= value.size()) {
        const auto comma = std::min(value.find(',', start), value.size());
        const std::string op = value.substr(start, comma - start);
        const auto &known = all_operations();
        if (std::find(known.begin(), known.end(), op) == known.end()) {
          error = "--ops: unknown operation '" + op + "'";
          return false;
        }
        options.ops.push_back(op);
        start = comma + 1;
      }
    } else if (flag == "--json") {
      options.json_path = value;
    } else {
      error = "unknown option '" + flag + "'";
      return false;
    }
  }
  if (options.json_path.empty()) {
    error = "--json: an output path is required";
    return false;
  }
  if (options.ops.empty()) options.ops = all_operations();
  return true;
}

std::vector<std::uint64_t> message_sizes(const Options &options) {
  std::vector<std::uint64_t> sizes;
  std::uint64_t size = 1;
  while (size < options.min_bytes) size <<= 1;
  for (; size <= options.max_bytes; size <<= 1) sizes.push_back(size);
  return sizes;
}

}  // namespace netbench
