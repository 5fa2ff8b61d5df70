"""The openai SDK traced by OpenLLMetry's openai instrumentor in @trace_agent (instrumentor_case)."""

import importlib
import warnings
from collections.abc import Iterator
from pathlib import Path

import openai.resources.chat.completions as chat_completions
import pytest
import wrapt
from opentelemetry.instrumentation.utils import unwrap
from replaygate.instrumentation._trace_capture import global_provider

from tests.instrumentation import instrumentor_case as case


@pytest.fixture(scope="module", autouse=True)
def instrumented() -> Iterator[None]:
    with warnings.catch_warnings():  # the instrumentor's own import-time deprecation warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        instrumentor = importlib.import_module("opentelemetry.instrumentation.openai").OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=global_provider())
    case.SETTINGS["traced_tools"] = False  # tools run untraced: read from the model's tool calls
    with case.local_openai():
        yield
    instrumentor.uninstrument()
    # This version's uninstrument leaves the chat wrappers in place (its string-path unwrap misses them);
    # unwrap them by object so the next instrumentor's test sees only its own spans.
    for cls in (chat_completions.Completions, chat_completions.AsyncCompletions):
        while isinstance(cls.__dict__["create"], wrapt.FunctionWrapper):
            unwrap(cls, "create")


def test_store_trace_and_run_agree(tmp_path: Path) -> None:
    case.check_production_and_replay(tmp_path, expect_requested_tools=True)


def test_no_clear_text_over_otlp() -> None:
    case.check_no_clear_text_over_otlp()
