"""The openai SDK traced by openinference-instrumentation-openai in @trace_agent (instrumentor_case)."""

import importlib
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from replaygate.instrumentation._trace_capture import global_provider

from tests.instrumentation import instrumentor_case as case


@pytest.fixture(scope="module", autouse=True)
def instrumented() -> Iterator[None]:
    with warnings.catch_warnings():  # the instrumentor's own import-time deprecation warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        instrumentor = importlib.import_module("openinference.instrumentation.openai").OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=global_provider())
    case.SETTINGS["traced_tools"] = False  # tools run untraced: read from the model's tool calls
    with case.local_openai():
        yield
    instrumentor.uninstrument()


def test_store_trace_and_run_agree(tmp_path: Path) -> None:
    case.check_production_and_replay(tmp_path, expect_requested_tools=True)


def test_no_clear_text_over_otlp() -> None:
    case.check_no_clear_text_over_otlp()
