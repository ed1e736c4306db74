#include "plan.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>

#include "allgather_discovery.hpp"
#include "cost_model.hpp"
#include "directory.hpp"
#include "error.hpp"
#include "exchange.hpp"
#include "json_writer.hpp"
#include "planner.hpp"
#include "strategies.hpp"

namespace petacomm::xchg {
namespace {

enum class Requested { kAuto, kDense, kAllgather, kDirectory, kOwner, kHubSplit };

bool parse_strategy(const char *name, Requested *out) {
  static const std::pair<const char *, Requested> names[] = {
      {"auto", Requested::kAuto},           {"dense-allreduce", Requested::kDense},
      {"allgather", Requested::kAllgather}, {"directory", Requested::kDirectory},
      {"owner", Requested::kOwner},         {"hub-split", Requested::kHubSplit}};
  if (name == nullptr || *name == '\0') {
    *out = Requested::kAuto;
    return true;
  }
  for (const auto &[text, value] : names)
    if (std::strcmp(name, text) == 0) {
      *out = value;
      return true;
    }
  return false;
}

std::string validate_options(const petacomm_xchg_options &o) {
  Requested r;
  if (!parse_strategy(o.strategy, &r))
    return concat("strategy: unknown strategy '", o.strategy,
                  "' (expected auto, dense-allreduce, allgather, directory, owner or hub-split)");
  try {
    parse_transport(o.transport);
    ElementOp check(o.plan_dtype, PETACOMM_XCHG_SUM, o.plan_k, nullptr);
  } catch (const Error &e) {
    return e.what();
  }
  if (o.chunk_keys < 1) return concat("chunk_keys: must be >= 1, got ", o.chunk_keys);
  if (o.chunk_keys > INT_MAX / 16)
    return concat("chunk_keys: must be <= ", INT_MAX / 16, ", got ", o.chunk_keys);
  if (o.allgather_keys < 1 || o.allgather_keys > INT_MAX / 2)
    return concat("allgather_keys: must be in [1, ", INT_MAX / 2, "], got ", o.allgather_keys);
  if (o.hub_threshold < 0) return concat("hub_threshold: must be >= 0, got ", o.hub_threshold);
  if (o.autotune < 0) return concat("autotune: must be >= 0, got ", o.autotune);
  const double params[] = {o.cost.p2p_alpha,       o.cost.p2p_beta,        o.cost.allreduce_alpha,
                           o.cost.allreduce_beta,  o.cost.allgather_alpha, o.cost.allgather_beta,
                           o.cost.alltoallv_alpha, o.cost.alltoallv_beta,  o.cost.local_beta};
  for (double v : params)
    if (!(v >= 0) || !std::isfinite(v))
      return concat("cost: parameters must be finite and >= 0, got ", v);
  return {};
}

std::uint64_t options_fingerprint(const petacomm_xchg_options &o) {
  std::uint64_t h = mix64(std::hash<std::string>{}(o.strategy ? o.strategy : ""));
  h = mix64(h ^ std::hash<std::string>{}(o.transport ? o.transport : ""));
  for (std::int64_t v : {o.chunk_keys, o.allgather_keys, std::int64_t{o.hub_threshold},
                         std::int64_t{o.deterministic}, std::int64_t{o.autotune},
                         std::int64_t{o.plan_dtype}, std::int64_t{o.plan_k}})
    h = mix64(h ^ static_cast<std::uint64_t>(v));
  return h;
}

double us(double seconds) { return seconds * 1e6; }

}  // namespace

petacomm_xchg_options default_options() {
  petacomm_xchg_options o;
  o.strategy = "auto";
  o.transport = "p2p";
  o.chunk_keys = 65536;
  o.allgather_keys = 65536;
  o.hub_threshold = 0;
  o.deterministic = 0;
  o.autotune = 0;
  o.plan_dtype = PETACOMM_XCHG_FLOAT64;
  o.plan_k = 1;
  o.cost = default_cost_params();
  return o;
}

struct Plan::Choice {
  std::string reason;
  bool have_sharing = false;
  bool complete_lists = false;
  bool have_predictions = false;
  petacomm_xchg_rank_stats rank{};
  petacomm_xchg_global_stats global{};
  std::array<petacomm_xchg_prediction, PETACOMM_XCHG_NSTRATEGIES> predicted{};
  std::array<double, PETACOMM_XCHG_NSTRATEGIES> measured_execute{};
  std::array<double, PETACOMM_XCHG_NSTRATEGIES> measured_build{};
  int autotune = 0;
  int hub_threshold = 0;
  std::int64_t hub_keys = 0;
  SetupTraffic discovery;
  std::vector<petacomm_xchg_minavgmax> spread;  // describe's per-rank statistics

  // Collective: the global statistics, predictions and describe's spread in two reductions.
  void gather(MPI_Comm comm, const KeyIndex &index, const Histogram &histogram,
              const petacomm_xchg_options &o, double eb, bool a2a, int fixed_hub_threshold) {
    const std::vector<double> per_rank = {
        static_cast<double>(rank.n_local),       static_cast<double>(rank.n_unique),
        static_cast<double>(rank.n_shared),      static_cast<double>(rank.pair_partners),
        static_cast<double>(rank.pair_values),   static_cast<double>(rank.owned_keys),
        static_cast<double>(discovery.messages), static_cast<double>(discovery.bytes)};
    PlanStatistics s = plan_statistics(comm, index, rank, histogram, per_rank, o.chunk_keys,
                                       o.allgather_keys, o.cost, eb, a2a, fixed_hub_threshold);
    global = s.global;
    predicted = s.predicted;
    spread = std::move(s.spread);
  }
};

Plan::Plan(MPI_Comm comm, const std::int64_t *keys, std::int64_t n,
           const petacomm_xchg_options *options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized || mpi_finalized())
    fail_state(
        "MPI is not initialised (or already finalised): create plans between MPI_Init "
        "and MPI_Finalize");
  if (comm == MPI_COMM_NULL) fail_arg("comm: MPI_COMM_NULL is not a valid communicator");
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  if (inter) fail_arg("comm: an intercommunicator is not supported");
  SetupClock clock;
  ActiveSetupClock active(&clock);
  const double t0 = now_seconds(), cpu0 = thread_cpu_seconds();
  const petacomm_xchg_options o = options ? *options : default_options();
  std::string problem = validate_options(o);
  if (problem.empty()) problem = validate_keys(keys, n);
  // One reduction checks every rank's arguments and that the options agree.
  agree_or_fail(comm, problem, options_fingerprint(o),
                "options: differ between ranks (strategy, transport, chunk_keys, allgather_keys, "
                "hub_threshold, deterministic, autotune, plan_dtype and plan_k must agree)");
  {
    MpiWait wait;
    check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  }
  try {
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    deterministic_ = o.deterministic != 0;
    plan_dtype_ = o.plan_dtype;
    plan_k_ = o.plan_k;
    index_ = KeyIndex(keys, n);
    build(o);
    clock.wall = now_seconds() - t0;
    clock.cpu = thread_cpu_seconds() - cpu0;
    setup_ = clock;
    // This rank's setup times (describe() is local; stats() reduces them over ranks).
    JsonWriter setup;
    setup.begin_object().value("setup_seconds", clock.wall).begin_object("setup");
    setup.value("wall_seconds", clock.wall).value("cpu_seconds", clock.cpu);
    setup.value("compute_seconds", clock.compute()).value("mpi_seconds", clock.mpi_wall);
    setup.value("mpi_cpu_seconds", clock.mpi_cpu);
    setup.end_object().end_object();
    description_.pop_back();  // append to the top-level object
    description_ += "," + setup.str().substr(1);
  } catch (...) {
    strategy_.reset();
    types_.clear();
    MPI_Comm_free(&comm_);
    throw;
  }
}

Plan::~Plan() {
  strategy_.reset();
  types_.clear();
  if (comm_ != MPI_COMM_NULL && !mpi_finalized()) MPI_Comm_free(&comm_);
}

void Plan::release() {
  if (active_ && !mpi_finalized()) end();
  strategy_.reset();
  types_.clear();
  if (comm_ != MPI_COMM_NULL && !mpi_finalized()) check_mpi(MPI_Comm_free(&comm_), "MPI_Comm_free");
  comm_ = MPI_COMM_NULL;
}

const ElementType &Plan::element_type(std::size_t bytes) {
  auto it = types_.find(bytes);
  if (it == types_.end()) it = types_.emplace(bytes, ElementType(bytes)).first;
  return it->second;
}

void Plan::build(const petacomm_xchg_options &o) {
  Requested requested;
  parse_strategy(o.strategy, &requested);
  const Transport transport = parse_transport(o.transport);
  const bool a2a = transport == Transport::kAlltoallv;
  const double eb = static_cast<double>(dtype_size(o.plan_dtype, "plan_dtype") * o.plan_k);
  Choice choice;
  choice.autotune = o.autotune;
  const auto &keys = index_.keys();

  if (requested == Requested::kDense) {
    strategy_ = make_dense_allreduce(comm_, index_, o.chunk_keys, deterministic_);
    choice.reason = "dense-allreduce requested by name";
    choice.rank = rank_statistics(index_, Sharing{{}, {}, {0}, {}, {}}, rank_, {}, 0);
    choice.gather(comm_, index_, Histogram{}, o, eb, a2a, 0);
    describe(o, choice);
    return;
  }
  if (requested == Requested::kAllgather) {
    Sharing sharing = allgather_discover(comm_, keys, o.allgather_keys, choice.discovery);
    Histogram histogram{};
    for (std::size_t u = 0; u < sharing.keys(); ++u)
      if (sharing.owner[u] == rank_) histogram[multiplicity_bucket(sharing.multiplicity[u])] += 1;
    strategy_ = make_pairwise("allgather", comm_, sharing, Transport::kAlltoallv);
    choice.have_sharing = choice.complete_lists = true;
    choice.rank = rank_statistics(index_, sharing, rank_, choice.discovery, 0);
    choice.gather(comm_, index_, histogram, o, eb, a2a, 0);
    choice.have_predictions = true;
    choice.reason = "allgather requested by name";
    describe(o, choice);
    return;
  }

  // Directory discovery serves directory, owner, hub-split and the planner.
  int list_limit = INT_MAX;
  if (requested == Requested::kOwner) list_limit = 0;
  if (requested == Requested::kHubSplit && o.hub_threshold > 0) list_limit = o.hub_threshold;
  Directory directory(comm_, keys, list_limit);
  Sharing &sharing = directory.sharing();
  choice.discovery = directory.traffic();
  choice.have_sharing = true;
  choice.complete_lists = list_limit == INT_MAX;
  choice.rank =
      rank_statistics(index_, sharing, rank_, directory.traffic(), directory.reply_ints());
  choice.gather(comm_, index_, directory.home_histogram(), o, eb, a2a, o.hub_threshold);
  choice.have_predictions = true;
  const int model_threshold = choice.predicted[kHubSplit].hub_threshold;
  const int hub_threshold = o.hub_threshold > 0 ? o.hub_threshold : std::max(1, model_threshold);

  auto build_hub_split = [&]() {
    const std::int64_t hubs = directory.assign_hubs(hub_threshold);
    choice.hub_threshold = hub_threshold;
    choice.hub_keys = hubs;
    return make_hub_split(comm_, sharing, hub_threshold, hubs, o.chunk_keys, deterministic_,
                          transport);
  };
  auto build = [&](int id) -> std::unique_ptr<Strategy> {
    switch (id) {
      case kDense:
        return make_dense_allreduce(comm_, index_, o.chunk_keys, deterministic_);
      case kDirectory:
        return make_pairwise("directory", comm_, sharing, transport);
      case kOwner:
        return make_owner(comm_, sharing, transport);
      case kHubSplit:
        return build_hub_split();
      default:
        fail_state("internal: strategy ", id, " cannot be built from the directory");
    }
  };

  if (requested != Requested::kAuto) {
    const int id = requested == Requested::kDirectory ? kDirectory
                   : requested == Requested::kOwner   ? kOwner
                                                      : kHubSplit;
    strategy_ = build(id);
    choice.reason = concat(xchg::strategy_name(id), " requested by name");
    if (id == kHubSplit)
      choice.reason +=
          concat(" (threshold ", hub_threshold, " ranks, ", choice.hub_keys, " hub keys",
                 o.hub_threshold > 0 ? ", given" : ", from the model", ")");
    directory.release_home_table();
    describe(o, choice);
    return;
  }

  // auto: rank the candidates by predicted execution time.
  std::vector<int> candidates = {kDense, kDirectory, kOwner};
  if (choice.predicted[kHubSplit].hub_keys > 0) candidates.push_back(kHubSplit);
  std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    return choice.predicted[a].execute_seconds < choice.predicted[b].execute_seconds;
  });
  int chosen = candidates.front();
  if (o.autotune > 0) {
    std::unique_ptr<Strategy> best;
    double best_time = 0;
    for (int id : candidates) {
      check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
      const double t0 = now_seconds();
      std::unique_ptr<Strategy> s = build(id);
      double mine = now_seconds() - t0;
      check_mpi(MPI_Allreduce(&mine, &choice.measured_build[id], 1, MPI_DOUBLE, MPI_MAX, comm_),
                "MPI_Allreduce");
      choice.measured_execute[id] = measure(*s, o.autotune);
      if (!best || choice.measured_execute[id] < best_time) {
        best = std::move(s);
        best_time = choice.measured_execute[id];
        chosen = id;
      }
    }
    strategy_ = std::move(best);
    std::ostringstream why;
    why << "autotune over " << o.autotune
        << " executions (max over ranks): " << xchg::strategy_name(chosen) << " " << us(best_time)
        << " us";
    for (int id : candidates)
      if (id != chosen)
        why << ", " << xchg::strategy_name(id) << " " << us(choice.measured_execute[id]) << " us";
    why << "; the model had predicted " << xchg::strategy_name(candidates.front());
    choice.reason = why.str();
  } else {
    strategy_ = build(chosen);
    std::ostringstream why;
    why << "lowest predicted execution time: " << xchg::strategy_name(chosen) << " "
        << us(choice.predicted[chosen].execute_seconds) << " us";
    if (candidates.size() > 1)
      why << " vs " << xchg::strategy_name(candidates[1]) << " "
          << us(choice.predicted[candidates[1]].execute_seconds) << " us";
    const double shared_fraction = choice.global.distinct_keys > 0
                                       ? 1.0 - static_cast<double>(choice.global.multiplicity[0]) /
                                                   static_cast<double>(choice.global.distinct_keys)
                                       : 0.0;
    why << "; " << choice.global.distinct_keys << " distinct keys, "
        << std::round(shared_fraction * 1000) / 10 << "% shared, dense range "
        << (choice.global.key_min < 0 ? 0 : choice.global.key_max - choice.global.key_min + 1)
        << " keys";
    if (chosen == kHubSplit)
      why << "; keys on more than " << choice.hub_threshold << " ranks (" << choice.hub_keys
          << ") reduced densely";
    choice.reason = why.str();
  }
  directory.release_home_table();
  describe(o, choice);
}

double Plan::measure(Strategy &strategy, int reps) {
  // A representative element op with the planning element; values are zeros.
  const ElementOp op(plan_dtype_, PETACOMM_XCHG_SUM, plan_k_, nullptr);
  const ElementType &type = element_type(op.elem_bytes());
  std::vector<char> own(index_.unique() * op.elem_bytes(), 0), result(own.size());
  const ExecContext ctx{op, type, deterministic_};
  strategy.begin(ctx, own.data());
  strategy.end(ctx, own.data(), result.data());
  check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
  const double t0 = now_seconds();
  for (int r = 0; r < reps; ++r) {
    strategy.begin(ctx, own.data());
    strategy.end(ctx, own.data(), result.data());
  }
  double mine = (now_seconds() - t0) / reps, worst = 0;
  check_mpi(MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce");
  return worst;
}

void Plan::describe(const petacomm_xchg_options &o, const Choice &c) {
  const double eb = static_cast<double>(dtype_size(o.plan_dtype, "plan_dtype") * o.plan_k);
  const auto &spread = c.spread;
  JsonWriter j;
  j.begin_object();
  j.value("schema", 1);
  j.value("ranks", size_);
  j.value("strategy", strategy_->name());
  j.value("reason", c.reason);
  j.value("transport", transport_name(parse_transport(o.transport)));
  j.value("deterministic", deterministic_);
  j.value("autotune", c.autotune);
  if (std::strcmp(strategy_->name(), "hub-split") == 0) {
    j.value("hub_threshold", c.hub_threshold);
    j.value("hub_keys", c.hub_keys);
  }
  j.begin_object("element");
  j.value("dtype", dtype_name(o.plan_dtype)).value("k", o.plan_k).value("bytes", eb);
  j.end_object();
  j.begin_object("statistics");
  const char *names[] = {"n_local",       "n_unique",   "n_shared",           "partners",
                         "shared_values", "owned_keys", "discovery_messages", "discovery_bytes"};
  for (std::size_t i = 0; i < spread.size(); ++i) {
    j.begin_object(names[i]);
    j.value("min", spread[i].min).value("avg", spread[i].avg).value("max", spread[i].max);
    j.end_object();
  }
  j.value("sharing_known", c.have_sharing);
  j.value("holder_lists_complete", c.complete_lists);
  j.value("distinct_keys", c.global.distinct_keys);
  j.value("key_min", c.global.key_min).value("key_max", c.global.key_max);
  j.value("dense_chunks", c.global.dense_chunks).value("chunk_keys", c.global.chunk_keys);
  j.begin_array("multiplicity");
  if (c.have_sharing) {
    for (int b = 0; b <= PETACOMM_XCHG_HUB_LEVELS; ++b) {
      if (c.global.multiplicity[b] == 0) continue;
      j.begin_object();
      j.value("d_min", b == 0 ? std::int64_t{1} : (std::int64_t{1} << (b - 1)) + 1);
      j.value("d_max", std::int64_t{1} << b);
      j.value("keys", c.global.multiplicity[b]);
      j.end_object();
    }
  }
  j.end_array();
  j.end_object();
  j.begin_object("strategies");
  for (int s = 0; s < PETACOMM_XCHG_NSTRATEGIES; ++s) {
    j.begin_object(xchg::strategy_name(s));
    if (c.have_predictions) {
      const petacomm_xchg_prediction &p = c.predicted[s];
      j.value("predicted_execute_seconds", p.execute_seconds);
      j.value("predicted_setup_seconds", p.setup_seconds);
      j.value("predicted_messages", p.messages);
      j.value("predicted_bytes", p.bytes);
      if (s == kHubSplit) j.value("hub_threshold", p.hub_threshold).value("hub_keys", p.hub_keys);
    }
    if (c.measured_execute[s] > 0) {
      j.value("measured_execute_seconds", c.measured_execute[s]);
      j.value("measured_build_seconds", c.measured_build[s]);
    }
    j.end_object();
  }
  j.end_object();
  j.end_object();
  description_ = j.str();
}

void Plan::begin(MPI_Comm comm, void *values, std::int64_t n, int k, petacomm_xchg_dtype dtype,
                 petacomm_xchg_op op, const petacomm_xchg_user_op *user) {
  if (comm_ == MPI_COMM_NULL) fail_state("plan: already freed");
  if (active_)
    fail_state("execute_begin: an execution of this plan is in progress; call execute_end first");
  if (comm == MPI_COMM_NULL) fail_arg("comm: MPI_COMM_NULL is not the plan's communicator");
  int same = MPI_UNEQUAL;
  check_mpi(MPI_Comm_compare(comm, comm_, &same), "MPI_Comm_compare");
  if (same != MPI_IDENT && same != MPI_CONGRUENT) {
    int size = 0;
    MPI_Comm_size(comm, &size);
    fail_arg("comm: not the communicator this plan was created on (",
             same == MPI_SIMILAR ? "same ranks in another order" : "different ranks", ", ", size,
             " ranks vs the plan's ", size_, ")");
  }
  if (n != index_.positions())
    fail_arg("n: the plan has ", index_.positions(), " key positions on rank ", rank_,
             ", values has ", n);
  if (values == nullptr && n > 0) fail_arg("values: NULL with n = ", n);
  auto element = std::make_unique<ElementOp>(dtype, op, k, user);
  const std::size_t eb = element->elem_bytes();
  const ElementType &type = element_type(eb);
  own_.resize(index_.unique() * eb);
  result_.resize(own_.size());
  index_.combine(*element, values, own_.data());
  strategy_->begin(ExecContext{*element, type, deterministic_}, own_.data());
  op_ = std::move(element);
  values_ = values;
  active_ = true;
}

void Plan::end() {
  if (!active_) fail_state("execute_end: no execution in progress (call execute_begin first)");
  active_ = false;
  const ElementType &type = element_type(op_->elem_bytes());
  strategy_->end(ExecContext{*op_, type, deterministic_}, own_.data(), result_.data());
  index_.scatter(op_->elem_bytes(), result_.data(), values_);
  values_ = nullptr;
}

petacomm_xchg_stats Plan::stats(petacomm_xchg_dtype dtype, int k) {
  if (comm_ == MPI_COMM_NULL) fail_state("plan: already freed");
  const ElementOp element(dtype, PETACOMM_XCHG_SUM, k, nullptr);
  const double eb = static_cast<double>(element.elem_bytes());
  const Traffic t = strategy_->traffic();
  const double memory = static_cast<double>(index_.memory_bytes() + strategy_->schedule_bytes()) +
                        static_cast<double>(strategy_->buffer_entries() +
                                            2 * static_cast<std::int64_t>(index_.unique())) *
                            eb;
  const auto spread = min_avg_max(
      comm_, {t.messages, t.entries * eb, memory, setup_.wall, setup_.compute(), setup_.mpi_wall});
  petacomm_xchg_stats s;
  s.messages = spread[0];
  s.bytes = spread[1];
  s.memory_bytes = spread[2];
  s.setup_seconds = spread[3].max;
  s.setup_wall_seconds = spread[3];
  s.setup_compute_seconds = spread[4];
  s.setup_mpi_seconds = spread[5];
  return s;
}

}  // namespace petacomm::xchg
