// xor: in round k = 1 .. q-1 every rank j trades one block with rank j XOR k (the study's
// method; q must be a power of two so that XOR stays within the ranks).
#include "scheduled_exchange.hpp"

namespace petacomm::transpose {
namespace {

bool power_of_two(int q) { return q > 0 && (q & (q - 1)) == 0; }

std::string applicable(const ProblemStats &s) {
  if (!power_of_two(s.q))
    return concat("needs a power-of-two number of ranks, got ", s.q, " (use pairwise)");
  return {};
}

CostEstimate cost(const ProblemStats &s, const petacomm_transpose_cost_params &c) {
  return scheduled_cost(s, c, xor_schedule(s.q, 0));
}

std::unique_ptr<Exchange> build(const ExchangeSetup &s) {
  return make_scheduled_exchange(s, xor_schedule(s.q, s.me));
}

}  // namespace

std::vector<int> xor_schedule(int q, int me) {
  std::vector<int> partners;
  for (int k = 1; k < q; ++k) partners.push_back(me ^ k);
  return partners;
}

extern const TransposeStrategy kXor{
    {"xor",
     "pairwise MPI_Sendrecv with rank XOR k in round k (powers of two): no two ranks target "
     "the same partner in a round; won on the dedicated fusion machines of the study",
     ""},
    applicable,
    cost,
    build};

}  // namespace petacomm::transpose
