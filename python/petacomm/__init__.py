"""petacomm: measure, model, map and replace MPI communication at scale.

Importing this package never initialises MPI: modules that need mpi4py import it
lazily inside the functions that use it.
"""

from petacomm.errors import PetacommError

__version__ = "0.1.0"
__all__ = [
    "FourierFilter",
    "PencilPlan",
    "PetacommError",
    "SparseReducePlan",
    "TransposePlan",
    "__version__",
]


def __getattr__(name: str):
    # Lazy: importing petacomm must not load the native library or touch MPI.
    if name == "SparseReducePlan":
        from petacomm.xchg import SparseReducePlan

        return SparseReducePlan
    if name in ("TransposePlan", "PencilPlan", "FourierFilter"):
        import petacomm.transpose

        return getattr(petacomm.transpose, name)
    raise AttributeError(f"module 'petacomm' has no attribute {name!r}")
