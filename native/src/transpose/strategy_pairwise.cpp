// pairwise: a 1-factorisation of the complete graph (the circle method) gives q - 1 rounds
// for even q and q rounds for odd q (each rank sits one out), every pair exactly once and
// no rank in two pairs of a round: the XOR exchange's property for any number of ranks.
#include "scheduled_exchange.hpp"

namespace petacomm::transpose {
namespace {

std::string applicable(const ProblemStats &) { return {}; }

CostEstimate cost(const ProblemStats &s, const petacomm_transpose_cost_params &c) {
  return scheduled_cost(s, c, round_robin_schedule(s.q, 0));
}

std::unique_ptr<Exchange> build(const ExchangeSetup &s) {
  return make_scheduled_exchange(s, round_robin_schedule(s.q, s.me));
}

}  // namespace

// Circle method on n = q (even) or q + 1 (odd, the extra vertex a bye) players: in round
// r, player n-1 meets r, and i meets (2r - i) mod (n-1) for the others.
std::vector<int> round_robin_schedule(int q, int me) {
  std::vector<int> partners;
  if (q < 2) return partners;
  const int n = q % 2 == 0 ? q : q + 1;
  for (int r = 0; r < n - 1; ++r) {
    int partner;
    if (me == n - 1) {
      partner = r;
    } else {
      partner = ((2 * r - me) % (n - 1) + (n - 1)) % (n - 1);
      if (partner == me) partner = n - 1;
    }
    partners.push_back(partner < q ? partner : -1);  // q: the bye of odd counts
  }
  return partners;
}

extern const TransposeStrategy kPairwise{
    {"pairwise",
     "pairwise MPI_Sendrecv on a round-robin (1-factor) schedule for any number of ranks: "
     "the XOR exchange's one-partner-per-round property without the power-of-two limit",
     ""},
    applicable,
    cost,
    build};

}  // namespace petacomm::transpose
