#include "pipeline_model.hpp"

#include <cmath>
#include <cstdlib>

#include "arg_parser.hpp"
#include "error.hpp"

namespace petacomm::apps::sweep3d {

double MessageCost::seconds(double bytes) const {
  const Piece *use = &pieces.front();
  for (const Piece &p : pieces)
    if (bytes >= p.from_bytes) use = &p;
  return use->alpha_s + use->beta_s_per_byte * bytes;
}

MessageCost default_message_cost() {
  return MessageCost{{{0, 1.5e-6, 1.0 / 10e9}}, "defaults (1.5 us, 10 GB/s)"};
}

MessageCost parse_message_cost(const std::string &text) {
  MessageCost cost;
  cost.source = "--message-cost";
  for (const std::string &item : split_list(text)) {
    double v[3];
    std::size_t at = 0;
    for (int f = 0; f < 3; ++f) {
      const std::size_t colon = f < 2 ? item.find(':', at) : item.size();
      PETACOMM_CHECK_ARG(colon != std::string::npos, "--message-cost: expected ",
                         "FROM_BYTES:ALPHA_S:BETA_S_PER_BYTE, got '", item, "'");
      v[f] = parse_real("--message-cost", item.substr(at, colon - at), 0, 1e30);
      at = colon + 1;
    }
    PETACOMM_CHECK_ARG(at >= item.size(), "--message-cost: expected ",
                       "FROM_BYTES:ALPHA_S:BETA_S_PER_BYTE, got '", item, "'");
    PETACOMM_CHECK_ARG(cost.pieces.empty() ? v[0] == 0 : v[0] > cost.pieces.back().from_bytes,
                       "--message-cost: pieces must start at 0 bytes and increase, got '", text,
                       "'");
    cost.pieces.push_back({v[0], v[1], v[2]});
  }
  PETACOMM_CHECK_ARG(!cost.pieces.empty(), "--message-cost: no pieces in '", text, "'");
  return cost;
}

PipelinePrediction predict_iteration(const ProcessGrid &grid, const ProblemSize &size,
                                     double block_compute_s, const MessageCost &cost) {
  PipelinePrediction p;
  const Subdomain largest = subdomain(grid, size, 0);
  p.block_compute_s = block_compute_s;
  p.x_face_bytes = static_cast<std::int64_t>(size.mk) * largest.ny * size.mmi * 8;
  p.y_face_bytes = static_cast<std::int64_t>(size.mk) * largest.nx * size.mmi * 8;
  p.message_x_s = grid.Px > 1 ? cost.seconds(static_cast<double>(p.x_face_bytes)) : 0.0;
  p.message_y_s = grid.Py > 1 ? cost.seconds(static_cast<double>(p.y_face_bytes)) : 0.0;
  p.stage_s = block_compute_s + p.message_x_s + p.message_y_s;
  p.steady_stages = 8LL * (size.angles / size.mmi) * (size.K / size.mk);
  p.fill_stages = 2LL * (grid.Px - 1) + 4LL * (grid.Py - 1);
  p.fill_s = static_cast<double>(p.fill_stages) * p.stage_s;
  p.steady_s = static_cast<double>(p.steady_stages) * p.stage_s;
  p.predicted_s = p.fill_s + p.steady_s;
  p.predicted_no_network_s = static_cast<double>(p.steady_stages + p.fill_stages) * block_compute_s;
  p.sweep3d_efficiency =
      static_cast<double>(p.steady_stages) / static_cast<double>(p.steady_stages + p.fill_stages);
  return p;
}

}  // namespace petacomm::apps::sweep3d
