"""Key-set generators for sparse reductions: any number of ranks, no MPI, deterministic by
seed. Each generator is a frozen dataclass with ``keys(rank)`` (this rank's keys, int64, in
time or generation order, repeats allowed), ``all_keys()`` and ``key_range``.

- ``uniform``: keys drawn uniformly from a range 20x a rank's count (no locality);
- ``banded``: each rank a contiguous block plus a halo shared with its neighbours;
- ``cmb``: a spinning, precessing telescope scanning a HEALPix sky, samples split evenly
  over ranks in time order (the MADmap pattern: most pixels on few ranks, pixels near the
  scan poles on almost all, keys spread over the whole range);
- ``zipf``: keys drawn with Zipf popularity over a range 20x a rank's count (a few keys on
  every rank, a long tail on one).
"""

from petacomm.datasets.banded import BandedKeys
from petacomm.datasets.cmb_scan import CmbScanKeys
from petacomm.datasets.uniform import UniformKeys
from petacomm.datasets.zipf import ZipfKeys

GENERATORS = {"uniform": UniformKeys, "banded": BandedKeys, "cmb": CmbScanKeys, "zipf": ZipfKeys}


def make(name: str, ranks: int, **params):
    """The generator called ``name`` for ``ranks`` ranks; raises ValueError naming the problem."""
    try:
        cls = GENERATORS[name]
    except KeyError:
        raise ValueError(
            f"generator: unknown key set {name!r} (expected one of {', '.join(GENERATORS)})"
        ) from None
    return cls(ranks=ranks, **params)


__all__ = ["GENERATORS", "BandedKeys", "CmbScanKeys", "UniformKeys", "ZipfKeys", "make"]
