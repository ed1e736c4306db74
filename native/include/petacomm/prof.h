/* petacomm profiler: regions from C and C++.
 *
 * Regions name phases of a program; the profiler attributes every MPI call and every POSIX
 * I/O call to the innermost open region and reports wall, MPI, I/O and CALC time per region.
 * Regions nest; closing a region ends all regions opened inside it.
 *
 * The inline functions below go through MPI_Pcontrol, as IPM does, so a program that uses
 * them needs no link dependency on the profiler and does nothing extra when it is not
 * loaded:
 *
 *     petacomm_prof_begin("solve");  ...  petacomm_prof_end("solve");
 *     { PETACOMM_PROF_REGION("halo"); ... }     // C++: closed at the end of the scope
 *
 * Programs linked with -lpetacomm-prof may call petacomm_prof_region_begin/end directly
 * (they return -1 when the profiler is not recording). Fortran programs use
 * `call petacomm_prof_region_begin('name')` (linked) or MPI_Pcontrol through ISO_C_BINDING
 * (see docs/profiler.md).
 */
#ifndef PETACOMM_PROF_H
#define PETACOMM_PROF_H

#include <mpi.h>

/* SimGrid SMPI (its mpi.h defines SMPI_H) aborts on MPI_Pcontrol, "Not yet implemented" in
 * 3.32; no profiler runs inside a simulation, so there regions do nothing. */
#if defined(SMPI_H) || defined(PETACOMM_SMPI)
#define PETACOMM_PROF_PCONTROL(level, name) ((void)(level), (void)(name), 0)
#else
#define PETACOMM_PROF_PCONTROL(level, name) MPI_Pcontrol((level), (name))
#endif

static inline int petacomm_prof_begin(const char *name) { return PETACOMM_PROF_PCONTROL(1, name); }
static inline int petacomm_prof_end(const char *name) { return PETACOMM_PROF_PCONTROL(-1, name); }

#ifdef __cplusplus
extern "C" {
#endif

/* Defined in libpetacomm-prof: 0 on success, -1 when the profiler is not recording. */
int petacomm_prof_region_begin(const char *name);
int petacomm_prof_region_end(const char *name);
/* 1 while the profiler records (between MPI_Init and MPI_Finalize), else 0. */
int petacomm_prof_is_active(void);

#ifdef __cplusplus
}

namespace petacomm {
namespace prof {
/* Opens a region for the lifetime of the object. */
class ScopedRegion {
 public:
  explicit ScopedRegion(const char *name) : name_(name) { (void)PETACOMM_PROF_PCONTROL(1, name_); }
  ~ScopedRegion() { (void)PETACOMM_PROF_PCONTROL(-1, name_); }
  ScopedRegion(const ScopedRegion &) = delete;
  ScopedRegion &operator=(const ScopedRegion &) = delete;

 private:
  const char *name_;
};
}  // namespace prof
}  // namespace petacomm

#define PETACOMM_PROF_CONCAT2(a, b) a##b
#define PETACOMM_PROF_CONCAT(a, b) PETACOMM_PROF_CONCAT2(a, b)
#define PETACOMM_PROF_REGION(name) \
  ::petacomm::prof::ScopedRegion PETACOMM_PROF_CONCAT(petacomm_prof_region_, __LINE__)(name)
#endif

#endif /* PETACOMM_PROF_H */
