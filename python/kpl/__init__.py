"""kpl on NumPy arrays: batched non-negative least squares, waveform
deconvolution and boosted GAMs (kpl.gam), computed by kpl's Kokkos kernels on
the default execution space.

Arrays are float32 or float64, and the dtype is the precision; other dtypes
are refused with a TypeError (nothing is converted silently). Arrays that are
not C-contiguous are copied. Bad data (NaN or Inf, empty or mismatched
arrays) raises kpl.InputError, a ValueError, with the message the command
line `kpl` prints for the same data in a file; impossible options raise
ValueError. Kokkos is initialised at the first call (or by kpl.initialize)
and finalised at interpreter exit. Calls release the GIL while they compute;
calls from several threads run one after another on kpl's own Kokkos thread.
"""

from collections import namedtuple

import numpy

from . import _kpl
from ._kpl import InputError, ResourceError, info, initialize, initialized

__all__ = ["nnls", "deconvolve", "gam", "NnlsResult", "DeconvolutionResult", "InputError",
           "ResourceError", "NotConvergedError", "STATUS", "info", "initialize", "initialized"]

# The values of `status`, as `kpl nnls` writes them.
STATUS = ("converged", "max_iterations", "numerical_issue", "passive_set_full",
          "dependent_columns", "kkt_not_met")

NnlsResult = namedtuple("NnlsResult", "x rnorm iterations status kkt_residual")
NnlsResult.__doc__ = """Per system: x [n], rnorm = ||A x - b||, iterations (passive solves),
status (kpl.STATUS[status]; only 0, converged, promises a solution) and
kkt_residual (largest KKT violation relative to ||a_j|| ||b||)."""
DeconvolutionResult = namedtuple("DeconvolutionResult",
                                 "x fit rnorm iterations status kkt_residual")
DeconvolutionResult.__doc__ = """Per waveform: x [m] (the returns, >= 0), fit = A x [m], and
rnorm, iterations, status, kkt_residual as in NnlsResult."""


class NotConvergedError(RuntimeError):
    """strict=True and some systems did not converge (`kpl ... --strict` exits 3)."""


def _arrays(**arrays):
    return [numpy.asarray(value) for value in arrays.values()]


def _finish(result_type, results, single, strict, what):
    status = results["status"]
    if strict and numpy.any(status != 0):
        raise NotConvergedError(f"{int(numpy.count_nonzero(status))} of {status.size} {what} "
                                f"did not converge (statuses: "
                                f"{sorted({STATUS[s] for s in status if s != 0})})")
    values = {name: results[name] for name in result_type._fields}
    if single:  # one system: its values, not a batch of one
        values = {name: value[0] if value.ndim > 1 else value[0].item()
                  for name, value in values.items()}
    return result_type(**values)


def nnls(A, b, *, max_iterations=None, tolerance=None, kkt_tolerance=None, max_passive=None,
         orthogonalization="automatic", gradient="automatic", strict=False):
    """min ||A_s x_s - b_s|| subject to x_s >= 0 for every system s (`kpl nnls`).

    A: [m, n] shared by every system, or [systems, m, n]; b: [systems, m], or
    [m] for one system (then every result is that system's alone). A and b
    float32 or float64, the same dtype. Options as `kpl nnls`: max_iterations
    (default 3n), tolerance and kkt_tolerance (relative to ||a_j|| ||b||;
    default 10 eps max(m, n)), max_passive (default min(m, n)),
    orthogonalization ('automatic', 'modified-gram-schmidt',
    'classical-twice'), gradient ('automatic', 'residual', 'cross-products';
    the latter for a shared A only); strict=True raises NotConvergedError
    unless every system converged. Returns NnlsResult; results equal what
    `kpl nnls` writes for the same arrays.
    """
    A, b = _arrays(A=A, b=b)
    results = _kpl.nnls(A, b, max_iterations=max_iterations, tolerance=tolerance,
                        kkt_tolerance=kkt_tolerance, max_passive=max_passive,
                        orthogonalization=orthogonalization, gradient=gradient)
    return _finish(NnlsResult, results, b.ndim == 1, strict, "systems")


def deconvolve(pulse, waveforms, *, pulse_origin="start", max_iterations=None, tolerance=None,
               kkt_tolerance=None, max_passive=None, orthogonalization="automatic",
               strict=False):
    """Non-negative deconvolution of waveforms by their pulse (`kpl deconv`).

    pulse: [L] shared, or [waveforms, L]; waveforms: [waveforms, m], or [m]
    for one (then every result is that waveform's alone); float32 or float64,
    the same dtype. Each waveform y is modelled as A x with x >= 0 and A the
    Toeplitz matrix of the pulse, A[i, j] = pulse[i - j + c], c = 0
    (pulse_origin='start') or L // 2 ('center'). max_passive: default
    adaptive (64, doubled up to m for the waveforms that reach it); the
    other options as kpl.nnls. The batch is solved at once (no memory budget:
    `kpl deconv` streams files in chunks, with the same results). Returns
    DeconvolutionResult.
    """
    pulse, waveforms = _arrays(pulse=pulse, waveforms=waveforms)
    results = _kpl.deconvolve(pulse, waveforms, max_iterations=max_iterations,
                              tolerance=tolerance, kkt_tolerance=kkt_tolerance,
                              max_passive=max_passive, orthogonalization=orthogonalization,
                              pulse_origin=pulse_origin)
    return _finish(DeconvolutionResult, results, waveforms.ndim == 1, strict, "waveforms")


from . import gam  # noqa: E402  (after the names gam.py uses)
