"""``petacomm bench NAME``: one sub-command per benchmark.

Each benchmark module exposes ``register(subparsers)`` adding its own sub-parser with
``func`` set; list it in BENCHMARK_MODULES.
"""

from __future__ import annotations

import importlib

BENCHMARK_MODULES: tuple[str, ...] = (
    "petacomm.topology.benchmark",
    "petacomm.bench.sparse_reduce",
    "petacomm.profile.overhead",
    "petacomm.bench.mapmaker",
    "petacomm.bench.node",
    "petacomm.bench.sweep3d",
    "petacomm.bench.halo",
    "petacomm.bench.transpose",
    "petacomm.bench.fftfilter",
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="run a benchmark and print its figures (strategies or tools side by side)",
        description="Benchmarks print measured figures with units; ratios are measured "
        "side by side in one run because shared machines are noisy.",
    )
    bench_subparsers = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    for name in BENCHMARK_MODULES:
        importlib.import_module(name).register(bench_subparsers)
    parser.set_defaults(func=lambda args: _missing_benchmark(parser))


def _missing_benchmark(parser) -> int:
    parser.print_help()
    return 2
