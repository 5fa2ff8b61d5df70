"""The candidate's common random numbers of the minimum detectable drop, in half the memory, compared exactly.

The simulation reuses one uniform per (simulation, scenario, attempt) for every drop it tries. As
float64 they are 8 bytes each (80 MB for 200 simulations of 5,000 scenarios x k=10); here each keeps
the top 32 bits of the 64-bit word numpy's ``Generator.random`` makes it from. ``random`` returns
``u = (raw >> 11) / 2**53``, so ``u < q`` holds exactly when ``raw >> 11 < ceil(q * 2**53)``: the top
32 bits decide it unless they equal the threshold's, which happens about once in 2**32 comparisons. The
simulations of such a chunk are then counted again from the uniforms themselves, drawn again from the
generator's state saved before the chunk: every count is the count the float64 uniforms give.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["HeadDraws"]

_SHIFT = np.uint64(32)  # raw >> 32 is the top 32 bits of the 53-bit mantissa source raw >> 11
_LOW = np.uint64(21)  # the mantissa's bits below its top 32
_LOW_MASK = np.uint64((1 << 21) - 1)
_TOP_MAX = (1 << 32) - 1
_SCALE = float(2**53)
_UNIT = 1.0 / 9007199254740992.0  # numpy's next_double: (raw >> 11) * 2**-53


class HeadDraws:
    """``n_sims x S x k`` uniforms of one stream, as ``rng.random((chunk, S, k))`` draws them chunk by chunk.

    ``valid`` (S, k): the attempts each scenario has (None: all of them).
    """

    def __init__(
        self,
        rng: np.random.Generator,
        n_sims: int,
        scenarios: int,
        k: int,
        valid: NDArray[np.bool_] | None,
        chunk: int,
    ) -> None:
        self._kind = type(rng.bit_generator)
        self._valid = valid
        self._shape = (scenarios, k)
        self._chunks: list[tuple[int, int, Mapping[str, Any]]] = []
        self._top = np.empty((k, n_sims, scenarios), dtype=np.uint32)  # attempt-major: k flat comparisons
        for start in range(0, n_sims, chunk):
            rows = min(chunk, n_sims - start)
            self._chunks.append((start, rows, rng.bit_generator.state))
            raw = rng.bit_generator.random_raw(rows * scenarios * k).reshape(rows, scenarios, k)
            self._top[:, start : start + rows, :] = (raw >> _SHIFT).astype(np.uint32).transpose(2, 0, 1)
            del raw

    def counts(self, q: NDArray[np.float64], dtype: type[np.signedinteger]) -> NDArray[np.signedinteger]:
        """Per (simulation, scenario), how many of its attempts' uniforms are below ``q`` (S,)."""
        t = np.ceil(q * _SCALE).astype(np.uint64)  # u < q  <=>  (raw >> 11) < t
        t_top = t >> _LOW
        t_top32 = np.minimum(t_top, _TOP_MAX).astype(np.uint32)
        # an equal top half decides nothing when t has low bits (or is 2**53: q == 1)
        undecided_by_top = ((t & _LOW_MASK) != 0) | (t_top > _TOP_MAX)
        counts = np.zeros(self._top.shape[1:], dtype=dtype)
        open_rows = np.zeros(self._top.shape[1], dtype=bool)
        for j, column in enumerate(self._top):
            below = column < t_top32
            if self._valid is not None:
                below &= self._valid[:, j]
            counts += below
            equal = column == t_top32  # (about once in 2**32: look closer only then)
            if equal.any():
                open_rows |= (equal & undecided_by_top).any(axis=1)
        if open_rows.any():
            self._settle(q, counts, open_rows)
        return counts

    def _settle(
        self, q: NDArray[np.float64], counts: NDArray[np.signedinteger], open_rows: NDArray[np.bool_]
    ) -> None:
        """Count again, from the uniforms themselves, every chunk with an undecided comparison."""
        for start, rows, state in self._chunks:
            if not open_rows[start : start + rows].any():
                continue
            bit_generator = self._kind()
            bit_generator.state = state
            raw = bit_generator.random_raw(rows * self._shape[0] * self._shape[1])
            u = (raw.reshape(rows, *self._shape) >> np.uint64(11)) * _UNIT
            below = u < q[None, :, None]
            if self._valid is not None:
                below &= self._valid[None, :, :]
            counts[start : start + rows] = below.sum(axis=2)
