// The KBA pipeline model of one source iteration. Every block is one pipeline stage:
//   stage = block compute (one-rank calibration) + x-face message + y-face message
// (message cost t(n) = alpha + beta n from the machine model's point-to-point pieces; a
// direction without neighbours costs nothing). With the octant order of schedule.hpp a
// rank computes 8 * angle_blocks * k_blocks blocks per iteration and the pipeline fills
// Px + Py - 2 stages when it starts and again, in part, at each quadrant change:
// 2(Px-1) + 4(Py-1) fill stages per iteration in all, so
//   predicted = (8 * angle_blocks * k_blocks + 2(Px-1) + 4(Py-1)) * stage
// and with an infinitely fast network (messages free) the same count of compute-only
// stages. Sweep3D's own pipeline efficiency is 8 mmo kb / (8 mmo kb + 2(npe_i-1) +
// 4(npe_j-1)) with mmo angle blocks and kb K blocks: the steady share of those stages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decomposition.hpp"

namespace petacomm::apps::sweep3d {

// Point-to-point cost, piecewise alpha-beta by message size (petacomm.model's pieces).
struct MessageCost {
  struct Piece {
    double from_bytes, alpha_s, beta_s_per_byte;
  };
  std::vector<Piece> pieces;  // ordered by from_bytes, the first from 0
  std::string source;         // what the pieces came from, for the report
  double seconds(double bytes) const;
};

// The defaults of petacomm.model (1.5 us, 10 GB/s).
MessageCost default_message_cost();
// "FROM:ALPHA:BETA[,FROM:ALPHA:BETA...]" (bytes, seconds, seconds per byte; the first FROM
// must be 0, increasing after); ERR_ARG naming --message-cost.
MessageCost parse_message_cost(const std::string &text);

struct PipelinePrediction {
  double block_compute_s = 0;  // one block of the largest subdomain, one rank
  double message_x_s = 0, message_y_s = 0;
  std::int64_t x_face_bytes = 0, y_face_bytes = 0;
  double stage_s = 0;
  std::int64_t steady_stages = 0;  // 8 * angle blocks * K blocks
  std::int64_t fill_stages = 0;    // 2(Px-1) + 4(Py-1)
  double fill_s = 0, steady_s = 0;
  double predicted_s = 0;             // per iteration
  double predicted_no_network_s = 0;  // the same pipeline with free messages
  double sweep3d_efficiency = 0;      // steady / (steady + fill)
};

PipelinePrediction predict_iteration(const ProcessGrid &grid, const ProblemSize &size,
                                     double block_compute_s, const MessageCost &cost);

}  // namespace petacomm::apps::sweep3d
