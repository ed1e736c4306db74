"""What the profile of native/tests/prof/prof_pattern.c must contain, per rank.

Mirrors the program line by line: (region, call, size) -> (count, bytes) summed over ranks,
and (rank, call, partner) -> (count, bytes). Partner codes: -2 MPI_PROC_NULL.
"""

from __future__ import annotations

from collections import defaultdict

PROC_NULL = -2


def pattern(size: int, one_sided: bool = True) -> tuple[dict, dict]:
    calls: dict[tuple[str, str, int], list[int]] = defaultdict(lambda: [0, 0])
    peers: dict[tuple[int, str, int], list[int]] = defaultdict(lambda: [0, 0])

    def rec(rank, region, call, nbytes, peer=None, count=1, size_key=None):
        key = (region, call, nbytes if size_key is None else size_key)
        calls[key][0] += count
        calls[key][1] += nbytes * count
        if peer is not None:
            peers[(rank, call, peer)][0] += count
            peers[(rank, call, peer)][1] += nbytes * count

    for r in range(size):
        right, left = (r + 1) % size, (r - 1) % size
        # ring
        for _ in range(3):
            rec(r, "ring", "MPI_Isend", 800, right)
            rec(r, "ring", "MPI_Recv", 800, left)
            rec(r, "ring", "MPI_Wait", 0)
        # collectives
        rec(r, "collectives", "MPI_Allreduce", 4, count=2)
        rec(r, "collectives", "MPI_Bcast", 40, 0)
        rec(r, "collectives", "MPI_Gather", 24, size - 1)
        rec(r, "collectives", "MPI_Alltoall", 8 * size)
        rec(r, "collectives", "MPI_Barrier", 0)
        # nonblocking
        rec(r, "nonblocking", "MPI_Irecv", 16, left)
        rec(r, "nonblocking", "MPI_Isend", 16, right)
        rec(r, "nonblocking", "MPI_Waitall", 0, count=3)
        rec(r, "nonblocking", "MPI_Iallreduce", 32)
        rec(r, "nonblocking", "MPI_Wait", 0)
        # persistent: *_init moves nothing, each activation 64 bytes
        calls[("nonblocking", "MPI_Send_init", 64)][0] += 1
        calls[("nonblocking", "MPI_Recv_init", 64)][0] += 1
        peers[(r, "MPI_Send_init", right)][0] += 1
        peers[(r, "MPI_Recv_init", left)][0] += 1
        rec(r, "nonblocking", "MPI_Send_init:start", 64, right, count=2)
        rec(r, "nonblocking", "MPI_Recv_init:start", 64, left, count=2)
        rec(r, "nonblocking", "MPI_Startall", 0, count=2)
        rec(r, "nonblocking", "MPI_Request_free", 0, count=2)
        # troublesome arguments, outside regions
        rec(r, "(program)", "MPI_Send", 0, PROC_NULL)
        rec(r, "(program)", "MPI_Recv", 0, PROC_NULL)
        rec(r, "(program)", "MPI_Sendrecv", 0, r)  # zero count to self
        rec(r, "(program)", "MPI_Sendrecv", 64, right)  # derived datatype
        rec(r, "(program)", "MPI_Allgather", 8)  # in place, MPI_DATATYPE_NULL send type
        rec(r, "(program)", "MPI_Sendrecv", 10000, right, size_key=9216)  # binned
        # split communicator: partner is the next rank of the same parity, as a world rank
        same = [q for q in range(size) if q % 2 == r % 2]
        nxt = same[(same.index(r) + 1) % len(same)]
        rec(r, "(program)", "MPI_Comm_split", 0)
        rec(r, "(program)", "MPI_Sendrecv", 4, nxt)
        rec(r, "(program)", "MPI_Comm_free", 0, count=2)
        rec(r, "(program)", "MPI_Win_create", 0)
        if one_sided:  # the program skips this when the MPI cannot create the window
            rec(r, "(program)", "MPI_Win_fence", 0, count=2)
            rec(r, "(program)", "MPI_Put", 8, right)
            rec(r, "(program)", "MPI_Win_free", 0)
        rec(r, "(program)", "MPI_Cart_create", 0)
        rec(r, "(program)", "MPI_Neighbor_alltoall", 8)
        rec(r, "(program)", "MPI_Allreduce", 4)
    return {k: tuple(v) for k, v in calls.items()}, {k: tuple(v) for k, v in peers.items()}


def fortran_pattern(size: int) -> tuple[dict, dict]:
    """What the profile of tests/prof/programs/fortran_pattern.f90 must contain: (region, call,
    size) -> (count, bytes) summed over ranks (POSIX calls left out), and the partners
    (rank, call, partner) -> (count, bytes) the program determines."""
    p = size
    calls = {
        ("fortran_ring", "MPI_Send", 800): (3 * p, 2400 * p),
        ("fortran_ring", "MPI_Recv", 800): (3 * p, 2400 * p),
        ("(program)", "MPI_Allreduce", 4): (2 * p, 8 * p),
        ("(program)", "MPI_Bcast", 40): (p, 40 * p),
        ("(program)", "MPI_Irecv", 16): (p, 16 * p),
        ("(program)", "MPI_Isend", 16): (p, 16 * p),
        ("(program)", "MPI_Waitall", 0): (p, 0),
        ("(program)", "MPI_Barrier", 0): (p, 0),
    }
    peers = {}
    for r in range(p):
        right, left = (r + 1) % p, (r - 1) % p
        peers[(r, "MPI_Send", right)] = (3, 2400)
        peers[(r, "MPI_Recv", left)] = (3, 2400)
        peers[(r, "MPI_Irecv", left)] = (1, 16)  # MPI_ANY_SOURCE resolved at completion
        peers[(r, "MPI_Bcast", 0)] = (1, 40)
    return calls, peers


def fortran_large_count(size: int) -> tuple[dict, dict]:
    """What the profile of tests/prof/programs/fortran_large_count_f08.f90 must contain (its
    header lists the calls per rank), in the form of fortran_pattern's."""
    p = size
    calls = {
        ("fortran_ring", "MPI_Isend_c", 800): (2 * p, 1600 * p),
        ("fortran_ring", "MPI_Recv_c", 800): (2 * p, 1600 * p),
        ("fortran_ring", "MPI_Wait", 0): (2 * p, 0),
        ("(program)", "MPI_Allreduce_c", 24): (p, 24 * p),
        ("(program)", "MPI_Bcast_c", 20): (p, 20 * p),
        ("(program)", "MPI_Irecv_c", 16): (p, 16 * p),
        ("(program)", "MPI_Isend_c", 16): (p, 16 * p),
        ("(program)", "MPI_Waitall", 0): (p, 0),
    }
    peers = {}
    for r in range(p):
        right, left = (r + 1) % p, (r - 1) % p
        peers[(r, "MPI_Isend_c", right)] = (3, 1616)
        peers[(r, "MPI_Recv_c", left)] = (2, 1600)
        peers[(r, "MPI_Irecv_c", left)] = (1, 16)  # MPI_ANY_SOURCE resolved at completion
        peers[(r, "MPI_Bcast_c", 0)] = (1, 20)
    return calls, peers


def requests_pattern(
    size: int, tests: dict[int, dict[str, int]], io: bool = False
) -> tuple[dict, dict]:
    """What the profile of native/tests/prof/prof_requests.c must contain, worked out from
    the program's phases (its header): (region, call, size) -> (count, bytes) summed over
    ranks, and (rank, call, partner) -> (count, bytes). `tests`: per rank, the number of
    MPI_Testall/Testsome/Testany/Waitsome calls the program made (it prints them); `io`: the
    program was given a file (its MPI-IO phase)."""
    calls: dict[tuple[str, str, int], list[int]] = defaultdict(lambda: [0, 0])
    peers: dict[tuple[int, str, int], list[int]] = defaultdict(lambda: [0, 0])

    def rec(rank, region, call, nbytes, count, peer=None):
        calls[(region, call, nbytes)][0] += count
        calls[(region, call, nbytes)][1] += nbytes * count
        if peer is not None:
            peers[(rank, call, peer)][0] += count
            peers[(rank, call, peer)][1] += nbytes * count

    for r in range(size):
        right, left = (r + 1) % size, (r - 1) % size
        rec(r, "shared", "MPI_Irecv", 8, 125 * 4, left)
        rec(r, "shared", "MPI_Isend", 8, 125 * 4, right)
        rec(r, "shared", "MPI_Isend", 0, 125 * 2, PROC_NULL)
        rec(r, "shared", "MPI_Waitall", 0, 125)
        rec(r, "testall", "MPI_Irecv", 16, 100 * 2, left)
        rec(r, "testall", "MPI_Isend", 16, 100 * 2, right)
        rec(r, "testall", "MPI_Isend", 0, 100, PROC_NULL)
        rec(r, "testall", "MPI_Testall", 0, tests[r]["testall"])
        for region, waits in (("waitsome", "MPI_Waitsome"), ("testsome", "MPI_Testsome")):
            rec(r, region, "MPI_Irecv", 24, 50 * 3, left)  # ANY_SOURCE, resolved
            rec(r, region, "MPI_Isend", 24, 50 * 3, right)
            rec(r, region, "MPI_Isend", 0, 50, PROC_NULL)
            rec(r, region, waits, 0, tests[r][waits[4:].lower()])
        rec(r, "waitany", "MPI_Irecv", 40, 50 * 2, left)
        rec(r, "waitany", "MPI_Isend", 40, 50 * 2, right)
        rec(r, "waitany", "MPI_Waitany", 0, 50 * 4)
        rec(r, "testany", "MPI_Irecv", 48, 50 * 2, left)
        rec(r, "testany", "MPI_Isend", 48, 50 * 2, right)
        rec(r, "testany", "MPI_Testany", 0, tests[r]["testany"])
        rec(r, "post", "MPI_Irecv", 32, 1, left)  # completed in "complete": posted here
        rec(r, "post", "MPI_Isend", 32, 1, right)
        rec(r, "complete", "MPI_Waitall", 0, 1)
        # persistent: each *_init once with no bytes where it was called, each activation
        # in the region of the MPI_Startall that started it
        for call, partner in (("MPI_Recv_init", left), ("MPI_Send_init", right)):
            calls[("init", call, 56)][0] += 1
            peers[(r, call, partner)][0] += 1
            rec(r, "start", f"{call}:start", 56, 3, partner)
        rec(r, "start", "MPI_Startall", 0, 3)
        rec(r, "start", "MPI_Waitall", 0, 3)
        rec(r, "start", "MPI_Request_free", 0, 2)
        rec(r, "(program)", "MPI_Allreduce", 4, 1)
        if io:
            rec(r, "io", "MPI_File_open", 0, 1)
            rec(r, "io", "MPI_File_iwrite_shared", 64, 1)
            rec(r, "io", "MPI_Wait", 0, 1)
            rec(r, "io", "MPI_File_close", 0, 1)
    return {k: tuple(v) for k, v in calls.items()}, {k: tuple(v) for k, v in peers.items()}
