#include "plan.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

#include "allgather_discovery.hpp"
#include "directory.hpp"
#include "error.hpp"
#include "exchange.hpp"
#include "json_out.hpp"
#include "node_sharing.hpp"
#include "registry.hpp"

namespace petacomm::xchg {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The registry entry a caller asked for, nullptr for auto (NULL, "" or "auto"); ERR_ARG
// naming the choices for an unknown name.
const XchgStrategy *requested_strategy(const char *name) {
  if (name == nullptr || *name == '\0' || std::strcmp(name, "auto") == 0) return nullptr;
  const XchgStrategy *s = registry().find(name);
  PETACOMM_CHECK_ARG(s != nullptr, "strategy: unknown strategy '", name, "' (expected ",
                     registry().names("auto"), ")");
  return s;
}

// ERR_STATE outside MPI_Init .. MPI_Finalize (MPI calls there abort the job).
void require_mpi_running(const char *what) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  PETACOMM_CHECK_STATE(initialized && !mpi_finalized(), "MPI is not initialised (or already ",
                       "finalised): ", what, " between MPI_Init and MPI_Finalize");
}

// "" or the first problem with the options (no MPI: agreed on collectively before use).
std::string validate_options(const petacomm_xchg_options &o, const petacomm_xchg_p2p_curve *p2p) {
  try {
    requested_strategy(o.strategy);
    parse_transport(o.transport);
  } catch (const Error &e) {
    return e.what();
  }
  try {
    ElementOp check(o.plan_dtype, PETACOMM_XCHG_SUM, o.plan_k, nullptr);
  } catch (const Error &e) {  // "dtype: ..." or "k: ...": the options' plan_dtype or plan_k
    return concat("plan_", e.what());
  }
  if (o.chunk_keys < 1) return concat("chunk_keys: must be >= 1, got ", o.chunk_keys);
  if (o.chunk_keys > INT_MAX / 16)
    return concat("chunk_keys: must be <= ", INT_MAX / 16, ", got ", o.chunk_keys);
  if (o.allgather_keys < 1 || o.allgather_keys > INT_MAX / 2)
    return concat("allgather_keys: must be in [1, ", INT_MAX / 2, "], got ", o.allgather_keys);
  if (o.hub_threshold < 0) return concat("hub_threshold: must be >= 0, got ", o.hub_threshold);
  if (o.autotune < 0 || o.autotune > PETACOMM_MAX_REPS)
    return concat("autotune: must be in [0, ", PETACOMM_MAX_REPS, "], got ", o.autotune);
  if (o.send_window < 0) return concat("send_window: must be >= 0, got ", o.send_window);
  return validate_cost(o.cost, p2p);
}

// What every rank must pass alike to plan creation.
std::vector<AgreedValue> option_values(const petacomm_xchg_options &o,
                                       const petacomm_xchg_p2p_curve *p2p) {
  // The option strings live as long as the caller's options, which outlive the check.
  auto quoted = [](const char *s) { return [s] { return concat("'", s ? s : "", "'"); }; };
  auto number = [](auto value) { return [value] { return concat(value); }; };
  std::vector<AgreedValue> v = {
      {"strategy", hash_text(o.strategy), quoted(o.strategy)},
      {"transport", hash_text(o.transport), quoted(o.transport)},
      {"chunk_keys", hash_number(o.chunk_keys), number(o.chunk_keys)},
      {"allgather_keys", hash_number(o.allgather_keys), number(o.allgather_keys)},
      {"hub_threshold", hash_number(std::int64_t{o.hub_threshold}), number(o.hub_threshold)},
      {"deterministic", hash_number(std::int64_t{o.deterministic}), number(o.deterministic)},
      {"autotune", hash_number(std::int64_t{o.autotune}), number(o.autotune)},
      {"plan_dtype", hash_number(std::int64_t{o.plan_dtype}), number(o.plan_dtype)},
      {"plan_k", hash_number(std::int64_t{o.plan_k}), number(o.plan_k)},
  };
  for (int i = 0; i < kCostParams; ++i) {
    const double value = cost_param(o.cost, i);
    v.push_back({concat("cost.", cost_param_name(i)), hash_number(value), number(value)});
  }
  const int pieces = p2p ? p2p->pieces : 0;
  std::uint64_t curve = hash_number(std::int64_t{pieces});
  for (int i = 0; i < pieces && i < PETACOMM_XCHG_P2P_PIECES; ++i)
    for (double x : {p2p->from_bytes[i], p2p->alpha[i], p2p->beta[i]})
      curve = mix64(curve ^ hash_number(x));
  v.push_back({"p2p", curve, [pieces] { return concat(pieces, " pieces"); }});
  return v;
}

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
  o.send_window = 0;
  o.plan_dtype = PETACOMM_XCHG_FLOAT64;
  o.plan_k = 1;
  o.cost = default_cost_params();
  return o;
}

// What discovery found: nothing (dense-allreduce by name), the allgathered sharing, or the
// directory (which keeps its home table until the strategy is built).
struct Plan::Discovered {
  Discovery kind = Discovery::kNone;
  std::unique_ptr<Directory> directory;
  Sharing allgathered;
  bool complete_lists = false;
  SetupTraffic traffic;
  std::int64_t reply_ints = 0;
  Histogram histogram{};
  bool needs_nodes = false;  // the strategy, or one auto may choose

  Sharing *sharing() {
    if (kind == Discovery::kDirectory) return &directory->sharing();
    return kind == Discovery::kAllgather ? &allgathered : nullptr;
  }
};

// What plan creation learnt and decided, for describe().
struct Plan::Choice {
  petacomm_xchg_rank_stats rank{};
  PlanStatistics statistics;
  Planned planned;  // predictions (meaningful when sharing is known) and auto's decision
  bool have_sharing = false;
  bool complete_lists = false;
  SetupTraffic discovery;
  std::string reason;
  std::size_t chosen = 0;  // registry index of the strategy built
  // Per registry index: what its build reported, autotuned times (NaN: not timed).
  std::vector<int> hub_threshold;
  std::vector<std::int64_t> hub_keys;
  std::vector<std::string> detail;
  std::vector<double> measured_execute, measured_build;

  explicit Choice(std::size_t strategies)
      : hub_threshold(strategies, 0),
        hub_keys(strategies, 0),
        detail(strategies),
        measured_execute(strategies, kNaN),
        measured_build(strategies, kNaN) {}
};

// What describe() reports, kept from creation until the description is first asked for.
struct Plan::Described {
  Choice choice;
  CostModel cost;
  petacomm_xchg_dtype plan_dtype;
  int plan_k;
  int autotune;
  int send_window;
  Transport transport;
};

Plan::Plan(MPI_Comm comm, const std::int64_t *keys, std::int64_t n,
           const petacomm_xchg_options *options, const petacomm_xchg_p2p_curve *p2p,
           const char *caller_error) {
  require_mpi_running("create plans");
  PETACOMM_CHECK_ARG(comm != MPI_COMM_NULL, "comm: MPI_COMM_NULL is not a valid communicator");
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  PETACOMM_CHECK_ARG(!inter, "comm: an intercommunicator is not supported");
  SetupClock &clock = setup_;  // passed to every MPI wait of setup (see MpiWait)
  clock = SetupClock{};
  const double t0 = now_seconds(), cpu0 = thread_cpu_seconds();
  const petacomm_xchg_options o = options ? *options : default_options();
  std::string problem = caller_error != nullptr ? caller_error : "";
  if (problem.empty()) problem = validate_options(o, p2p);
  if (problem.empty()) {
    try {  // local work that may find a bad key: before the agreement, like every check
      index_ = KeyIndex(keys, n);
    } catch (const Error &e) {
      problem = e.what();
    }
  }
  private_ = PrivateComm(comm, &clock);
  comm_ = private_.get();
  try {
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    // One reduction checks every rank's arguments and that the options agree. The first
    // step of the directory, keys to their homes, overlaps it on the ranks whose valid
    // arguments ask for the directory. The others skip it unless the check finds that some
    // rank went ahead (its flag) while the arguments disagree: then they take part sending
    // no keys, so that rank's exchange ends. Every message is received whatever its size,
    // so nothing can hang or overrun a buffer when the arguments disagree.
    const XchgStrategy *requested = problem.empty() ? requested_strategy(o.strategy) : nullptr;
    const bool sends_keys =
        problem.empty() && (requested == nullptr || requested->discovery == Discovery::kDirectory);
    ArgumentCheck check(&clock);
    check.start(comm_, problem, option_values(o, p2p), sends_keys);
    std::unique_ptr<Directory> directory;
    if (sends_keys)
      directory = std::make_unique<Directory>(comm_, private_.tag_base(), &index_.keys(), &clock,
                                              o.send_window);
    if (!check.passed()) {
      if (!sends_keys && check.any_flag())
        Directory(comm_, private_.tag_base(), nullptr, &clock, o.send_window);
      check.fail("no plan was created");
    }
    deterministic_ = o.deterministic != 0;
    plan_dtype_ = o.plan_dtype;
    plan_k_ = o.plan_k;
    plan_element_ = std::make_unique<ElementOp>(plan_dtype_, PETACOMM_XCHG_SUM, plan_k_, nullptr);
    build(o, CostModel(o.cost, p2p), std::move(directory));
    clock.wall = now_seconds() - t0;
    clock.cpu = thread_cpu_seconds() - cpu0;
  } catch (...) {
    described_.reset();
    strategy_.reset();
    types_.clear();
    private_.release();
    comm_ = MPI_COMM_NULL;
    throw;
  }
}

Plan::~Plan() {
  strategy_.reset();
  types_.clear();
}

void Plan::release() {
  if (active_ && !mpi_finalized()) end();
  strategy_.reset();
  types_.clear();
  private_.release();
  comm_ = MPI_COMM_NULL;
}

const ElementType &Plan::element_type(std::size_t bytes) {
  auto it = types_.find(bytes);
  if (it == types_.end()) it = types_.emplace(bytes, ElementType(bytes)).first;
  return it->second;
}

ExecContext Plan::context(const ElementOp &op) {
  return ExecContext{op, element_type(op.elem_bytes()), deterministic_};
}

void *Plan::distinct_values(const ElementOp &op, void *values) {
  if (index_.identity()) return values;
  own_.resize(index_.unique() * op.elem_bytes());
  index_.combine(op, values, own_.data());
  return own_.data();
}

// Discovery, statistics, decision, build, description.
void Plan::build(const petacomm_xchg_options &o, const CostModel &cost,
                 std::unique_ptr<Directory> directory) {
  const XchgStrategy *requested = requested_strategy(o.strategy);
  Discovered found = discover(requested, o, std::move(directory));
  Choice choice(registry().size());
  plan_statistics_of(found, o, cost, choice);
  BuildContext ctx{comm_,
                   private_.tag_base(),
                   &setup_,
                   index_,
                   o,
                   parse_transport(o.transport),
                   deterministic_,
                   found.sharing(),
                   found.directory.get(),
                   nullptr,
                   nullptr,
                   {},
                   0,
                   0};
  if (requested != nullptr) {
    strategy_ = build_one(*requested, ctx, choice);
    choice.reason = concat(requested->about.name, " requested by name",
                           ctx.detail.empty() ? "" : concat(" (", ctx.detail, ")"));
  } else if (o.autotune > 0) {
    autotune(o, ctx, choice);
  } else {
    const Decision &decision = choice.planned.decision;
    const XchgStrategy *chosen = registry().find(decision.choice);
    PETACOMM_CHECK_INTERNAL(chosen != nullptr, "the planner chose '", decision.choice, "'");
    strategy_ = build_one(*chosen, ctx, choice);
    choice.reason = decision.reason + (ctx.detail.empty() ? "" : concat("; ", ctx.detail));
  }
  if (found.directory) found.directory->release_home_table();
  std::vector<std::uint64_t>().swap(choice.statistics.chunks);  // not described
  described_.reset(new Described{std::move(choice), cost, o.plan_dtype, o.plan_k, o.autotune,
                                 o.send_window, parse_transport(o.transport)});
}

Plan::Discovered Plan::discover(const XchgStrategy *requested, const petacomm_xchg_options &o,
                                std::unique_ptr<Directory> directory) {
  Discovered found;
  found.kind = requested ? requested->discovery : Discovery::kDirectory;  // auto: directory
  for (const XchgStrategy *s : registry().entries())
    found.needs_nodes = found.needs_nodes || (s->needs_nodes && (!requested || s == requested));
  const auto &keys = index_.keys();
  switch (found.kind) {
    case Discovery::kNone:
      break;
    case Discovery::kAllgather:
      found.allgathered = allgather_discover(comm_, keys, o.allgather_keys, found.traffic, &setup_);
      found.complete_lists = true;
      for (std::size_t u = 0; u < found.allgathered.keys(); ++u)  // each key counted by its owner
        if (found.allgathered.owner[u] == rank_)
          found.histogram[multiplicity_bucket(found.allgathered.multiplicity[u])] += 1;
      break;
    case Discovery::kDirectory: {
      const int lists = requested ? requested->holder_lists(o) : INT_MAX;
      PETACOMM_CHECK_INTERNAL(directory != nullptr,
                              "directory discovery without the keys sent home");
      found.directory = std::move(directory);
      found.directory->resolve(lists);
      found.complete_lists = lists == INT_MAX;
      found.traffic = found.directory->traffic();
      found.reply_ints = found.directory->reply_ints();
      found.histogram = found.directory->home_histogram();
      break;
    }
  }
  return found;
}

void Plan::plan_statistics_of(Discovered &found, const petacomm_xchg_options &o,
                              const CostModel &cost, Choice &choice) {
  static const Sharing nothing_known{{}, {}, {0}, {}, {}, {}};
  const Sharing *sharing = found.sharing();
  choice.have_sharing = sharing != nullptr;
  choice.complete_lists = found.complete_lists;
  choice.discovery = found.traffic;
  choice.rank = rank_statistics(index_, sharing ? *sharing : nothing_known, rank_, found.traffic,
                                found.reply_ints);
  if (sharing != nullptr && found.needs_nodes) {
    const std::shared_ptr<const NodeTopology> nodes = private_.nodes(&setup_);
    node_statistics(*nodes, *sharing, rank_, node_partials_allowed(*nodes, deterministic_),
                    choice.rank, &setup_);
  }
  const double eb = static_cast<double>(dtype_size(o.plan_dtype, "plan_dtype") * o.plan_k);
  const RankCost in{choice.rank, size_, cost, eb,
                    parse_transport(o.transport) == Transport::kAlltoallv};
  const petacomm_xchg_rank_stats &r = choice.rank;
  const std::vector<double> per_rank = {static_cast<double>(r.n_local),
                                        static_cast<double>(r.n_unique),
                                        static_cast<double>(r.n_shared),
                                        static_cast<double>(r.pair_partners),
                                        static_cast<double>(r.pair_values),
                                        static_cast<double>(r.owned_keys),
                                        static_cast<double>(found.traffic.messages),
                                        static_cast<double>(found.traffic.bytes)};
  choice.statistics = plan_statistics(comm_, index_, found.histogram, rank_cost_terms(in), per_rank,
                                      o.chunk_keys, o.allgather_keys, &setup_);
  choice.planned = decide(choice.statistics.max_terms,
                          GlobalCost{choice.statistics.global, cost, eb, o.hub_threshold});
}

std::unique_ptr<Strategy> Plan::build_one(const XchgStrategy &entry, BuildContext &ctx,
                                          Choice &choice) {
  const std::size_t i = static_cast<std::size_t>(registry().index_of(entry.about.name));
  PETACOMM_CHECK_INTERNAL(entry.discovery == Discovery::kNone || ctx.sharing != nullptr,
                          entry.about.name, " built without its discovery");
  ctx.predicted = choice.have_sharing ? &choice.planned.predicted[i] : nullptr;
  ctx.statistics = &choice.statistics;
  ctx.detail.clear();
  ctx.hub_threshold = 0;
  ctx.hub_keys = 0;
  std::unique_ptr<Strategy> built = entry.build(ctx);
  choice.chosen = i;
  choice.detail[i] = ctx.detail;
  choice.hub_threshold[i] = ctx.hub_threshold;
  choice.hub_keys[i] = ctx.hub_keys;
  return built;
}

// Builds every candidate, times o.autotune executions of each (max over ranks) and keeps
// the fastest.
void Plan::autotune(const petacomm_xchg_options &o, BuildContext &ctx, Choice &choice) {
  const auto &entries = registry().entries();
  std::vector<CandidateCost> timed = choice.planned.decision.candidates;
  PETACOMM_CHECK_INTERNAL(timed.size() == entries.size(), "one candidate per strategy");
  std::vector<std::unique_ptr<Strategy>> built(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!timed[i].applicable) continue;
    check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
    const double t0 = now_seconds();
    built[i] = build_one(*entries[i], ctx, choice);
    const double mine = now_seconds() - t0;
    check_mpi(MPI_Allreduce(&mine, &choice.measured_build[i], 1, MPI_DOUBLE, MPI_MAX, comm_),
              "MPI_Allreduce");
    timed[i].measured_seconds = choice.measured_execute[i] = measure(*built[i], o.autotune);
  }
  const Decision decision = decide_cheapest(std::move(timed));
  choice.chosen = static_cast<std::size_t>(registry().index_of(decision.choice));
  strategy_ = std::move(built[choice.chosen]);
  PETACOMM_CHECK_INTERNAL(strategy_ != nullptr, "autotune chose '", decision.choice,
                          "', which it did not build");
  choice.reason =
      concat("autotune over ", o.autotune, " executions (max over ranks): ", decision.reason,
             "; the model had predicted ", choice.planned.decision.choice);
  if (!choice.detail[choice.chosen].empty()) choice.reason += "; " + choice.detail[choice.chosen];
}

double Plan::measure(Strategy &strategy, int reps) {
  // A representative element op with the planning element; values are zeros.
  const ElementOp op(plan_dtype_, PETACOMM_XCHG_SUM, plan_k_, nullptr);
  const ExecContext ctx = context(op);
  std::vector<char> data(index_.unique() * op.elem_bytes(), 0);
  const auto once = [&] {
    strategy.start(ctx, data.data());
    strategy.begin(ctx, data.data());
    strategy.end(ctx, data.data());
  };
  once();
  check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
  const double t0 = now_seconds();
  for (int r = 0; r < reps; ++r) once();
  double mine = (now_seconds() - t0) / reps, worst = 0;
  check_mpi(MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce");
  return worst;
}

namespace {

// describe()'s "statistics": min/avg/max over ranks of the per-rank figures, the global ones.
void describe_statistics(JsonOut &j, const PlanStatistics &s, bool have_sharing,
                         bool complete_lists) {
  const petacomm_xchg_global_stats &g = s.global;
  j.begin_object("statistics");
  const char *names[] = {"n_local",       "n_unique",   "n_shared",           "partners",
                         "shared_values", "owned_keys", "discovery_messages", "discovery_bytes"};
  for (std::size_t i = 0; i < s.spread.size(); ++i) {
    j.begin_object(names[i]);
    j.value("min", s.spread[i].min).value("avg", s.spread[i].avg).value("max", s.spread[i].max);
    j.end_object();
  }
  j.value("sharing_known", have_sharing);
  j.value("holder_lists_complete", complete_lists);
  j.value("distinct_keys", g.distinct_keys);
  j.value("key_min", g.key_min).value("key_max", g.key_max);
  j.value("dense_chunks", g.dense_chunks).value("chunk_keys", g.chunk_keys);
  j.begin_array("multiplicity");
  for (int b = 0; have_sharing && b <= PETACOMM_XCHG_HUB_LEVELS; ++b) {
    if (g.multiplicity[b] == 0) continue;
    j.begin_object();
    j.value("d_min", b == 0 ? std::int64_t{1} : (std::int64_t{1} << (b - 1)) + 1);
    j.value("d_max", std::int64_t{1} << b);
    j.value("keys", g.multiplicity[b]);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

// describe()'s "cost": the machine parameters the planner used.
void describe_cost(JsonOut &j, const CostModel &cost) {
  j.begin_object("cost");
  for (int i = 0; i < kCostParams; ++i) j.value(cost_param_name(i), cost_param(cost.params(), i));
  j.begin_array("p2p_curve");
  for (int i = 0; i < cost.curve().pieces; ++i) {
    j.begin_object();
    j.value("from_bytes", cost.curve().from_bytes[i]);
    j.value("alpha", cost.curve().alpha[i]).value("beta", cost.curve().beta[i]);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

}  // namespace

const std::string &Plan::description() const {
  if (described_) {
    description_ = describe(*described_);
    // This rank's setup times (describe() is local; stats() reduces them over ranks).
    const SetupClock &clock = setup_;
    JsonOut setup;
    setup.begin_object().value("setup_seconds", clock.wall).begin_object("setup");
    setup.value("wall_seconds", clock.wall).value("cpu_seconds", clock.cpu);
    setup.value("compute_seconds", clock.compute()).value("mpi_seconds", clock.mpi_wall);
    setup.value("mpi_cpu_seconds", clock.mpi_cpu);
    setup.end_object().end_object();
    description_.pop_back();  // append to the top-level object
    description_ += "," + setup.str().substr(1);
    described_.reset();
  }
  return description_;
}

std::string Plan::describe(const Described &d) const {
  const Choice &c = d.choice;
  const CostModel &cost = d.cost;
  const double eb = static_cast<double>(dtype_size(d.plan_dtype, "plan_dtype") * d.plan_k);
  JsonOut j;
  j.begin_object();
  j.value("schema", 1);
  j.value("ranks", size_);
  j.value("strategy", strategy_->name());
  j.value("reason", c.reason);
  j.value("transport", transport_name(d.transport));
  j.value("deterministic", deterministic_);
  j.value("autotune", d.autotune);
  j.value("send_window", d.send_window);
  const Traffic traffic = strategy_->traffic();
  if (traffic.inter_node_messages >= 0) {  // this rank's, per execution
    j.value("nodes", c.rank.nodes).value("node_ranks", c.rank.node_ranks);
    j.value("inter_node_messages", traffic.inter_node_messages);
  }
  if (c.hub_threshold[c.chosen] > 0) {
    j.value("hub_threshold", c.hub_threshold[c.chosen]);
    j.value("hub_keys", c.hub_keys[c.chosen]);
  }
  j.begin_object("element");
  j.value("dtype", dtype_name(d.plan_dtype)).value("k", d.plan_k).value("bytes", eb);
  j.end_object();
  describe_statistics(j, c.statistics, c.have_sharing, c.complete_lists);
  describe_cost(j, cost);
  j.begin_object("strategies");  // predictions (when sharing is known) and autotuned times
  const auto &entries = registry().entries();
  for (std::size_t s = 0; s < entries.size(); ++s) {
    j.begin_object(entries[s]->about.name);
    if (c.have_sharing) {
      const petacomm_xchg_prediction &p = c.planned.predicted[s];
      const CandidateCost &candidate = c.planned.decision.candidates[s];
      j.value("predicted_execute_seconds", p.execute_seconds);
      j.value("predicted_setup_seconds", p.setup_seconds);
      j.value("predicted_messages", p.messages);
      j.value("predicted_bytes", p.bytes);
      if (p.hub_threshold > 0)
        j.value("hub_threshold", p.hub_threshold).value("hub_keys", p.hub_keys);
      j.value("candidate", candidate.applicable);
      if (!candidate.applicable)
        j.value("not_a_candidate_because", candidate.not_applicable_because);
    }
    if (!std::isnan(c.measured_execute[s])) {
      j.value("measured_execute_seconds", c.measured_execute[s]);
      j.value("measured_build_seconds", c.measured_build[s]);
    }
    j.end_object();
  }
  j.end_object();
  j.end_object();
  return j.str();
}

std::string Plan::check_execution(MPI_Comm comm, const void *values, std::int64_t n, int k,
                                  petacomm_xchg_dtype dtype, petacomm_xchg_op op,
                                  const petacomm_xchg_user_op *user,
                                  std::unique_ptr<ElementOp> *element) const {
  if (comm == MPI_COMM_NULL) return "comm: MPI_COMM_NULL is not the plan's communicator";
  int same = MPI_UNEQUAL;
  check_mpi(MPI_Comm_compare(comm, comm_, &same), "MPI_Comm_compare");
  if (same != MPI_IDENT && same != MPI_CONGRUENT) {
    int size = 0;
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    return concat("comm: not the communicator this plan was created on (",
                  same == MPI_SIMILAR ? "same ranks in another order" : "different ranks", ", ",
                  size, " ranks vs the plan's ", size_, ")");
  }
  if (n != index_.positions())
    return concat("n: the plan has ", index_.positions(), " key positions on rank ", rank_,
                  ", values has ", n);
  if (values == nullptr && n > 0) return concat("values: NULL with n = ", n);
  try {
    *element = std::make_unique<ElementOp>(dtype, op, k, user);
  } catch (const Error &e) {
    return e.what();
  }
  return {};
}

void Plan::begin(MPI_Comm comm, void *values, std::int64_t n, int k, petacomm_xchg_dtype dtype,
                 petacomm_xchg_op op, const petacomm_xchg_user_op *user, const char *caller_error) {
  PETACOMM_CHECK_STATE(comm_ != MPI_COMM_NULL, "plan: already freed");
  require_mpi_running("execute plans");
  PETACOMM_CHECK_STATE(!active_,
                       "execute_begin: an execution of this plan is in progress; call "
                       "execute_end first");
  std::unique_ptr<ElementOp> element;
  std::string problem = caller_error != nullptr ? caller_error : "";
  if (problem.empty()) problem = check_execution(comm, values, n, k, dtype, op, user, &element);
  void *data = nullptr;
  if (size_ == 1) {
    PETACOMM_CHECK_ARG(problem.empty(), problem);
    data = distinct_values(*element, values);
    strategy_->start(context(*element), data);
  } else {
    // Every rank learns of a bad argument on any rank before any value is written: a rank
    // that returned alone would leave the others waiting in the exchange, and mismatched
    // element sizes would overrun the buffers MPI writes into. The operator-independent
    // exchange goes ahead while the check is in flight when this rank's arguments are valid
    // and its element is the plan's, whose size every rank agreed on at creation (so no
    // message can overrun a buffer); otherwise it waits for the check.
    const bool ahead = problem.empty() && dtype == plan_dtype_ && k == plan_k_;
    check_.start(comm_, problem,
                 {{"dtype", hash_number(std::int64_t{dtype}),
                   [known = element != nullptr, dtype] {
                     return known ? std::string(dtype_name(dtype))
                                  : concat(static_cast<int>(dtype));
                   }},
                  {"k", hash_number(std::int64_t{k}), [k] { return concat(k); }},
                  {"op", hash_number(std::int64_t{op}),
                   [known = element != nullptr, op] {
                     return known ? std::string(op_name(op)) : concat(static_cast<int>(op));
                   }}},
                 ahead);
    if (ahead) {
      data = distinct_values(*element, values);
      strategy_->start(context(*element), data);
    }
    if (!check_.passed()) {
      if (ahead) {
        strategy_->abandon();
      } else if (check_.any_flag()) {  // others went ahead: complete their exchange
        strategy_->start(context(*plan_element_), nullptr);
        strategy_->abandon();
      }
      check_.fail("the values are unchanged");
    }
    if (!ahead) {
      data = distinct_values(*element, values);
      strategy_->start(context(*element), data);
    }
  }
  strategy_->begin(context(*element), data);
  op_ = std::move(element);
  values_ = values;
  data_ = data;
  active_ = true;
}

void Plan::end() {
  PETACOMM_CHECK_STATE(active_, "execute_end: no execution in progress (call execute_begin first)");
  active_ = false;
  strategy_->end(context(*op_), data_);
  if (data_ != values_) index_.scatter(op_->elem_bytes(), data_, values_);
  values_ = data_ = nullptr;
}

void Plan::stats(petacomm_xchg_dtype dtype, int k, petacomm_xchg_stats *out) {
  PETACOMM_CHECK_STATE(comm_ != MPI_COMM_NULL, "plan: already freed");
  require_mpi_running("ask for plan statistics");
  // A rank that returned alone would leave the others waiting in the reduction below.
  std::string problem = out == nullptr ? "stats: NULL output pointer" : "";
  std::unique_ptr<ElementOp> element;
  if (problem.empty()) {
    try {
      element = std::make_unique<ElementOp>(dtype, PETACOMM_XCHG_SUM, k, nullptr);
    } catch (const Error &e) {
      problem = e.what();
    }
  }
  ArgumentCheck check;
  check.start(comm_, problem,
              {{"dtype", hash_number(std::int64_t{dtype}),
                [dtype] { return std::string(dtype_name(dtype)); }},
               {"k", hash_number(std::int64_t{k}), [k] { return concat(k); }}});
  if (!check.passed()) check.fail("no statistics were computed");
  const double eb = static_cast<double>(element->elem_bytes());
  const Traffic t = strategy_->traffic();
  const std::int64_t own = index_.identity() ? 0 : static_cast<std::int64_t>(index_.unique());
  const double memory = static_cast<double>(index_.memory_bytes() + strategy_->schedule_bytes()) +
                        static_cast<double>(strategy_->buffer_entries() + own) * eb;
  const auto spread = min_avg_max(
      comm_, {t.messages, t.entries * eb, memory, setup_.wall, setup_.compute(), setup_.mpi_wall});
  petacomm_xchg_stats &s = *out;
  s.messages = spread[0];
  s.bytes = spread[1];
  s.memory_bytes = spread[2];
  s.setup_seconds = spread[3].max;
  s.setup_wall_seconds = spread[3];
  s.setup_compute_seconds = spread[4];
  s.setup_mpi_seconds = spread[5];
}

}  // namespace petacomm::xchg
