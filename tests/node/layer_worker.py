"""MPI worker: NodeLayer (the Python binding) against mpi4py at several virtual node sizes:
layout, point-to-point through private and heap arrays, collectives, a per-node file written
through the servant, gateway counters and bad use. Prints 'node layer ok' on every rank,
raises on the first mismatch."""

import sys
import tempfile
import traceback
from pathlib import Path

import numpy as np
from mpi4py import MPI

from petacomm.node import NodeLayer

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def reference_layout(k: int):
    """Node and local rank of every rank, split by hand (shared domain, then k per node)."""
    shared = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
    kk = k if k > 0 else shared.size
    node_comm = shared.Split(shared.rank // kk, shared.rank)
    shared.Free()
    is_leader = comm.allgather(node_comm.rank == 0)
    leaders = [r for r in range(size) if is_leader[r]]
    leader = node_comm.bcast(rank, root=0)
    nodes = comm.allgather(leaders.index(leader))
    locals_ = comm.allgather(node_comm.rank)
    return nodes, locals_, leaders, node_comm


def check_layout(layer, k):
    nodes, locals_, leaders, node_comm = reference_layout(k)
    layout = layer.layout
    assert (layout.node, layout.local_rank, layout.nodes) == (
        nodes[rank],
        locals_[rank],
        len(leaders),
    ), layout
    assert layout.leader == leaders[nodes[rank]]
    assert [layer.locate(r) for r in range(size)] == list(zip(nodes, locals_, strict=True))
    node_c, leader_c = layer.comms()
    assert (node_c.size, node_c.rank) == (layout.local_size, layout.local_rank)
    assert (leader_c is not None) == (layout.local_rank == 0)
    if leader_c is not None:
        assert (leader_c.size, leader_c.rank) == (layout.nodes, layout.node)
    return nodes, locals_, node_comm


def check_point_to_point(layer):
    right, left = (rank + 1) % size, (rank - 1) % size
    for n in (0, 7, 5000, 200_000):
        out = (np.arange(n, dtype=np.int64) * (rank + 3)) % 251
        got = layer.alloc(n, np.int64) if n % 2 == 0 else np.empty(n, dtype=np.int64)
        request = layer.irecv(got, left, tag=n % 7)
        layer.send(out, right, tag=n % 7)
        status = request.wait()
        assert (status.source, status.tag, status.bytes) == (left, n % 7, 8 * n), status
        assert np.array_equal(got, (np.arange(n, dtype=np.int64) * (left + 3)) % 251), n
        if n % 2 == 0:
            assert n == 0 or layer.memory_space(got) == "host-window"
            layer.dealloc(got)
    # many in flight, completed by test()
    sends = [layer.isend(np.full(3, rank * 100 + i), right, tag=1) for i in range(50)]
    bufs = [np.empty(3, dtype=np.int64) for _ in range(50)]
    recvs = [layer.irecv(b, left, tag=1) for b in bufs]
    pending = sends + recvs
    while pending:
        pending = [r for r in pending if r.test() is None]
    assert [int(b[0]) for b in bufs] == [left * 100 + i for i in range(50)]


def check_collectives(layer, node_comm):
    rng = np.random.default_rng(rank)
    for dtype in (np.int32, np.int64, np.float32, np.float64):
        data = rng.integers(-1000, 1000, 37).astype(dtype)
        for scope, c in (("all", comm), ("node", node_comm)):
            for op, mop in (("sum", MPI.SUM), ("min", MPI.MIN), ("max", MPI.MAX)):
                want = np.empty_like(data)
                c.Allreduce(data, want, op=mop)
                assert np.array_equal(layer.allreduce(data, op, scope), want), (dtype, scope, op)
                root = c.size - 1
                want_root = np.empty_like(data)
                c.Reduce(data, want_root, op=mop, root=root)
                got = layer.reduce(data, root, op, scope)
                if c.rank == root:
                    assert np.array_equal(got, want_root), (dtype, scope, op, "reduce")
            gathered = layer.gather(data, 0, scope)
            want = c.gather(data, root=0)
            if c.rank == 0:
                assert np.array_equal(gathered, np.stack(want)), (dtype, scope, "gather")
            buf = data.copy() if c.rank == c.size // 2 else np.zeros_like(data)
            layer.bcast(buf, c.size // 2, scope)
            assert np.array_equal(buf, c.bcast(data, root=c.size // 2)), (dtype, scope, "bcast")


def check_file(layer, nodes, locals_, directory):
    layout = layer.layout
    path = Path(directory) / f"node{layout.node}.bin"
    f = layer.open(path, "w+")
    layer.barrier("node")  # every rank has opened it before anyone writes
    block = np.full(1000 + 3, rank, dtype=np.uint8)
    f.write_at(layout.local_rank * block.size, block)
    layer.barrier("node")
    assert f.read_at(layout.local_rank * block.size, block.size) == block.tobytes()
    f.close()
    layer.barrier("all")
    if layout.local_rank == 0:
        disk = path.read_bytes()
        members = [r for r in range(size) if nodes[r] == layout.node]
        want = b"".join(bytes([r]) * 1003 for r in sorted(members, key=lambda r: locals_[r]))
        assert disk == want, f"{path}: {len(disk)} bytes"


def check_counters(layer, nodes, before):
    after = layer.counters()
    remote = after["remote_messages"] - before["remote_messages"]
    forwarded = after["forwarded_messages"] - before["forwarded_messages"]
    delivered = after["delivered_messages"] - before["delivered_messages"]
    per_rank = comm.allgather((remote, forwarded, delivered))
    node_remote = sum(p[0] for r, p in enumerate(per_rank) if nodes[r] == nodes[rank])
    if layer.layout.local_rank == 0:
        assert forwarded == node_remote, (forwarded, node_remote)
    assert sum(p[1] for p in per_rank) == sum(p[2] for p in per_rank)


def check_errors(layer):
    try:
        layer.recv(np.empty(4), size)
    except ValueError as err:
        assert f"source: {size} is not a rank" in str(err), err
    else:
        raise AssertionError("recv from an invalid rank did not fail")
    right, left = (rank + 1) % size, (rank - 1) % size
    request = layer.isend(np.arange(100, dtype=np.int64), right, tag=5)
    small = np.full(10, -1, dtype=np.int64)
    try:
        layer.recv(small, left, tag=5)
    except ValueError as err:
        assert "800 bytes, the receive buffer 80" in str(err), err
    else:
        raise AssertionError("a receive into a too small buffer did not fail")
    assert (small == -1).all()
    request.wait()
    # Values in the other byte order would be reduced as this machine's: refused by name on
    # the last rank only, the reduction fails on every rank together (none is left
    # waiting), the others' buffers untouched, and the layer goes on working.
    good = np.arange(4, dtype=np.float64) + rank
    swapped = good.astype(good.dtype.newbyteorder())
    culprit = rank == size - 1
    cases = (
        (lambda: layer.allreduce(swapped if culprit else good), f"dtype {swapped.dtype.str}"),
        (lambda: layer.reduce(swapped if culprit else good, 0), "byte order"),
        (lambda: layer.allreduce(good, "median" if culprit else "sum"), "op: unknown 'median'"),
        (lambda: layer.gather(good.astype(np.int16) if culprit else good, 0), "int16"),
    )
    for call, says in cases:
        try:
            call()
        except ValueError as err:
            want = says if culprit else "invalid arguments on another rank"
            assert want in str(err), (rank, str(err))
        else:
            raise AssertionError(f"rank {rank}: a refused argument on rank {size - 1} was taken")
    assert np.array_equal(good, np.arange(4) + rank)
    # An option refused by the binding on the last rank only: no layer anywhere, no wait.
    try:
        NodeLayer(comm, **({"bogus": 1} if culprit else {})).close()
    except ValueError as err:
        want = "bogus: not an option" if culprit else f"rank {size - 1}: bogus: not an option"
        assert want in str(err), (rank, str(err))
    else:
        raise AssertionError(f"rank {rank}: a refused option on rank {size - 1} was taken")
    assert np.array_equal(layer.allreduce(good), np.arange(4) * size + sum(range(size)))
    # A copy moves the bytes as they are: in the other byte order they arrive equal.
    buf = swapped.copy() if rank == 0 else np.zeros_like(swapped)
    layer.bcast(buf, 0)
    assert buf.dtype == swapped.dtype and np.array_equal(buf, np.arange(4)), buf
    gathered = layer.gather(swapped, 0)
    if rank == 0:
        assert np.array_equal(gathered, np.arange(4) + np.arange(size)[:, None]), gathered


def main():
    directory = comm.bcast(tempfile.mkdtemp(prefix="petacomm-node-py-") if rank == 0 else None)
    for k in (0, 1, 2, 3):
        # No `with`: a failing rank must abort the job, not wait in the collective close.
        layer = NodeLayer(comm, node_size=k, slot_bytes=512, heap_bytes=32 << 20)
        before = layer.counters()
        nodes, locals_, node_comm = check_layout(layer, k)
        check_point_to_point(layer)
        layer.barrier()
        check_counters(layer, nodes, before)
        check_collectives(layer, node_comm)
        check_file(layer, nodes, locals_, directory)
        check_errors(layer)
        layer.barrier()
        node_comm.Free()
        layer.close()
    print(f"node layer ok {rank}", flush=True)
    return 0


def run():
    try:
        return main()
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(1)


if __name__ == "__main__":
    sys.exit(run())
