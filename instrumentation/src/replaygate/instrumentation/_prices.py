"""The price of one LLM call, from `genai-prices <https://github.com/pydantic/genai-prices>`_ when installed.

The one definition of an LLM call's cost: replay's measures, the canary and the exporters use it. An
unknown price is None, never 0: no model name, a missing token count, a model genai-prices does not
know, or genai-prices not installed (``pip install replaygate-instrumentation[prices]``; replaygate-replay
brings it). A cost the span itself carried wins.
"""

from __future__ import annotations

import importlib
from typing import Any

from replaygate.instrumentation._records import LlmCall

__all__ = ["call_cost", "load_prices"]

_MISSING: Any = object()
_module: Any = None


def load_prices() -> bool:
    """Import genai-prices (its price data takes a large share of a second); False when not installed."""
    global _module
    if _module is None:
        try:
            _module = importlib.import_module("genai_prices")
        except ImportError:
            _module = _MISSING
    return _module is not _MISSING


def call_cost(call: LlmCall) -> float | None:
    """The price in USD of one LLM call (the span's own cost when it carried one), or None when unknown."""
    if call.cost_usd is not None:
        return call.cost_usd
    if not call.model or call.input_tokens is None or call.output_tokens is None or not load_prices():
        return None
    usage = _module.Usage(input_tokens=call.input_tokens, output_tokens=call.output_tokens)
    attempts: list[str | None] = [call.provider, None] if call.provider else [None]
    for provider in attempts:
        try:
            price = _module.calc_price(usage, call.model, provider_id=provider)
        except LookupError:
            continue  # unknown provider id: retry by model name alone; unknown model: None
        return float(price.total_price)
    return None
