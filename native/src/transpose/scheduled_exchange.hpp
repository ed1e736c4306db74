// Exchange by rounds of MPI_Sendrecv: in each round a rank trades one block with at most
// one partner (a schedule of perfect matchings). xor and pairwise differ only in the
// schedule.
#pragma once

#include <vector>

#include "strategy.hpp"

namespace petacomm::transpose {

// partners[k] = this rank's partner in round k, or -1 when it sits the round out. Every
// other rank must appear exactly once, and the schedules of all ranks must be matchings.
std::unique_ptr<Exchange> make_scheduled_exchange(const ExchangeSetup &s,
                                                  std::vector<int> partners);

// The schedules (defined with their strategies): rank me's partner per round, -1 = none.
std::vector<int> xor_schedule(int q, int me);          // q a power of two
std::vector<int> round_robin_schedule(int q, int me);  // any q

// Cost of `rounds` rounds in which rank 0's partner is partner_of(round).
CostEstimate scheduled_cost(const ProblemStats &s, const petacomm_transpose_cost_params &c,
                            const std::vector<int> &rank0_partners);

}  // namespace petacomm::transpose
