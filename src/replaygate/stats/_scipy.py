"""The distributions the statistics use, from ``scipy.special``'s ufuncs, not from ``scipy.stats``.

``scipy.stats`` takes a second and a half to import; the gate needs of it only the normal quantile and
tail, the hypergeometric CDF and the binomial PMF. Those are, inside ``scipy.stats``, thin wrappers over
``scipy.special`` ufuncs (cephes ``ndtri``/``ndtr``, Boost's ``_hypergeom_cdf``/``_binom_pmf``); the
functions here call the same ufuncs with the same argument types, so their values are the very values
``scipy.stats.norm``, ``hypergeom`` and ``binom`` give (``tests/stats`` compares them bit for bit), for
the arguments the statistics pass (valid parameters, finite points; anything else: ``scipy.stats``).

``scipy.special`` itself (a fraction of a second) loads on first use, and ``scipy.stats`` only for what
still needs it (``fisher_exact`` of the two-sided per-scenario table, the exact Mann-Whitney law of tiny
samples), through :func:`scipy_stats`.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["binom_pmf", "hypergeom_cdf", "norm_isf", "norm_ppf", "norm_sf", "scipy_stats", "special"]


def scipy_stats() -> ModuleType:
    """The ``scipy.stats`` module (imported once, then from ``sys.modules``)."""
    return importlib.import_module("scipy.stats")


def special() -> ModuleType:
    """The ``scipy.special`` module (imported once, then from ``sys.modules``)."""
    return importlib.import_module("scipy.special")


def _ufunc(name: str) -> Any:
    return getattr(importlib.import_module("scipy.special._ufuncs"), name)


def norm_ppf(q: float) -> float:
    """``scipy.stats.norm.ppf(q)`` for ``0 < q < 1``."""
    if not 0.0 < q < 1.0:
        return float(scipy_stats().norm.ppf(q))
    return float(special().ndtri(q))


def norm_isf(q: float) -> float:
    """``scipy.stats.norm.isf(q)`` for ``0 < q < 1``."""
    if not 0.0 < q < 1.0:
        return float(scipy_stats().norm.isf(q))
    return float(-special().ndtri(q))


def norm_sf(x: float) -> float:
    """``scipy.stats.norm.sf(x)`` (the upper tail) for any number that is not NaN."""
    if x != x:
        return float(scipy_stats().norm.sf(x))
    return float(special().ndtr(-x))


def hypergeom_cdf(
    k: NDArray[np.int64], total: NDArray[np.int64], good: NDArray[np.int64], draws: NDArray[np.int64]
) -> NDArray[np.float64]:
    """``scipy.stats.hypergeom.cdf(k, total, good, draws)`` for valid integer parameters (``total > 0``).

    Outside the support the CDF is 0 below and 1 from its top; inside, Boost's CDF clipped to [0, 1].
    """
    k, total, good, draws = np.broadcast_arrays(
        *(np.asarray(a, dtype=np.int64) for a in (k, total, good, draws))
    )
    if (
        (total <= 0).any()
        or (good < 0).any()
        or (draws < 0).any()
        or (good > total).any()
        or (draws > total).any()
    ):
        raise ValueError("hypergeometric parameters out of range")
    low = np.maximum(draws - (total - good), 0)
    high = np.minimum(good, draws)
    inside = (k >= low) & (k < high)
    out = np.where(k >= high, 1.0, 0.0)
    if inside.any():
        values = _ufunc("_hypergeom_cdf")(k[inside], good[inside], draws[inside], total[inside])
        out[inside] = np.clip(values, 0, 1)
    return out


def binom_pmf(k: ArrayLike, n: int, p: ArrayLike) -> NDArray[np.float64]:
    """``scipy.stats.binom.pmf(k, n, p)`` for integer ``0 <= k <= n`` and ``0 <= p <= 1`` (broadcast)."""
    kk = np.asarray(k, dtype=np.int64)
    pp = np.asarray(p, dtype=np.float64)
    if n < 0 or (kk < 0).any() or (kk > n).any() or not ((pp >= 0) & (pp <= 1)).all():
        raise ValueError("binomial arguments out of range")
    nn = np.asarray(n)
    out: NDArray[np.float64] = np.clip(_ufunc("_binom_pmf")(kk, nn, pp), 0, 1)
    return out
