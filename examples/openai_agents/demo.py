"""The adoption story end to end: instrument, trace production traffic, promote the trace, replay it."""

from __future__ import annotations

from pathlib import Path

import replaygate.instrumentation as ri
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from replaygate.instrumentation import TraceStore
from replaygate.replay import RunFile, run_suite_async

from examples.openai_agents.agent import respond, target
from examples.openai_agents.local_server import LocalOpenAI
from replaygate.golden import promote_trace

__all__ = ["QUESTION", "run_demo"]

QUESTION = "Where is my order ORD-1001?"


def _tool_check(run: RunFile) -> list[bool]:
    return [next(c.passed for c in a.checks if c.name == "expected_tools") for a in run.attempts]


async def run_demo(work: Path, *, repeats: int = 2) -> list[str]:
    """Run the story in ``work``; return what it prints (the tests read the same lines)."""
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument()  # the team's existing tracing, on the global tracer provider
    store = work / "traces.db"
    lines: list[str] = []
    try:
        with LocalOpenAI() as server:
            ri.configure(store=str(store), otlp_endpoint=False, langfuse=False, schedule_delay_s=0.05)
            answer = await respond(QUESTION, server.base_url, session_id="s-1")
            ri.shutdown(timeout=5)
            [record] = TraceStore(store).list_traces(limit=1)
            s = record.summary
            lines.append(f"production: {answer!r}")
            lines.append(
                f"  tools {[t.name for t in s.tool_calls]}, {len(s.llm_calls)} LLM calls "
                f"({', '.join(sorted({str(c.model) for c in s.llm_calls}))}), "
                f"tokens in {s.input_tokens} out {s.output_tokens}"
            )
            promotion = promote_trace(
                TraceStore(store), s.trace_id, work / "golden", owner="support-oncall", origin="near-miss"
            )
            scenario = promotion.scenario
            lines.append(f"promoted {s.trace_id[:12]} -> {promotion.path.name}")
            scenario = scenario.model_copy(update={"repeats": repeats})
            run = await run_suite_async(
                [scenario],
                target,
                {"base_url": server.base_url},
                out_path=work / "run.json",
                progress=False,
                code_commit=None,
            )
            passed = _tool_check(run)
            m = run.attempts[0].measures
            lines.append(
                f"replay: {[a.status for a in run.attempts]}, expected_tools {passed}, "
                f"tokens in {m.input_tokens} out {m.output_tokens}, cost ${m.cost_usd}"
            )
    finally:
        instrumentor.uninstrument()
    return lines
