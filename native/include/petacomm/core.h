/* petacomm core C API: status codes, error messages, version and MPI identification.
 *
 * Every petacomm C function returns a petacomm_status. On failure the calling thread's
 * last error message (petacomm_last_error) names the argument and value at fault.
 */
#ifndef PETACOMM_CORE_H
#define PETACOMM_CORE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum petacomm_status {
  PETACOMM_SUCCESS = 0,
  PETACOMM_ERR_ARG = 1,      /* an argument is invalid; nothing was modified */
  PETACOMM_ERR_MPI = 2,      /* an MPI call failed */
  PETACOMM_ERR_NOMEM = 3,    /* an allocation failed */
  PETACOMM_ERR_STATE = 4,    /* called in the wrong state (freed plan, execution in progress,
                                MPI not initialised): the caller's sequence of calls is wrong */
  PETACOMM_ERR_INTERNAL = 5, /* an invariant of petacomm broke (a bug): please report it */
} petacomm_status;

/* Repetitions an option may ask for at most: the executions petacomm_xchg_options.autotune
 * times per candidate strategy and those petacomm_transpose_options.measure_reps times per
 * candidate (a larger value is ERR_ARG naming the option); also the benchmarks' bound. */
#define PETACOMM_MAX_REPS 1000000

/* One strategy of an algorithm family, as the family's registry lists it. Families expose
 * petacomm_<family>_strategy_count(int *count) and
 * petacomm_<family>_strategy_info(int index, petacomm_strategy_info *info); the Python
 * binding and the documentation read strategy names and options from there. */
typedef struct petacomm_strategy_info {
  const char *name;    /* the name a caller passes as strategy, e.g. "directory" */
  const char *summary; /* one sentence: what it does and when it wins */
  const char *options; /* space-separated names of the plan options it reads ("" if none) */
} petacomm_strategy_info;

/* Message of the last error raised on this thread ("" if none). */
const char *petacomm_last_error(void);

/* Library version, e.g. "0.1.0". */
const char *petacomm_version(void);

/* MPI_Get_library_version of the MPI this library was built against (callable before
 * MPI_Init). Writes at most buflen bytes including the terminating NUL. */
petacomm_status petacomm_mpi_library_version(char *buf, int buflen);

/* MPI standard version the library was built against (MPI_VERSION, MPI_SUBVERSION). */
petacomm_status petacomm_mpi_standard_version(int *version, int *subversion);

#ifdef __cplusplus
}
#endif
#endif /* PETACOMM_CORE_H */
