// The final log, written at MPI_Finalize: every rank's data merged along a binomial tree (no
// rank receives all tables one by one), then rank 0 writes the log to a temporary name and
// renames it, so readers never see half a log, and prints the banner. Schema:
// docs/profiler.md (schema "petacomm.profile", version kSchemaVersion).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "handle_table.hpp"
#include "json.hpp"
#include "state.hpp"

namespace petacomm::prof {

namespace {

const char *detail_name(int detail) {
  return detail == kDetailSummary ? "summary" : detail == kDetailFull ? "full" : "normal";
}

const char *thread_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "single";
    case MPI_THREAD_FUNNELED:
      return "funneled";
    case MPI_THREAD_SERIALIZED:
      return "serialized";
    case MPI_THREAD_MULTIPLE:
      return "multiple";
    default:
      return "unknown";
  }
}

const char *kRankColumns =
    "[\"rank\",\"host\",\"pid\",\"wall_ns\",\"mpi_ns\",\"io_ns\",\"rss_kib\",\"init_ns\","
    "\"events\",\"coarsened_peer\",\"coarsened_size\",\"coarsened_call\",\"requests_untracked\","
    "\"requests_incomplete\",\"region_errors\",\"keys\"]";
const char *kRegionColumns =
    "[\"rank\",\"region\",\"parent\",\"entries\",\"wall_ns\",\"mpi_ns\",\"io_ns\",\"excl_wall_ns\","
    "\"excl_mpi_ns\",\"excl_io_ns\",\"lbst_ns\"]";
const char *kEntryColumns =
    "[\"rank\",\"region\",\"call\",\"size\",\"size_max\",\"peer\",\"count\","
    "\"bytes\",\"time_ns\",\"min_ns\",\"max_ns\"]";
const char *kCallColumns =
    "[\"region\",\"call\",\"size\",\"size_max\",\"count\",\"bytes\",\"time_ns\",\"min_ns\","
    "\"max_ns\",\"ranks\",\"rank_time_min_ns\",\"rank_time_max_ns\"]";
const char *kCallRankColumns = "[\"rank\",\"call\",\"count\",\"bytes\",\"time_ns\"]";
const char *kPeerColumns = "[\"rank\",\"call\",\"peer\",\"count\",\"bytes\",\"time_ns\"]";

const char *region_name(int r) {
  if (r == kRegionCoarse) return "(coarsened)";
  return (r >= 0 && r < g.live->nregions) ? g.regions[r].name : "(unknown)";
}

void put_rank_row(JsonOut &o, uint64_t wall) {
  const Live &l = *g.live;
  o.s("[").u(g.world_rank).s(",").q(g.host).s(",").u(g.pid).s(",").u(wall).s(",").u(l.mpi_ns);
  o.s(",").u(l.io_ns).s(",").u(peak_rss_kib()).s(",").u(l.init_ns).s(",").u(l.events);
  o.s(",").u(l.coarsened_peer).s(",").u(l.coarsened_size).s(",").u(l.coarsened_call);
  o.s(",").u(l.requests_untracked).s(",").u(l.requests_incomplete).s(",").u(l.region_errors);
  o.s(",").u(l.used_keys).s("]");
}

void put_region_rows(JsonOut &o) {
  const Live &l = *g.live;
  for (int r = 0; r < l.nregions; ++r) {
    const Region &reg = g.regions[r];
    if (r) o.s(",\n");
    o.s("[").u(g.world_rank).s(",").q(reg.name).s(",");
    if (reg.parent >= 0)
      o.q(g.regions[reg.parent].name);
    else
      o.s("null");
    o.s(",").u(reg.entries).s(",").u(reg.wall_ns).s(",").u(reg.mpi_ns).s(",").u(reg.io_ns);
    o.s(",").u(reg.excl_wall_ns).s(",").u(reg.excl_mpi_ns).s(",").u(reg.excl_io_ns);
    o.s(",").u(reg.lbst_ns).s("]");
  }
}

void put_entry(JsonOut &o, const Entry &e, bool &first) {
  if (e.count == 0) return;
  if (!first) o.s(",\n");
  first = false;
  o.s("[").u(g.world_rank).s(",").q(region_name(e.region)).s(",").u(e.call);
  o.s(",").u(size_lower(e.size_key)).s(",").u(e.size_max).s(",").i(e.peer);
  o.s(",").u(e.count).s(",").u(e.bytes).s(",").u(e.time_ns).s(",").u(e.min_ns);
  o.s(",").u(e.max_ns).s("]");
}

void put_entry_rows(JsonOut &o) {
  bool first = true;
  for (uint64_t s = 0; s < g.live->used_keys; ++s) put_entry(o, g.table[s], first);
  for (int c = 0; c < kNumCalls; ++c) put_entry(o, g.fallback[c], first);
}

}  // namespace

void put_log_header(JsonOut &o) {
  o.s("\"schema\":\"petacomm.profile\",\"schema_version\":").u(kSchemaVersion);
  o.s(",\"command\":").s(g.command_json[0] ? g.command_json : "[]");
  o.s(",\"mpi_library\":").q(g.library);
  o.s(",\"thread_level\":").q(thread_name(g.thread_level));
  o.s(",\"ranks\":").u(g.world_size).s(",\"nodes\":").u(g.nodes);
  o.s(",\"profiler\":{\"version\":").q(PETACOMM_PROF_VERSION);
  o.s(",\"table_entries\":").u(g.table_mask + 1);
  o.s(",\"table_bytes\":").u((g.table_mask + 1) * sizeof(Entry));
  o.s(",\"table_capacity\":").u(g.key_capacity);
  o.s(",\"size_exact_limit\":").u(g.settings.size_exact_limit);
  o.s(",\"size_bins_per_octave\":8");
  o.s(",\"detail\":").q(detail_name(g.settings.detail));
  o.s(",\"wrap\":").q(g.settings.wrap);
  o.s(",\"io\":")
      .q(g.settings.io_mode == kIoModeOff   ? "off"
         : g.settings.io_mode == kIoModeAll ? "all"
                                            : "main");
  o.s(",\"partial\":").q(g.live_is_file ? "file" : "off");
  o.s(",\"output\":").q(g.settings.output);
  o.s("},\"units\":{\"time\":\"ns\",\"bytes\":\"bytes\",\"rss\":\"KiB\"}");
  o.s(",\"peer_codes\":{\"none\":-1,\"proc_null\":-2,\"any_source\":-3,\"coarsened\":-4,"
      "\"outside_world\":-5}");
  o.s(",\"calls\":[");
  for (int c = 0; c < kNumCalls; ++c) {
    if (c) o.s(",");
    o.q(kCallNames[c]);
  }
  o.s("],\"call_kinds\":[");
  for (int c = 0; c < kNumCalls; ++c) {
    if (c) o.s(",");
    o.q(kCallKinds[c]);
  }
  o.s("]");
}

namespace {

// One row of the call summary: (region, call, size class) and its statistics, summed over
// partners and ranks. Rows are kept sorted by key, so that merging two ranks' rows along the
// tree is one linear pass.
struct AggRow {
  uint32_t region;
  uint32_t call;
  uint64_t size_key;
  uint64_t count, bytes, time_ns, min_ns, max_ns, ranks, rank_min_ns, rank_max_ns;
  bool operator<(const AggRow &o) const {
    if (region != o.region) return region < o.region;
    if (call != o.call) return call < o.call;
    return size_key < o.size_key;
  }
  bool same_key(const AggRow &o) const {
    return region == o.region && call == o.call && size_key == o.size_key;
  }
  void add(const AggRow &o) {
    count += o.count;
    bytes += o.bytes;
    time_ns += o.time_ns;
    min_ns = std::min(min_ns, o.min_ns);
    max_ns = std::max(max_ns, o.max_ns);
    ranks += o.ranks;
    rank_min_ns = std::min(rank_min_ns, o.rank_min_ns);
    rank_max_ns = std::max(rank_max_ns, o.rank_max_ns);
  }
};
static_assert(sizeof(AggRow) == 80, "rows are sent as bytes");

struct AggVal {
  uint64_t count, bytes, time_ns;
};

// The call summary's size key at the log's detail: `summary` keeps power-of-two classes (as
// the reports show them), the other details the table's size classes.
uint64_t summary_size_key(uint64_t size_key) {
  if (g.settings.detail != kDetailSummary || size_key == kSizeAll) return size_key;
  const uint64_t lo = size_lower(size_key);
  return lo == 0 ? 0 : (1ull << (63 - __builtin_clzll(lo))) | kSizeCoarse;
}

enum Fragment { kFragRanks, kFragRegions, kFragCallRank, kFragPeers, kFragEntries, kFragCount };

// Statistics of one (call site, call), summed over ranks.
struct SiteAgg {
  uint64_t count, bytes, time_ns, min_ns, max_ns, ranks;
};
using SiteKey = std::pair<uint32_t, std::string>;  // call, frames (callsites.cpp's text)

struct Merged {
  std::map<SiteKey, SiteAgg> sites;
  std::vector<std::string> regions;
  std::unordered_map<std::string, uint32_t> region_ids;
  std::vector<AggRow> agg;  // sorted by key, one row per key
  std::string frags[kFragCount];

  uint32_t region_id(const std::string &name) {
    auto it = region_ids.find(name);
    if (it != region_ids.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(regions.size());
    regions.push_back(name);
    region_ids.emplace(name, id);
    return id;
  }
  // Merges sorted rows into agg.
  void merge(std::vector<AggRow> &&rows) {
    if (agg.empty()) {
      agg = std::move(rows);
      return;
    }
    std::vector<AggRow> out;
    out.reserve(agg.size() + rows.size());
    size_t a = 0, b = 0;
    while (a < agg.size() || b < rows.size()) {
      if (b == rows.size() || (a < agg.size() && agg[a] < rows[b])) {
        out.push_back(agg[a++]);
      } else if (a == agg.size() || rows[b] < agg[a]) {
        out.push_back(rows[b++]);
      } else {
        out.push_back(agg[a++]);
        out.back().add(rows[b++]);
      }
    }
    agg = std::move(out);
  }
  void add_site(const SiteKey &key, const SiteAgg &v) {
    auto [it, fresh] = sites.emplace(key, v);
    if (fresh) return;
    SiteAgg &a = it->second;
    a.count += v.count;
    a.bytes += v.bytes;
    a.time_ns += v.time_ns;
    a.min_ns = std::min(a.min_ns, v.min_ns);
    a.max_ns = std::max(a.max_ns, v.max_ns);
    a.ranks += v.ranks;
  }
  void append(int which, const std::string &text) {
    if (text.empty()) return;
    if (!frags[which].empty()) frags[which] += ",\n";
    frags[which] += text;
  }
};

template <typename T>
void put_pod(std::vector<char> &buf, const T &v) {
  const char *p = reinterpret_cast<const char *>(&v);
  buf.insert(buf.end(), p, p + sizeof(T));
}
template <typename T>
bool get_pod(const std::vector<char> &buf, size_t &at, T &v) {
  if (at + sizeof(T) > buf.size()) return false;
  std::memcpy(&v, buf.data() + at, sizeof(T));
  at += sizeof(T);
  return true;
}
void put_str(std::vector<char> &buf, const std::string &s) {
  put_pod<uint64_t>(buf, s.size());
  buf.insert(buf.end(), s.begin(), s.end());
}
bool get_str(const std::vector<char> &buf, size_t &at, std::string &s) {
  uint64_t n = 0;
  if (!get_pod(buf, at, n) || at + n > buf.size()) return false;
  s.assign(buf.data() + at, n);
  at += n;
  return true;
}

std::vector<char> serialise(const Merged &m) {
  std::vector<char> buf;
  put_pod<uint64_t>(buf, m.regions.size());
  for (const auto &r : m.regions) put_str(buf, r);
  put_pod<uint64_t>(buf, m.agg.size());
  const char *rows = reinterpret_cast<const char *>(m.agg.data());
  buf.insert(buf.end(), rows, rows + m.agg.size() * sizeof(AggRow));
  for (const auto &f : m.frags) put_str(buf, f);
  put_pod<uint64_t>(buf, m.sites.size());
  for (const auto &[key, v] : m.sites) {
    put_pod(buf, key.first);
    put_str(buf, key.second);
    put_pod(buf, v);
  }
  return buf;
}

bool merge_from(Merged &m, const std::vector<char> &buf) {
  size_t at = 0;
  uint64_t nreg = 0;
  if (!get_pod(buf, at, nreg)) return false;
  std::vector<uint32_t> remap(nreg);
  for (uint64_t i = 0; i < nreg; ++i) {
    std::string name;
    if (!get_str(buf, at, name)) return false;
    remap[i] = m.region_id(name);
  }
  uint64_t nagg = 0;
  if (!get_pod(buf, at, nagg) || nagg > (buf.size() - at) / sizeof(AggRow)) return false;
  std::vector<AggRow> rows(nagg);
  std::memcpy(rows.data(), buf.data() + at, nagg * sizeof(AggRow));
  at += nagg * sizeof(AggRow);
  bool sorted = true;
  for (uint64_t i = 0; i < nagg; ++i) {
    if (rows[i].region >= nreg || rows[i].call >= static_cast<uint32_t>(kNumCalls)) return false;
    rows[i].region = remap[rows[i].region];
    if (i && !(rows[i - 1] < rows[i])) sorted = false;
  }
  if (!sorted) std::sort(rows.begin(), rows.end());  // the two ranks' regions differ in order
  m.merge(std::move(rows));
  for (int f = 0; f < kFragCount; ++f) {
    std::string text;
    if (!get_str(buf, at, text)) return false;
    m.append(f, text);
  }
  uint64_t nsites = 0;
  if (!get_pod(buf, at, nsites)) return false;
  for (uint64_t i = 0; i < nsites; ++i) {
    SiteKey key;
    SiteAgg v;
    if (!get_pod(buf, at, key.first) || !get_str(buf, at, key.second) || !get_pod(buf, at, v) ||
        key.first >= static_cast<uint32_t>(kNumCalls))
      return false;
    m.add_site(key, v);
  }
  return true;
}

constexpr int kTag = 7301;
constexpr uint64_t kChunk = 1ull << 30;

void send_buffer(const std::vector<char> &buf, int to) {
  uint64_t n = buf.size();
  PMPI_Send(&n, 1, MPI_UINT64_T, to, kTag, g.comm);
  for (uint64_t off = 0; off < n; off += kChunk)
    PMPI_Send(buf.data() + off, static_cast<int>(std::min(kChunk, n - off)), MPI_BYTE, to, kTag,
              g.comm);
}

bool recv_buffer(std::vector<char> &buf, int from) {
  uint64_t n = 0;
  PMPI_Recv(&n, 1, MPI_UINT64_T, from, kTag, g.comm, MPI_STATUS_IGNORE);
  try {
    buf.resize(n);
  } catch (...) {
    buf.clear();
    // Consume the chunks so that the sender is not left blocked (g.comm returns errors, so
    // the truncated receives discard them).
    char sink[16];
    for (uint64_t off = 0; off < n; off += kChunk)
      PMPI_Recv(sink, sizeof(sink), MPI_BYTE, from, kTag, g.comm, MPI_STATUS_IGNORE);
    return false;
  }
  for (uint64_t off = 0; off < n; off += kChunk)
    PMPI_Recv(buf.data() + off, static_cast<int>(std::min(kChunk, n - off)), MPI_BYTE, from, kTag,
              g.comm, MPI_STATUS_IGNORE);
  return true;
}

// This rank's rows: the table's entries summed over partners (and, at summary detail, over
// the sizes of a power-of-two class) through a flat hash of the row keys, then sorted.
void build_local(Merged &m, uint64_t wall) {
  for (int r = 0; r < g.live->nregions; ++r) m.region_id(g.regions[r].name);
  const uint32_t coarse_region = m.region_id("(coarsened)");
  std::vector<AggVal> by_call(kNumCalls, AggVal{});
  std::map<std::pair<int, int>, AggVal> by_peer;
  const uint64_t used = g.live->used_keys;
  std::vector<AggRow> rows;
  rows.reserve(used + kNumCalls);
  uint64_t slots = 16;
  while (slots < 2 * (used + kNumCalls)) slots *= 2;
  std::vector<uint32_t> where(slots, 0);  // row number + 1
  auto visit = [&](const Entry &e) {
    if (e.count == 0) return;
    const uint32_t region = e.region == kRegionCoarse ? coarse_region : e.region;
    const AggRow row{region,    e.call,   summary_size_key(e.size_key),
                     e.count,   e.bytes,  e.time_ns,
                     e.min_ns,  e.max_ns, 1,
                     e.time_ns, e.time_ns};
    uint64_t h = mix64(row.size_key ^ (static_cast<uint64_t>(row.call) << 40) ^
                       (static_cast<uint64_t>(row.region) << 52));
    for (;; ++h) {
      uint32_t &slot = where[h & (slots - 1)];
      if (slot == 0) {
        rows.push_back(row);
        slot = static_cast<uint32_t>(rows.size());
        break;
      }
      AggRow &have = rows[slot - 1];
      if (have.same_key(row)) {
        have.add(row);
        // One rank: its time for the key is the sum over partners.
        have.ranks = 1;
        have.rank_min_ns = have.rank_max_ns = have.time_ns;
        break;
      }
    }
    AggVal &c = by_call[e.call];
    c.count += e.count;
    c.bytes += e.bytes;
    c.time_ns += e.time_ns;
    if (e.peer != kPeerNone) {
      AggVal &p = by_peer[{e.call, e.peer}];
      p.count += e.count;
      p.bytes += e.bytes;
      p.time_ns += e.time_ns;
    }
  };
  for (uint64_t s = 0; s < used; ++s) visit(g.table[s]);
  for (int c = 0; c < kNumCalls; ++c) visit(g.fallback[c]);
  std::sort(rows.begin(), rows.end());
  m.merge(std::move(rows));
  callsites_collect(
      [](const std::string &frames, int call, uint64_t count, uint64_t bytes, uint64_t time_ns,
         uint64_t min_ns, uint64_t max_ns, void *data) {
        static_cast<Merged *>(data)->add_site(SiteKey{static_cast<uint32_t>(call), frames},
                                              SiteAgg{count, bytes, time_ns, min_ns, max_ns, 1});
      },
      &m);
  {
    JsonOut o(&m.frags[kFragRanks]);
    put_rank_row(o, wall);
  }
  {
    JsonOut o(&m.frags[kFragRegions]);
    put_region_rows(o);
  }
  if (g.settings.detail != kDetailSummary) {
    JsonOut o(&m.frags[kFragCallRank]);
    bool first = true;
    for (int c = 0; c < kNumCalls; ++c) {
      if (by_call[c].count == 0) continue;
      if (!first) o.s(",\n");
      first = false;
      o.s("[").u(g.world_rank).s(",").u(c).s(",").u(by_call[c].count).s(",");
      o.u(by_call[c].bytes).s(",").u(by_call[c].time_ns).s("]");
    }
    JsonOut p(&m.frags[kFragPeers]);
    first = true;
    for (const auto &[key, v] : by_peer) {
      if (!first) p.s(",\n");
      first = false;
      p.s("[").u(g.world_rank).s(",").u(key.first).s(",").i(key.second).s(",").u(v.count);
      p.s(",").u(v.bytes).s(",").u(v.time_ns).s("]");
    }
  }
  if (g.settings.detail == kDetailFull) {
    JsonOut o(&m.frags[kFragEntries]);
    put_entry_rows(o);
  }
}

// "callsites": one row per (call site, call), its frames as [module, offset] pairs (innermost
// first; the offset is the return address in the module's ELF addresses), summed over ranks.
void put_callsites(JsonOut &o, const Merged &m) {
  o.s(",\n\"callsite_depth\":").u(g.settings.callsite_depth);
  o.s(",\n\"callsites\":{\"columns\":[\"call\",\"frames\",\"count\",\"bytes\",\"time_ns\","
      "\"min_ns\",\"max_ns\",\"ranks\"],\"rows\":[\n");
  bool first = true;
  for (const auto &[key, v] : m.sites) {
    if (!first) o.s(",\n");
    first = false;
    o.s("[").u(key.first).s(",[");
    const std::string &f = key.second;
    for (size_t at = 0, k = 0; at < f.size(); ++k) {
      size_t end = f.find('\x1e', at);
      if (end == std::string::npos) end = f.size();
      const size_t sep = f.find('\x1f', at);
      if (k) o.s(",");
      if (sep == std::string::npos || sep > end) {
        o.s("[").q(f.c_str() + at, end - at).s(",0]");
      } else {
        o.s("[").q(f.c_str() + at, sep - at).s(",");
        o.s(std::string(f.c_str() + sep + 1, end - sep - 1)).s("]");
      }
      at = end + 1;
    }
    o.s("],").u(v.count).s(",").u(v.bytes).s(",").u(v.time_ns).s(",").u(v.min_ns).s(",");
    o.u(v.max_ns).s(",").u(v.ranks).s("]");
  }
  o.s("]}");
}

bool write_file_atomically(const char *path, const std::string &text) {
  char tmp[4300];
  std::snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, g.pid);
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  bool ok = true;
  while (ok && done < text.size()) {
    const ssize_t w = write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (ok) done += static_cast<size_t>(w);
  }
  ok = ok && fsync(fd) == 0;
  const int saved = errno;
  close(fd);
  if (!ok || rename(tmp, path) != 0) {
    const int why = ok ? errno : saved;
    unlink(tmp);
    errno = why;
    return false;
  }
  return true;
}

std::string human_bytes(double b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

void print_banner(const Merged &m, const uint64_t sums[4], const uint64_t maxs[4],
                  const std::string &path, bool written, int error) {
  const double wall_max = maxs[0] * 1e-9;
  const double total = sums[0] > 0 ? static_cast<double>(sums[0]) : 1.0;
  const double calc_mean = static_cast<double>(sums[3]) / g.world_size;
  const double imbalance = maxs[3] > 0 ? 100.0 * (maxs[3] - calc_mean) / maxs[3] : 0.0;
  FILE *err = stderr;
  std::fprintf(err, "petacomm-prof: %s\n", g.command_text);
  std::fprintf(err,
               "  %d ranks on %d node%s | wall %.3f s | MPI %.1f %% | I/O %.1f %% | "
               "CALC imbalance %.1f %%\n",
               g.world_size, g.nodes, g.nodes == 1 ? "" : "s", wall_max, 100.0 * sums[1] / total,
               100.0 * sums[2] / total, imbalance);
  std::vector<std::tuple<uint64_t, uint32_t, uint64_t, uint64_t>> calls;  // time, call, n, bytes
  std::vector<AggVal> by_call(kNumCalls, AggVal{});
  for (const AggRow &row : m.agg) {
    if (std::strcmp(kCallKinds[row.call], "posix") == 0) continue;
    by_call[row.call].time_ns += row.time_ns;
    by_call[row.call].count += row.count;
    by_call[row.call].bytes += row.bytes;
  }
  for (int c = 0; c < kNumCalls; ++c)
    if (by_call[c].count)
      calls.emplace_back(by_call[c].time_ns, c, by_call[c].count, by_call[c].bytes);
  std::sort(calls.rbegin(), calls.rend());
  double in_calls = 0;  // summed over calls (and threads): the share of each call
  for (const auto &call : calls) in_calls += static_cast<double>(std::get<0>(call));
  if (in_calls <= 0) in_calls = 1;
  for (size_t i = 0; i < calls.size() && i < 5; ++i) {
    const auto &[t, c, n, b] = calls[i];
    std::fprintf(err, "  %-24s %10.4f s  %5.1f %% of MPI  %12llu calls  %s\n", kCallNames[c],
                 t * 1e-9, 100.0 * t / in_calls, static_cast<unsigned long long>(n),
                 human_bytes(static_cast<double>(b)).c_str());
  }
  if (written)
    std::fprintf(err, "  log: %s\n", path.c_str());
  else
    std::fprintf(err, "  log: could not write %s (%s)\n", path.c_str(), std::strerror(error));
}

}  // namespace

bool write_final_log() {
  const uint64_t wall = g.t_end - g.live->t_start_ns;
  Merged m;
  bool ok = true;
  try {
    build_local(m, wall);
  } catch (...) {
    ok = false;
    m = Merged{};
  }
  // Binomial tree: at step k, ranks with bit k set send to rank - 2^k and stop.
  const int rank = g.world_rank, size = g.world_size;
  for (int mask = 1; mask < size; mask <<= 1) {
    if (rank & mask) {
      std::vector<char> buf;
      try {
        buf = serialise(m);
      } catch (...) {
        buf.clear();
        ok = false;
      }
      if (buf.empty()) {  // an empty but well-formed payload keeps the tree going
        Merged empty;
        buf = serialise(empty);
      }
      send_buffer(buf, rank - mask);
      break;
    }
    if (rank + mask < size) {
      std::vector<char> buf;
      if (recv_buffer(buf, rank + mask)) {
        try {
          if (!merge_from(m, buf)) ok = false;
        } catch (...) {
          ok = false;
        }
      } else {
        ok = false;
      }
    }
  }
  // Totals for the banner: wall, MPI, I/O, CALC per rank.
  const Live &l = *g.live;
  const uint64_t calc = wall > l.mpi_ns + l.io_ns ? wall - l.mpi_ns - l.io_ns : 0;
  uint64_t mine[4] = {wall, l.mpi_ns, l.io_ns, calc}, sums[4] = {0}, maxs[4] = {0};
  PMPI_Reduce(mine, sums, 4, MPI_UINT64_T, MPI_SUM, 0, g.comm);
  PMPI_Reduce(mine, maxs, 4, MPI_UINT64_T, MPI_MAX, 0, g.comm);
  int all_ok = ok ? 1 : 0, merged_ok = 0;
  PMPI_Reduce(&all_ok, &merged_ok, 1, MPI_INT, MPI_MIN, 0, g.comm);
  if (rank != 0) return false;
  std::string text;
  try {
    JsonOut o(&text);
    o.s("{");
    put_log_header(o);
    o.s(",\"complete\":true,\"created_unix_s\":").u(static_cast<uint64_t>(time(nullptr)));
    if (!merged_ok) o.s(",\"merge_errors\":true");
    if (g.snapshot > 0) o.s(",\"snapshot\":").u(g.snapshot);
    o.s(",\n\"wall_ns\":").u(maxs[0]);
    o.s(",\n\"rank_summary\":{\"columns\":").s(kRankColumns).s(",\"rows\":[\n");
    o.s(m.frags[kFragRanks]).s("]}");
    o.s(",\n\"region_summary\":{\"columns\":").s(kRegionColumns).s(",\"rows\":[\n");
    o.s(m.frags[kFragRegions]).s("]}");
    o.s(",\n\"call_summary\":{\"columns\":").s(kCallColumns).s(",\"rows\":[\n");
    bool first = true;
    // Region names quoted once, not once per row.
    std::vector<std::string> quoted(m.regions.size());
    for (size_t r = 0; r < m.regions.size(); ++r) JsonOut(&quoted[r]).q(m.regions[r].c_str());
    for (const AggRow &v : m.agg) {
      if (!first) o.s(",\n");
      first = false;
      o.s("[").s(quoted[v.region]).s(",").u(v.call).s(",").u(size_lower(v.size_key));
      o.s(",").u(size_upper(v.size_key)).s(",").u(v.count).s(",").u(v.bytes).s(",").u(v.time_ns);
      o.s(",").u(v.min_ns).s(",").u(v.max_ns).s(",").u(v.ranks).s(",").u(v.rank_min_ns);
      o.s(",").u(v.rank_max_ns).s("]");
    }
    o.s("]}");
    if (g.settings.detail != kDetailSummary) {
      o.s(",\n\"call_by_rank\":{\"columns\":").s(kCallRankColumns).s(",\"rows\":[\n");
      o.s(m.frags[kFragCallRank]).s("]}");
      o.s(",\n\"peer_summary\":{\"columns\":").s(kPeerColumns).s(",\"rows\":[\n");
      o.s(m.frags[kFragPeers]).s("]}");
    }
    if (g.settings.callsite_depth > 0) put_callsites(o, m);
    if (g.settings.detail == kDetailFull) {
      o.s(",\n\"entries\":{\"columns\":").s(kEntryColumns).s(",\"rows\":[\n");
      o.s(m.frags[kFragEntries]).s("]}");
    }
    o.s("}\n");
  } catch (...) {
    text.clear();
  }
  const bool written = !text.empty() && write_file_atomically(g.settings.output, text);
  const int error = text.empty() ? ENOMEM : errno;
  if (g.settings.banner)
    print_banner(m, sums, maxs, g.settings.output, written, error);
  else if (!written)
    std::fprintf(stderr, "petacomm-prof: could not write %s (%s)\n", g.settings.output,
                 std::strerror(error));
  return written;
}

}  // namespace petacomm::prof
