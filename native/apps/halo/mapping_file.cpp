#include "mapping_file.hpp"

#include <mpi.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "app_support.hpp"
#include "error.hpp"

namespace petacomm::apps::halo {

const char *const kMappingFormats[] = {"auto", "rankfile", "slurm", "csv",
                                       "cray", "bgp",      "bgq",   nullptr};

namespace {

struct Line {
  int number;
  std::string text;
};

std::string trim(const std::string &s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return {};
  const auto b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

std::vector<Line> lines_of(const std::string &text, bool comments) {
  std::vector<Line> lines;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = trim(line);
    if (line.empty() || (comments && line[0] == '#')) continue;
    lines.push_back({n, line});
  }
  return lines;
}

std::vector<std::string> words(const std::string &text, char separator) {
  std::vector<std::string> out;
  std::string w;
  std::istringstream in(text);
  if (separator == ' ') {
    while (in >> w) out.push_back(w);
  } else {
    while (std::getline(in, w, separator)) out.push_back(trim(w));
  }
  return out;
}

bool is_integer(const std::string &s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return s.size() < 10;
}

std::string detect(const std::string &text) {
  for (const Line &l : lines_of(text, false)) {
    if (l.text[0] == '#') {
      if (l.text.find("rankfile") != std::string::npos) return "rankfile";
      if (l.text.find("mapping csv") != std::string::npos) return "csv";
      if (l.text.find("MPICH_RANK_ORDER") != std::string::npos) return "cray";
      continue;
    }
    if (l.text.rfind("rank ", 0) == 0) return "rankfile";
    if (l.text == "rank,node,core") return "csv";
    const auto ints = words(l.text, ' ');
    bool all_integers = true;
    for (const auto &w : ints) all_integers = all_integers && is_integer(w);
    if (all_integers && ints.size() == 4) return "bgp";
    if (all_integers && ints.size() == 6) return "bgq";
    if (l.text.find_first_not_of("0123456789,-") == std::string::npos) return "cray";
    return "slurm";
  }
  return "slurm";
}

class Builder {
 public:
  Builder(const std::string &path, int ranks) : path_(path), ranks_(ranks) {
    key_.resize(static_cast<std::size_t>(ranks));
    core_.assign(static_cast<std::size_t>(ranks), -1);
    host_.resize(static_cast<std::size_t>(ranks));
    seen_.assign(static_cast<std::size_t>(ranks), false);
  }
  [[noreturn]] void fail(int line, const std::string &why) const {
    fail_arg("--mapping: ", path_, " line ", line, ": ", why);
  }
  int rank(const std::string &text, int line) const {
    if (!is_integer(text)) fail(line, "expected a rank number, got '" + text + "'");
    const int r = std::stoi(text);
    if (r >= ranks_)
      fail(line, "rank " + text + " is out of range for " + std::to_string(ranks_) + " ranks");
    return r;
  }
  void place(int r, int line, const std::string &node_key, int core, const std::string &host) {
    if (seen_[static_cast<std::size_t>(r)]) fail(line, "rank " + std::to_string(r) + " again");
    seen_[static_cast<std::size_t>(r)] = true;
    key_[static_cast<std::size_t>(r)] = node_key;
    core_[static_cast<std::size_t>(r)] = core;
    host_[static_cast<std::size_t>(r)] = host;
  }
  MappingFile finish(const std::string &format) const {
    MappingFile m;
    m.path = path_;
    m.format = format;
    std::map<std::string, int> index;
    std::map<std::string, int> next_core;
    for (int r = 0; r < ranks_; ++r) {
      const auto u = static_cast<std::size_t>(r);
      if (!seen_[u])
        fail_arg("--mapping: ", path_, " places ", count(), " ranks but the job has ", ranks_,
                 " (rank ", r, " is missing)");
      const auto [it, added] = index.emplace(key_[u], m.nodes());
      if (added) m.node_names.push_back(key_[u]);
      m.node.push_back(it->second);
      const int position = next_core[key_[u]]++;
      m.core.push_back(core_[u] >= 0 ? core_[u] : position);
      m.host.push_back(host_[u]);
    }
    return m;
  }
  int count() const {
    int n = 0;
    for (bool s : seen_) n += s;
    return n;
  }

 private:
  std::string path_;
  int ranks_;
  std::vector<std::string> key_, host_;
  std::vector<int> core_;
  std::vector<bool> seen_;
};

// "rank N=HOST slot=CORE"
MappingFile parse_rankfile(const std::string &text, const std::string &path, int ranks) {
  Builder b(path, ranks);
  for (const Line &l : lines_of(text, true)) {
    const auto w = words(l.text, ' ');
    const auto eq = w.size() >= 2 ? w[1].find('=') : std::string::npos;
    if (w.size() != 3 || w[0] != "rank" || eq == std::string::npos || w[2].rfind("slot=", 0) != 0)
      b.fail(l.number, "expected 'rank N=HOST slot=CORE', got '" + l.text + "'");
    const int r = b.rank(w[1].substr(0, eq), l.number);
    const std::string host = w[1].substr(eq + 1), slot = w[2].substr(5);
    if (host.empty()) b.fail(l.number, "empty host name");
    b.place(r, l.number, host, is_integer(slot) ? std::stoi(slot) : -1, host);
  }
  return b.finish("rankfile");
}

// One host per line, line i = rank i.
MappingFile parse_slurm(const std::string &text, const std::string &path, int ranks) {
  Builder b(path, ranks);
  int r = 0;
  for (const Line &l : lines_of(text, true)) {
    if (l.text.find_first_of(" \t,") != std::string::npos)
      b.fail(l.number, "expected one host name, got '" + l.text + "'");
    if (r >= ranks)
      b.fail(l.number, "more hosts than the job's " + std::to_string(ranks) + " ranks");
    b.place(r++, l.number, l.text, -1, l.text);
  }
  return b.finish("slurm");
}

MappingFile parse_csv(const std::string &text, const std::string &path, int ranks) {
  Builder b(path, ranks);
  bool header = false;
  for (const Line &l : lines_of(text, true)) {
    if (!header) {
      if (l.text != "rank,node,core") b.fail(l.number, "expected the header 'rank,node,core'");
      header = true;
      continue;
    }
    const auto w = words(l.text, ',');
    if (w.size() != 3 || !is_integer(w[1]) || !is_integer(w[2]))
      b.fail(l.number, "expected 'rank,node,core' integers, got '" + l.text + "'");
    b.place(b.rank(w[0], l.number), l.number, w[1], std::stoi(w[2]), "");
  }
  return b.finish("csv");
}

// Line n lists the ranks of node n in core order: "0-3,8,9".
MappingFile parse_cray(const std::string &text, const std::string &path, int ranks) {
  Builder b(path, ranks);
  int node = 0;
  for (const Line &l : lines_of(text, true)) {
    int core = 0;
    for (const std::string &item : words(l.text, ',')) {
      const auto dash = item.find('-');
      const int first = b.rank(item.substr(0, dash), l.number);
      const int last = dash == std::string::npos ? first : b.rank(item.substr(dash + 1), l.number);
      if (last < first) b.fail(l.number, "descending range '" + item + "'");
      for (int r = first; r <= last; ++r) b.place(r, l.number, std::to_string(node), core++, "");
    }
    ++node;
  }
  return b.finish("cray");
}

// Line i = coordinates of rank i, the last one the core: "X Y Z T" or "A B C D E T".
MappingFile parse_bluegene(const std::string &text, const std::string &path, int ranks,
                           const std::string &format) {
  const std::size_t want = format == "bgp" ? 4 : 6;
  Builder b(path, ranks);
  int r = 0;
  for (const Line &l : lines_of(text, true)) {
    const auto w = words(l.text, ' ');
    bool ok = w.size() == want;
    for (const auto &x : w) ok = ok && is_integer(x);
    if (!ok)
      b.fail(l.number,
             "expected " + std::to_string(want) + " integer coordinates, got '" + l.text + "'");
    if (r >= ranks)
      b.fail(l.number, "more lines than the job's " + std::to_string(ranks) + " ranks");
    std::string key;
    for (std::size_t i = 0; i + 1 < want; ++i) key += (i ? " " : "") + w[i];
    b.place(r++, l.number, key, std::stoi(w[want - 1]), "");
  }
  return b.finish(format);
}

}  // namespace

MappingFile parse_mapping(const std::string &text, const std::string &path,
                          const std::string &format, int ranks) {
  const std::string f = format == "auto" ? detect(text) : format;
  if (f == "rankfile") return parse_rankfile(text, path, ranks);
  if (f == "slurm") return parse_slurm(text, path, ranks);
  if (f == "csv") return parse_csv(text, path, ranks);
  if (f == "cray") return parse_cray(text, path, ranks);
  if (f == "bgp" || f == "bgq") return parse_bluegene(text, path, ranks, f);
  fail_arg("--mapping-format: unknown format '", format, "'");
}

MappingFile read_mapping(const std::string &path, const std::string &format, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank));
  PETACOMM_APP_MPI(MPI_Comm_size(comm, &ranks));
  std::string text, error;
  if (rank == 0) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      error = "--mapping: cannot read '" + path + "': " + std::strerror(errno);
    } else {
      std::ostringstream all;
      all << in.rdbuf();
      text = all.str();
    }
  }
  agree_on_error(error, comm);
  long long length = static_cast<long long>(text.size());
  PETACOMM_APP_MPI(MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, comm));
  PETACOMM_CHECK_ARG(length < (1LL << 30), "--mapping: '", path, "' is larger than 1 GiB");
  text.resize(static_cast<std::size_t>(length));
  PETACOMM_APP_MPI(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, comm));
  return parse_mapping(text, path, format, ranks);  // the same text: the same result everywhere
}

}  // namespace petacomm::apps::halo
