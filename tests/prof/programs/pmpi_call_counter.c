/* A plain PMPI call counter, written apart from the profiler: the independent reference for
 * its call counts on third-party programs (tests/prof/test_third_party.py). Each rank prints
 * "COUNT <rank> <call> <n> ..." and "BYTES <rank> MPI_Send <n> MPI_Isend <n>" (count times
 * the datatype's size) on standard error at MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>

enum {
  ISEND,
  IRECV,
  SEND,
  RECV,
  SENDRECV,
  WAIT,
  WAITALL,
  ALLREDUCE,
  REDUCE,
  BCAST,
  BARRIER,
  ALLTOALL,
  NCALLS
};
static const char *names[NCALLS] = {"MPI_Isend",    "MPI_Irecv", "MPI_Send",    "MPI_Recv",
                                    "MPI_Sendrecv", "MPI_Wait",  "MPI_Waitall", "MPI_Allreduce",
                                    "MPI_Reduce",   "MPI_Bcast", "MPI_Barrier", "MPI_Alltoall"};
static long counts[NCALLS];
static long long send_bytes, isend_bytes;

static long long payload(int count, MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  return (long long)count * size;
}

int MPI_Isend(const void *b, int c, MPI_Datatype t, int d, int g, MPI_Comm m, MPI_Request *r) {
  ++counts[ISEND];
  isend_bytes += payload(c, t);
  return PMPI_Isend(b, c, t, d, g, m, r);
}
int MPI_Irecv(void *b, int c, MPI_Datatype t, int s, int g, MPI_Comm m, MPI_Request *r) {
  ++counts[IRECV];
  return PMPI_Irecv(b, c, t, s, g, m, r);
}
int MPI_Send(const void *b, int c, MPI_Datatype t, int d, int g, MPI_Comm m) {
  ++counts[SEND];
  send_bytes += payload(c, t);
  return PMPI_Send(b, c, t, d, g, m);
}
int MPI_Recv(void *b, int c, MPI_Datatype t, int s, int g, MPI_Comm m, MPI_Status *st) {
  ++counts[RECV];
  return PMPI_Recv(b, c, t, s, g, m, st);
}
int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int d, int sg, void *rb, int rc,
                 MPI_Datatype rt, int s, int rg, MPI_Comm m, MPI_Status *status) {
  ++counts[SENDRECV];
  return PMPI_Sendrecv(sb, sc, st, d, sg, rb, rc, rt, s, rg, m, status);
}
int MPI_Wait(MPI_Request *r, MPI_Status *s) {
  ++counts[WAIT];
  return PMPI_Wait(r, s);
}
int MPI_Waitall(int n, MPI_Request *r, MPI_Status *s) {
  ++counts[WAITALL];
  return PMPI_Waitall(n, r, s);
}
int MPI_Allreduce(const void *a, void *b, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m) {
  ++counts[ALLREDUCE];
  return PMPI_Allreduce(a, b, c, t, o, m);
}
int MPI_Reduce(const void *a, void *b, int c, MPI_Datatype t, MPI_Op o, int root, MPI_Comm m) {
  ++counts[REDUCE];
  return PMPI_Reduce(a, b, c, t, o, root, m);
}
int MPI_Bcast(void *b, int c, MPI_Datatype t, int root, MPI_Comm m) {
  ++counts[BCAST];
  return PMPI_Bcast(b, c, t, root, m);
}
int MPI_Barrier(MPI_Comm m) {
  ++counts[BARRIER];
  return PMPI_Barrier(m);
}
int MPI_Alltoall(const void *a, int ac, MPI_Datatype at, void *b, int bc, MPI_Datatype bt,
                 MPI_Comm m) {
  ++counts[ALLTOALL];
  return PMPI_Alltoall(a, ac, at, b, bc, bt, m);
}
/* The Fortran bindings (mpif.h and `use mpi`) of a few collectives, counted with their C
 * calls: Open MPI's call PMPI_* directly, so a C wrapper alone misses a Fortran program's
 * calls (and counts none twice). */
void pmpi_barrier_(MPI_Fint *comm, MPI_Fint *ierr);
void pmpi_bcast_(void *b, MPI_Fint *c, MPI_Fint *t, MPI_Fint *root, MPI_Fint *m, MPI_Fint *ierr);
void pmpi_allreduce_(void *a, void *b, MPI_Fint *c, MPI_Fint *t, MPI_Fint *o, MPI_Fint *m,
                     MPI_Fint *ierr);
void pmpi_alltoall_(void *a, MPI_Fint *ac, MPI_Fint *at, void *b, MPI_Fint *bc, MPI_Fint *bt,
                    MPI_Fint *m, MPI_Fint *ierr);
void mpi_barrier_(MPI_Fint *comm, MPI_Fint *ierr) {
  ++counts[BARRIER];
  pmpi_barrier_(comm, ierr);
}
void mpi_bcast_(void *b, MPI_Fint *c, MPI_Fint *t, MPI_Fint *root, MPI_Fint *m, MPI_Fint *ierr) {
  ++counts[BCAST];
  pmpi_bcast_(b, c, t, root, m, ierr);
}
void mpi_allreduce_(void *a, void *b, MPI_Fint *c, MPI_Fint *t, MPI_Fint *o, MPI_Fint *m,
                    MPI_Fint *ierr) {
  ++counts[ALLREDUCE];
  pmpi_allreduce_(a, b, c, t, o, m, ierr);
}
void mpi_alltoall_(void *a, MPI_Fint *ac, MPI_Fint *at, void *b, MPI_Fint *bc, MPI_Fint *bt,
                   MPI_Fint *m, MPI_Fint *ierr) {
  ++counts[ALLTOALL];
  pmpi_alltoall_(a, ac, at, b, bc, bt, m, ierr);
}

static void report(void) {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char line[1024];
  int n = snprintf(line, sizeof line, "COUNT %d", rank);
  for (int i = 0; i < NCALLS; ++i)
    n += snprintf(line + n, sizeof line - (size_t)n, " %s %ld", names[i], counts[i]);
  fprintf(stderr, "%s\nBYTES %d MPI_Send %lld MPI_Isend %lld\n", line, rank, send_bytes,
          isend_bytes);
}

int MPI_Finalize(void) {
  report();
  return PMPI_Finalize();
}

void pmpi_finalize_(MPI_Fint *ierr);
void mpi_finalize_(MPI_Fint *ierr) {
  report();
  pmpi_finalize_(ierr);
}
