"""The price of one LLM call, from `genai-prices <https://github.com/pydantic/genai-prices>`_ when installed.

The one definition of an LLM call's cost: replay's measures, the canary and the exporters use it. An
unknown price is None, never 0: no model name, a missing token count, a model genai-prices does not
know, or genai-prices not installed (``pip install replaygate-instrumentation[prices]``; replaygate-replay
brings it). A cost the span itself carried wins.

A full genai-prices calculation costs a few hundred microseconds, and the exporters price every LLM span.
A model whose prices do not tier by volume costs ``base + a * input_tokens + b * output_tokens`` for a
call that reports only those two counts, so the three numbers are read from genai-prices once per model,
provider and hour (its prices change by date) and applied in the same decimal arithmetic; tiered models
are always computed in full.
"""

from __future__ import annotations

import importlib
import threading
import time
from decimal import Decimal
from typing import Any

from replaygate.instrumentation._records import LlmCall

__all__ = ["call_cost", "load_prices"]

_MISSING: Any = object()
_module: Any = None
_PROBE = 1_000_000  # tokens per probe: genai-prices' prices are per million tokens
_MAX_RATES = 4096


class _Rates:
    """How a (model, provider) is priced this hour: unknown, always in full, or linear coefficients."""

    __slots__ = ("base", "input", "output", "provider", "linear")

    def __init__(
        self, provider: str | None, linear: bool, base: Decimal, per_input: Decimal, per_output: Decimal
    ) -> None:
        self.provider = provider  # the provider id genai-prices found the model under (None: by model)
        self.linear = linear
        self.base, self.input, self.output = base, per_input, per_output


_UNKNOWN: Any = object()
_rates: dict[tuple[str, str | None, int], Any] = {}
_rates_lock = threading.Lock()


def load_prices() -> bool:
    """Import genai-prices (its price data takes a large share of a second); False when not installed."""
    global _module
    if _module is None:
        try:
            _module = importlib.import_module("genai_prices")
        except ImportError:
            _module = _MISSING
    return _module is not _MISSING


def _calc(model: str, provider: str | None, input_tokens: int, output_tokens: int) -> Any:
    usage = _module.Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    return _module.calc_price(usage, model, provider_id=provider)


def _resolve(model: str, provider: str | None) -> Any:
    """The rates of ``model`` (tried under ``provider``, then by model name alone), or ``_UNKNOWN``."""
    attempts: list[str | None] = [provider, None] if provider else [None]
    for candidate in attempts:
        try:
            zero = _calc(model, candidate, 0, 0)
        except LookupError:
            continue  # unknown provider id: retry by model name alone; unknown model: unknown
        tiered = any(isinstance(v, _module.types.TieredPrices) for v in vars(zero.model_price).values())
        if tiered:
            return _Rates(candidate, False, Decimal(0), Decimal(0), Decimal(0))
        base = zero.total_price
        per_input = (_calc(model, candidate, _PROBE, 0).total_price - base) / _PROBE
        per_output = (_calc(model, candidate, 0, _PROBE).total_price - base) / _PROBE
        return _Rates(candidate, True, base, per_input, per_output)
    return _UNKNOWN


def call_cost(call: LlmCall) -> float | None:
    """The price in USD of one LLM call (the span's own cost when it carried one), or None when unknown."""
    if call.cost_usd is not None:
        return call.cost_usd
    if not call.model or call.input_tokens is None or call.output_tokens is None or not load_prices():
        return None
    key = (call.model, call.provider, int(time.time() // 3600))
    rates = _rates.get(key)
    if rates is None:
        rates = _resolve(call.model, call.provider)
        with _rates_lock:
            if len(_rates) >= _MAX_RATES:
                _rates.clear()
            _rates[key] = rates
    if rates is _UNKNOWN:
        return None
    if rates.linear:
        return float(rates.base + rates.input * call.input_tokens + rates.output * call.output_tokens)
    return float(_calc(call.model, rates.provider, call.input_tokens, call.output_tokens).total_price)
