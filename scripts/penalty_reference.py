#!/usr/bin/python3
"""The df -> lambda step's reference: tests/data/gam/penalty_reference.h5.

For eight learners' G = B^T W B (k = 24, cubic, second differences), the
Demmler-Reinsch eigenvalues d of K against G + 1e-9 K (mboost's ridge) and the
lambda of df(lambda) = trace(2S - S^T S) = 4, with 60 significant digits
(mpmath), from the same double-precision G that kpl is handed. Cases: three
unweighted and three weighted covariates of tests/data/gam/gam_small.h5; one
covariate of 1000 values clustered in [0, 0.1] and 20 spread over [0, 1];
and covariate 1 of mboost_cvrisk_bootstrap_weighted.h5 weighted by resample
14 of its /folds, where the first basis function has one row of positive
weight, so that G is singular but for the ridge.

Run with Debian's python3 (h5py, NumPy, SciPy, mpmath: python3-mpmath):
    /usr/bin/python3 scripts/penalty_reference.py
"""
import pathlib

import h5py
import mpmath as mp
import numpy as np
from scipy.interpolate import BSpline

DATA = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "gam"
K_BASIS, DEGREE, DF = 24, 3, 4


def basis(x):
    """mboost's bbs basis: equidistant knots over [min, max], continued."""
    low, high = x.min(), x.max()
    step = (high - low) / (K_BASIS - DEGREE)
    knots = low + step * np.arange(-DEGREE, K_BASIS + 1)
    return BSpline.design_matrix(np.clip(x, low, high), knots, DEGREE).toarray()


def grams():
    X = h5py.File(DATA / "gam_small.h5")["X"][...]
    generator = np.random.default_rng(3)
    made = []
    for j in range(6):
        B = basis(X[:, j])
        w = np.ones(len(B)) if j < 3 else (generator.exponential(size=len(B)) *
                                           (generator.random(len(B)) > 0.1))
        made.append(B.T @ (B * w[:, None]))
    x = np.concatenate([generator.random(1000) * 0.1, generator.random(20)])
    B = basis(x)
    made.append(B.T @ B)
    with h5py.File(DATA / "mboost_cvrisk_bootstrap_weighted.h5") as f:
        B = basis(f["X"][:, 1])
        w = f["folds"][:, 14].astype(float)
    made.append(B.T @ (B * w[:, None]))
    return made


def reference(gram, penalty):
    A = mp.matrix((gram + 1e-9 * penalty).tolist())  # as kpl forms it, in double
    inverse = mp.inverse(mp.cholesky(A))
    R = inverse * mp.matrix(penalty.tolist()) * inverse.T
    d = sorted((abs(e) for e in mp.eigsy((R + R.T) / 2, eigvals_only=True)), reverse=True)
    df = lambda lam: sum(2 / (1 + lam * e) - 1 / (1 + lam * e) ** 2 for e in d)
    lam = mp.findroot(lambda lam: df(lam) - DF, (mp.mpf(1e-6), mp.mpf(1e12)), solver="anderson")
    return [float(e) for e in d], float(lam)


def main():
    mp.mp.dps = 60
    D = np.diff(np.eye(K_BASIS), 2, axis=0)
    penalty = D.T @ D
    made = grams()
    results = [reference(g, penalty) for g in made]
    with h5py.File(DATA / "penalty_reference.h5", "w") as f:
        f["gram"] = np.array(made)
        f["penalty"] = penalty
        f["eigenvalues"] = np.array([r[0] for r in results])
        f["lambda"] = np.array([r[1] for r in results])
        f.attrs["df"] = DF
        f.attrs["df_definition"] = "trace(2S - S^T S)"
        f.attrs["ridge"] = "eigenvalues of L^-1 K L^-T, L L^T = G + 1e-9 K (mboost's df2lambda)"
        f.attrs["reference"] = "mpmath, 60 digits; scripts/penalty_reference.py"
    print("lambda:", [r[1] for r in results])


if __name__ == "__main__":
    main()
