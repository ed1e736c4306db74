"""Distributed transposes (2-D slabs, 3-D pencils), the packed half-complex real FFT and
the NEMORB Fourier filter: plan once, execute many times. See docs/transpose.md.

Importing this package does not import mpi4py or initialise MPI; pass any mpi4py
communicator. Strategy names come from the native registry: :func:`strategies`.
"""

from petacomm.transpose.fft import irfft_packed, rfft_packed
from petacomm.transpose.fourier_filter import FourierFilter
from petacomm.transpose.plan import PencilPlan, Strategy, TransposePlan, strategies

__all__ = [
    "FourierFilter",
    "PencilPlan",
    "Strategy",
    "TransposePlan",
    "irfft_packed",
    "rfft_packed",
    "strategies",
]
