// The NEMORB Fourier filter on a real field f(s, chi, phi) distributed over s and chi:
// FFT along phi, transpose chi <-> modes on the chi communicator, FFT along chi, keep the
// low-pass square |m| <= M, |n| <= N, and back. Three variants (plain, packed,
// packed-partial); see petacomm/transpose.h.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "fft_lines.hpp"
#include "petacomm/transpose.h"
#include "transposer.hpp"

namespace petacomm::transpose {

class FourierFilter {
 public:
  // caller_error: a binding's argument error on this rank (petacomm_fftfilter_create_ext).
  FourierFilter(MPI_Comm comm, const std::int64_t n[3], const int grid[2],
                const std::int64_t modes[2], int variant, const petacomm_transpose_options *opts,
                const char *caller_error = nullptr);
  ~FourierFilter();
  FourierFilter(const FourierFilter &) = delete;
  FourierFilter &operator=(const FourierFilter &) = delete;

  void apply(const double *in, double *out);
  void apply_array(const petacomm_transpose_array *in, const petacomm_transpose_array *out);
  void release();

  void local(std::int64_t shape[3], std::int64_t offset[3]) const;
  petacomm_fftfilter_stats stats() const { return stats_; }
  const std::string &describe();

 private:
  void run(const std::string &problem, const double *in, double *out);
  void filter(const double *in, double *out);
  void chi_pass(bool forward);
  void mask_modes();
  bool phi_mode_kept(std::int64_t k) const;  // transposed column k
  std::size_t field_bytes() const;

  MPI_Comm comm_ = MPI_COMM_NULL, chi_comm_ = MPI_COMM_NULL;
  std::int64_t n_s_, n_chi_, n_phi_, m_max_, n_max_;
  int variant_;
  int grid_[2];
  std::int64_t s_count_ = 0, s_offset_ = 0, chi_count_ = 0, chi_offset_ = 0;
  std::int64_t k_total_ = 0, k_count_ = 0, k_offset_ = 0;  // transposed columns (modes)
  std::unique_ptr<Transposer> transposer_;
  std::unique_ptr<PackedRealLines> phi_real_;
  std::unique_ptr<ComplexLines> phi_complex_, chi_lines_;
  Buffer lines_, modes_;  // [s][chi][k] and [s][k][chi], complex
  petacomm_fftfilter_stats stats_{};
  double setup_seconds_ = 0;
  std::string description_;
};

}  // namespace petacomm::transpose
