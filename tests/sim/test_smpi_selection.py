"""Which collective algorithm SMPI runs, as ``petacomm simulate --predict`` reads it, against
the selector's table in SimGrid 3.32's smpi_openmpi_selector.cpp, case by case."""

from __future__ import annotations

import pytest

from petacomm.sim.smpi import COMMON_OPTIONS
from petacomm.sim.smpi_selection import (
    smpi_allreduce_algorithm,
    smpi_alltoall_algorithm,
    smpi_barrier_algorithm,
)


@pytest.mark.parametrize(
    "ranks, block, options, expected",
    [
        (256, 128, (), "bruck"),  # 256 <= p < 512, < 1024 B: Bruck
        (1024, 32, (), "bruck"),  # 1024 <= p < 2048: < 512 B
        (1024, 512, (), "linear"),  # < 1024 B: linear_sync
        (128, 300000, (), "xor"),  # 128 <= p < 256: >= 262144 B: pair
        (2, 1, (), "xor"),
        (4, 100, (), "linear"),
        (20, 100, (), "bruck"),
        (5000, 2047, (), "bruck"),
        (5000, 2048, (), "linear"),
        (256, 128, ("--cfg=smpi/alltoall:pair",), "xor"),
        (256, 128, ("--cfg=smpi/alltoall:pair", "--cfg=smpi/alltoall:basic_linear"), "linear"),
        (256, 128, ("--cfg=smpi/alltoall:ring",), None),
        (256, 128, ("--cfg=smpi/coll-selector:mpich",), None),
    ],
)
def test_smpi_alltoall_algorithm_follows_its_selector(ranks, block, options, expected):
    assert smpi_alltoall_algorithm(ranks, block, options) == expected


@pytest.mark.parametrize(
    "ranks, options, expected",
    [
        (256, COMMON_OPTIONS, "redbcast"),  # 256 <= p < 512, < 4096 B: nonoverlapping
        (1024, COMMON_OPTIONS, "redbcast"),
        (100, COMMON_OPTIONS, "rdb"),  # 64 <= p < 128: recursive doubling
        (32, COMMON_OPTIONS, None),  # 32 <= p < 64, < 128 B: segmented ring
        (32, (*COMMON_OPTIONS, "--cfg=smpi/allreduce:rdb"), "rdb"),
        (256, ("--cfg=smpi/coll-selector:ompi",), None),  # its broadcast not binomial_tree
        (5000, COMMON_OPTIONS, None),  # its reduce of 24 B: the in-order binary tree
    ],
)
def test_smpi_allreduce_algorithm_follows_its_selector(ranks, options, expected):
    assert smpi_allreduce_algorithm(ranks, 24, options) == expected


@pytest.mark.parametrize(
    "ranks, options, expected",
    [
        (2, (), "rdb"),  # p < 4: recursive doubling
        (5, (), None),  # 4 <= p < 8: linear
        (32, (), "rdb"),
        (64, (), "bruck"),
        (256, (), "tree"),
        (700, (), "bruck"),
        (1024, (), "tree"),
        (4096, (), "bruck"),
        (256, ("--cfg=smpi/barrier:ompi_bruck",), "bruck"),
        (256, ("--cfg=smpi/barrier:ompi_basic_linear",), None),
    ],
)
def test_smpi_barrier_algorithm_follows_its_selector(ranks, options, expected):
    assert smpi_barrier_algorithm(ranks, options) == expected
