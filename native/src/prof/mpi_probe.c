/* Preprocessed by the build: generate_wrappers.py reads which calls mpi.h declares. */
#include <mpi.h>
