// The C API of the transpose family: every entry point runs through petacomm::guard, so no
// exception crosses into C.
#include <cstring>
#include <memory>

#include "error.hpp"
#include "fft_lines.hpp"
#include "fourier_filter.hpp"
#include "options.hpp"
#include "pencil.hpp"
#include "petacomm/transpose.h"
#include "planner.hpp"
#include "slab_plan.hpp"

using petacomm::fail_arg;
using petacomm::guard;
namespace tp = petacomm::transpose;

struct petacomm_transpose_plan_s {
  std::unique_ptr<tp::SlabPlan> impl;
};
struct petacomm_transpose_pencil_s {
  std::unique_ptr<tp::PencilPlan> impl;
};
struct petacomm_fftfilter_s {
  std::unique_ptr<tp::FourierFilter> impl;
};

namespace {

template <class Handle>
auto &checked(Handle h, const char *what, const char *create) {
  if (h == nullptr || !h->impl) fail_arg(what, ": NULL (create it with ", create, ")");
  return *h->impl;
}

tp::SlabPlan &plan_of(petacomm_transpose_plan p) {
  return checked(p, "plan", "petacomm_transpose_plan_create");
}
tp::PencilPlan &pencil_of(petacomm_transpose_pencil p) {
  return checked(p, "pencil", "petacomm_transpose_pencil_create");
}
tp::FourierFilter &filter_of(petacomm_fftfilter f) {
  return checked(f, "filter", "petacomm_fftfilter_create");
}

void copy_text(const std::string &text, char *buf, size_t buflen, size_t *needed) {
  if (needed != nullptr) *needed = text.size() + 1;
  if (buf == nullptr || buflen == 0) {
    if (needed == nullptr) fail_arg("buf: NULL (or buflen 0) and needed NULL: nothing to do");
    return;
  }
  const size_t copied = std::min(buflen - 1, text.size());
  std::memcpy(buf, text.data(), copied);
  buf[copied] = '\0';
}

template <class Handle, class Impl>
petacomm_status free_handle(Handle *handle) {
  return guard([&] {
    if (handle == nullptr) fail_arg("handle: NULL pointer to a handle");
    if (*handle == nullptr) return;
    std::unique_ptr<std::remove_pointer_t<Handle>> owned(*handle);
    *handle = nullptr;
    if (owned->impl) owned->impl->release();
  });
}

}  // namespace

extern "C" {

petacomm_status petacomm_transpose_options_default(petacomm_transpose_options *opts) {
  return guard([&] {
    if (opts == nullptr) fail_arg("opts: NULL");
    *opts = tp::default_options();
  });
}

petacomm_status petacomm_transpose_strategy_count(int *count) {
  return guard([&] {
    if (count == nullptr) fail_arg("count: NULL");
    *count = static_cast<int>(tp::registry().size());
  });
}

petacomm_status petacomm_transpose_strategy_info(int index, petacomm_strategy_info *info) {
  return guard([&] { tp::registry().info(index, info); });
}

petacomm_status petacomm_transpose_plan_create_ext(MPI_Comm comm, int64_t n0, int64_t n1,
                                                   int64_t howmany, petacomm_transpose_dtype dtype,
                                                   const petacomm_transpose_options *opts,
                                                   const char *caller_error,
                                                   petacomm_transpose_plan *plan) {
  return guard([&] {
    if (plan == nullptr) fail_arg("plan: NULL output pointer");
    *plan = nullptr;
    auto handle = std::make_unique<petacomm_transpose_plan_s>();
    handle->impl = std::make_unique<tp::SlabPlan>(comm, n0, n1, howmany, dtype, opts, caller_error);
    *plan = handle.release();
  });
}

petacomm_status petacomm_transpose_plan_create_ext_f(MPI_Fint comm, int64_t n0, int64_t n1,
                                                     int64_t howmany,
                                                     petacomm_transpose_dtype dtype,
                                                     const petacomm_transpose_options *opts,
                                                     const char *caller_error,
                                                     petacomm_transpose_plan *plan) {
  return petacomm_transpose_plan_create_ext(MPI_Comm_f2c(comm), n0, n1, howmany, dtype, opts,
                                            caller_error, plan);
}

petacomm_status petacomm_transpose_plan_create(MPI_Comm comm, int64_t n0, int64_t n1,
                                               int64_t howmany, petacomm_transpose_dtype dtype,
                                               const petacomm_transpose_options *opts,
                                               petacomm_transpose_plan *plan) {
  return petacomm_transpose_plan_create_ext(comm, n0, n1, howmany, dtype, opts, nullptr, plan);
}

petacomm_status petacomm_transpose_plan_create_f(MPI_Fint comm, int64_t n0, int64_t n1,
                                                 int64_t howmany, petacomm_transpose_dtype dtype,
                                                 const petacomm_transpose_options *opts,
                                                 petacomm_transpose_plan *plan) {
  return petacomm_transpose_plan_create(MPI_Comm_f2c(comm), n0, n1, howmany, dtype, opts, plan);
}

petacomm_status petacomm_transpose_plan_free(petacomm_transpose_plan *plan) {
  return free_handle<petacomm_transpose_plan, tp::SlabPlan>(plan);
}

petacomm_status petacomm_transpose_plan_local(petacomm_transpose_plan plan,
                                              petacomm_transpose_local *local) {
  return guard([&] {
    if (local == nullptr) fail_arg("local: NULL output pointer");
    *local = plan_of(plan).local();
  });
}

petacomm_status petacomm_transpose_execute(petacomm_transpose_plan plan,
                                           petacomm_transpose_direction direction, const void *in,
                                           void *out) {
  return guard([&] { plan_of(plan).execute(direction, in, out); });
}

petacomm_status petacomm_transpose_execute_array(petacomm_transpose_plan plan,
                                                 petacomm_transpose_direction direction,
                                                 const petacomm_transpose_array *in,
                                                 const petacomm_transpose_array *out) {
  return guard([&] { plan_of(plan).execute_array(direction, in, out); });
}

petacomm_status petacomm_transpose_plan_strategy(petacomm_transpose_plan plan, const char **name) {
  return guard([&] {
    if (name == nullptr) fail_arg("name: NULL output pointer");
    *name = plan_of(plan).strategy();
  });
}

petacomm_status petacomm_transpose_plan_describe(petacomm_transpose_plan plan, char *buf,
                                                 size_t buflen, size_t *needed) {
  return guard([&] { copy_text(plan_of(plan).describe(), buf, buflen, needed); });
}

petacomm_status petacomm_transpose_plan_stats(petacomm_transpose_plan plan,
                                              petacomm_transpose_stats *stats) {
  return guard([&] { plan_of(plan).stats(stats); });
}

petacomm_status petacomm_transpose_model_decide(const petacomm_transpose_problem *problem,
                                                const petacomm_transpose_cost_params *cost,
                                                char *buf, size_t buflen, size_t *needed) {
  return guard([&] {
    if (problem == nullptr) fail_arg("problem: NULL");
    std::string why;
    const tp::ProblemStats stats = tp::problem_stats(*problem, &why);
    if (!why.empty()) fail_arg(why);
    const petacomm_transpose_cost_params params = cost ? *cost : tp::default_options().cost;
    why = tp::cost_problem(params);
    if (!why.empty()) fail_arg(why);
    if (buf == nullptr && buflen > 0) fail_arg("buf: NULL with buflen ", buflen);
    copy_text(tp::decision_json(tp::decide(stats, params)), buf, buflen, needed);
  });
}

petacomm_status petacomm_transpose_pencil_create_ext(MPI_Comm comm, const int64_t n[3],
                                                     const int grid[2], int64_t howmany,
                                                     petacomm_transpose_dtype dtype,
                                                     const petacomm_transpose_options *opts,
                                                     const char *caller_error,
                                                     petacomm_transpose_pencil *pencil) {
  return guard([&] {
    if (pencil == nullptr) fail_arg("pencil: NULL output pointer");
    *pencil = nullptr;
    auto handle = std::make_unique<petacomm_transpose_pencil_s>();
    handle->impl =
        std::make_unique<tp::PencilPlan>(comm, n, grid, howmany, dtype, opts, caller_error);
    *pencil = handle.release();
  });
}

petacomm_status petacomm_transpose_pencil_create_ext_f(MPI_Fint comm, const int64_t n[3],
                                                       const int grid[2], int64_t howmany,
                                                       petacomm_transpose_dtype dtype,
                                                       const petacomm_transpose_options *opts,
                                                       const char *caller_error,
                                                       petacomm_transpose_pencil *pencil) {
  return petacomm_transpose_pencil_create_ext(MPI_Comm_f2c(comm), n, grid, howmany, dtype, opts,
                                              caller_error, pencil);
}

petacomm_status petacomm_transpose_pencil_create(MPI_Comm comm, const int64_t n[3],
                                                 const int grid[2], int64_t howmany,
                                                 petacomm_transpose_dtype dtype,
                                                 const petacomm_transpose_options *opts,
                                                 petacomm_transpose_pencil *pencil) {
  return petacomm_transpose_pencil_create_ext(comm, n, grid, howmany, dtype, opts, nullptr, pencil);
}

petacomm_status petacomm_transpose_pencil_create_f(MPI_Fint comm, const int64_t n[3],
                                                   const int grid[2], int64_t howmany,
                                                   petacomm_transpose_dtype dtype,
                                                   const petacomm_transpose_options *opts,
                                                   petacomm_transpose_pencil *pencil) {
  return petacomm_transpose_pencil_create(MPI_Comm_f2c(comm), n, grid, howmany, dtype, opts,
                                          pencil);
}

petacomm_status petacomm_transpose_pencil_free(petacomm_transpose_pencil *pencil) {
  return free_handle<petacomm_transpose_pencil, tp::PencilPlan>(pencil);
}

petacomm_status petacomm_transpose_pencil_local(petacomm_transpose_pencil pencil,
                                                petacomm_pencil_layout layout, int64_t shape[3],
                                                int64_t offset[3]) {
  return guard([&] {
    if (shape == nullptr || offset == nullptr) fail_arg("shape, offset: NULL output pointer");
    pencil_of(pencil).local(layout, shape, offset);
  });
}

petacomm_status petacomm_transpose_pencil_execute(petacomm_transpose_pencil pencil,
                                                  petacomm_pencil_layout from,
                                                  petacomm_pencil_layout to, const void *in,
                                                  void *out) {
  return guard([&] { pencil_of(pencil).execute(from, to, in, out); });
}

petacomm_status petacomm_transpose_pencil_execute_array(petacomm_transpose_pencil pencil,
                                                        petacomm_pencil_layout from,
                                                        petacomm_pencil_layout to,
                                                        const petacomm_transpose_array *in,
                                                        const petacomm_transpose_array *out) {
  return guard([&] { pencil_of(pencil).execute_array(from, to, in, out); });
}

petacomm_status petacomm_transpose_pencil_describe(petacomm_transpose_pencil pencil, char *buf,
                                                   size_t buflen, size_t *needed) {
  return guard([&] { copy_text(pencil_of(pencil).describe(), buf, buflen, needed); });
}

petacomm_status petacomm_rfft_packed(int64_t n, int64_t count, const double *in, double *out) {
  return guard([&] {
    if (count < 0) fail_arg("count: must be >= 0, got ", count);
    if (count > 0 && (in == nullptr || out == nullptr)) fail_arg("in, out: NULL");
    tp::PackedRealLines lines(n);
    lines.forward(in, reinterpret_cast<tp::Complex *>(out), count);
  });
}

petacomm_status petacomm_irfft_packed(int64_t n, int64_t count, const double *in, double *out) {
  return guard([&] {
    if (count < 0) fail_arg("count: must be >= 0, got ", count);
    if (count > 0 && (in == nullptr || out == nullptr)) fail_arg("in, out: NULL");
    if (count > 0 && in == out) fail_arg("out: must not be in (the inverse is out of place)");
    tp::PackedRealLines lines(n);
    lines.backward(reinterpret_cast<const tp::Complex *>(in), out, count);
  });
}

petacomm_status petacomm_fftfilter_create_ext(MPI_Comm comm, const int64_t n[3], const int grid[2],
                                              const int64_t modes[2],
                                              petacomm_fftfilter_variant variant,
                                              const petacomm_transpose_options *opts,
                                              const char *caller_error,
                                              petacomm_fftfilter *filter) {
  return guard([&] {
    if (filter == nullptr) fail_arg("filter: NULL output pointer");
    *filter = nullptr;
    auto handle = std::make_unique<petacomm_fftfilter_s>();
    handle->impl =
        std::make_unique<tp::FourierFilter>(comm, n, grid, modes, variant, opts, caller_error);
    *filter = handle.release();
  });
}

petacomm_status petacomm_fftfilter_create_ext_f(MPI_Fint comm, const int64_t n[3],
                                                const int grid[2], const int64_t modes[2],
                                                petacomm_fftfilter_variant variant,
                                                const petacomm_transpose_options *opts,
                                                const char *caller_error,
                                                petacomm_fftfilter *filter) {
  return petacomm_fftfilter_create_ext(MPI_Comm_f2c(comm), n, grid, modes, variant, opts,
                                       caller_error, filter);
}

petacomm_status petacomm_fftfilter_create(MPI_Comm comm, const int64_t n[3], const int grid[2],
                                          const int64_t modes[2],
                                          petacomm_fftfilter_variant variant,
                                          const petacomm_transpose_options *opts,
                                          petacomm_fftfilter *filter) {
  return petacomm_fftfilter_create_ext(comm, n, grid, modes, variant, opts, nullptr, filter);
}

petacomm_status petacomm_fftfilter_create_f(MPI_Fint comm, const int64_t n[3], const int grid[2],
                                            const int64_t modes[2],
                                            petacomm_fftfilter_variant variant,
                                            const petacomm_transpose_options *opts,
                                            petacomm_fftfilter *filter) {
  return petacomm_fftfilter_create(MPI_Comm_f2c(comm), n, grid, modes, variant, opts, filter);
}

petacomm_status petacomm_fftfilter_free(petacomm_fftfilter *filter) {
  return free_handle<petacomm_fftfilter, tp::FourierFilter>(filter);
}

petacomm_status petacomm_fftfilter_local(petacomm_fftfilter filter, int64_t shape[3],
                                         int64_t offset[3]) {
  return guard([&] {
    if (shape == nullptr || offset == nullptr) fail_arg("shape, offset: NULL output pointer");
    filter_of(filter).local(shape, offset);
  });
}

petacomm_status petacomm_fftfilter_apply(petacomm_fftfilter filter, const double *in, double *out) {
  return guard([&] { filter_of(filter).apply(in, out); });
}

petacomm_status petacomm_fftfilter_apply_array(petacomm_fftfilter filter,
                                               const petacomm_transpose_array *in,
                                               const petacomm_transpose_array *out) {
  return guard([&] { filter_of(filter).apply_array(in, out); });
}

petacomm_status petacomm_fftfilter_stats_get(petacomm_fftfilter filter,
                                             petacomm_fftfilter_stats *stats) {
  return guard([&] {
    if (stats == nullptr) fail_arg("stats: NULL output pointer");
    *stats = filter_of(filter).stats();
  });
}

petacomm_status petacomm_fftfilter_describe(petacomm_fftfilter filter, char *buf, size_t buflen,
                                            size_t *needed) {
  return guard([&] { copy_text(filter_of(filter).describe(), buf, buflen, needed); });
}

}  // extern "C"
