"""Boosted generalised additive models (`kpl gam fit`, `kpl gam predict`):
component-wise boosting with one penalised B-spline learner per covariate,
as R mboost's gamboost with bbs learners."""

import numpy

from . import _kpl

__all__ = ["fit", "load", "Model"]

Model = _kpl.GamModel
Model.__doc__ = """A fitted model. Attributes (NumPy copies): offset, coefficients [p, k],
lambda_ [p] (the penalty of each learner), df [p] (the df it achieved), selected [mstop]
(0-based covariate per iteration), risk [mstop + 1] (training risk, first at the offset),
boundary [p, 2] (each covariate's training range: the knot meshes), cv_risk [K, range + 1] or
None, options (the fit's settings), covariates, observations, timings. predict(X,
partial_effects=False). A model from load() has no lambda_, df, selected or risk (empty):
the model file reader (kpl::read_gam_model) reads what prediction needs."""


def fit(X, y, *, basis_size=24, degree=3, penalty="pspline", differences=2, df=4.0,
        df_definition="trace2", nu=0.1, mstop=100, family="gaussian", cv=None, cv_seed=1,
        mode="direct", basis="automatic", gemv=None, gram_refresh=100):
    """Fits a boosted GAM to X [n, p] and y [n] (`kpl gam fit`); returns a Model.

    X and y: float32 or float64, the same dtype, which is the precision of the
    basis (sums, f and the learners' matrices stay float64), as
    `kpl gam fit --precision`. Options as `kpl gam fit`'s: basis_size (k),
    degree, penalty ('pspline' of order `differences`, or 'ridge'), df of
    every learner, df_definition ('trace2': mboost's, or 'trace'), nu, mstop,
    family ('gaussian', 'binomial' with y in {0, 1}, 'poisson'), cv (K: mstop
    chosen in [0, mstop] by K-fold cross-validation, then refitted), cv_seed,
    mode ('direct' or 'gram'), basis ('automatic': 'evaluated' on GPUs,
    'compact' on CPUs; or 'compact', 'dense', 'evaluated'), gemv (a gemv
    strategy; implies basis='dense'), gram_refresh. The model equals the one
    `kpl gam fit` writes for the same data and options.
    """
    X, y = numpy.asarray(X), numpy.asarray(y)
    if isinstance(cv_seed, bool) or not isinstance(cv_seed, (int, numpy.integer)) or cv_seed < 0:
        raise ValueError(f"kpl.gam.fit: cv_seed must be a non-negative integer, not {cv_seed!r}")
    return _kpl.gam_fit(X, y, basis_size=basis_size, degree=degree, penalty=penalty,
                        differences=differences, df=float(df), df_definition=df_definition,
                        nu=float(nu), mstop=mstop, family=family, cv=cv, cv_seed=int(cv_seed),
                        mode=mode, basis=basis, gemv=gemv, gram_refresh=gram_refresh)


def load(path):
    """The model in a file written by `kpl gam fit` (for predict)."""
    return _kpl.gam_load(str(path))
