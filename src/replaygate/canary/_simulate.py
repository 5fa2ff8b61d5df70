"""Simulated live traffic for the demo and the tests: route, serve, record, check, widen.

Each simulated request picks a user, asks :func:`replaygate.instrumentation._routing.choose_variant` which
variant serves it (sticky by user), and runs a fast synthetic agent of that variant's
:class:`TrafficProfile` that emits real OpenTelemetry spans (an agent span with the variant and config id,
and an LLM span with model and tokens) into the trace store; some answers later get negative feedback.
Between batches the controller checks the step (a breach rolls back automatically) and widens when the
evidence holds. It points the process-wide routing client (``configure_routing``) at the controller's
store: run it in its own process, not inside a production agent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from replaygate.instrumentation import (
    StoreSpanExporter,
    TraceStore,
    Variant,
    choose_variant,
    configure_routing,
)
from replaygate.instrumentation import semconv as sc

from replaygate.canary._control import CanaryController
from replaygate.canary._machine import Transition

__all__ = ["SimulationReport", "TrafficProfile", "simulate_live_traffic"]


@dataclass(frozen=True)
class TrafficProfile:
    """How a synthetic variant behaves: failure rates, median latency, model and tokens."""

    error_rate: float = 0.01
    empty_rate: float = 0.01
    escalation_rate: float = 0.10
    negative_feedback_rate: float = 0.02
    latency_s: float = 0.8
    model: str = "gpt-4o-mini"
    provider: str = "openai"
    input_tokens: int = 600
    output_tokens: int = 150

    def planted(self, **changes: float) -> TrafficProfile:
        """A copy with some rates shifted, e.g. ``planted(escalation_rate=+0.10)``."""
        values = {name: getattr(self, name) + delta for name, delta in changes.items()}
        return TrafficProfile(**{**self.__dict__, **values})


@dataclass(frozen=True)
class SimulationReport:
    """What happened: requests served, batches, every applied transition, and the final state."""

    seed: int
    requests: int
    batches: int
    candidate_requests: int
    final_status: str
    final_share: float
    transitions: tuple[Transition, ...] = field(default=())

    @property
    def rolled_back(self) -> bool:
        """Whether the canary ended rolled back."""
        return self.final_status == "rolled_back"

    @property
    def rollback_reason(self) -> str | None:
        """The reason of the rollback, when there was one."""
        for t in self.transitions:
            if t.action == "rollback" and t.changed:
                return t.reason
        return None


_QUESTIONS = (
    "Where is my order?",
    "Can I get a refund for a damaged item?",
    "How do I change my delivery address?",
    "My invoice shows a wrong amount.",
)


def _serve(
    tracer: object,
    rng: np.random.Generator,
    variant: Variant,
    profile: TrafficProfile,
    user: str,
    agent_name: str,
) -> tuple[str, bool]:
    from opentelemetry.trace import Tracer

    assert isinstance(tracer, Tracer)
    question = _QUESTIONS[int(rng.integers(len(_QUESTIONS)))]
    latency_ns = int(rng.lognormal(np.log(profile.latency_s), 0.3) * 1e9)
    start = time.time_ns()
    draw = rng.random(4)
    span = tracer.start_span(f"invoke_agent {agent_name}", start_time=start)
    span.set_attribute(sc.OPERATION_NAME, "invoke_agent")
    span.set_attribute(sc.AGENT_NAME, agent_name)
    span.set_attribute(sc.OI_USER_ID, user)
    span.set_attribute(sc.OI_INPUT_VALUE, question)
    span.set_attribute(sc.RG_VARIANT, variant.name)
    if variant.config_id is not None:
        span.set_attribute(sc.RG_CONFIG_ID, variant.config_id)
    from opentelemetry.trace import set_span_in_context

    llm = tracer.start_span("chat", context=set_span_in_context(span), start_time=start + 1000)
    llm.set_attribute(sc.OPERATION_NAME, "chat")
    llm.set_attribute(sc.REQUEST_MODEL, profile.model)
    llm.set_attribute(sc.PROVIDER_NAME, profile.provider)
    llm.set_attribute(sc.USAGE_INPUT_TOKENS, profile.input_tokens)
    llm.set_attribute(sc.USAGE_OUTPUT_TOKENS, profile.output_tokens)
    llm.end(end_time=start + max(2000, latency_ns - 1000))
    if draw[0] < profile.error_rate:
        span.set_status(Status(StatusCode.ERROR, "TimeoutError: tool backend timed out"))
        span.add_event(
            "exception", {"exception.type": "TimeoutError", "exception.message": "backend timed out"}
        )
    else:
        answer = "" if draw[1] < profile.empty_rate else f"Here is what I found about: {question}"
        if draw[2] < profile.escalation_rate:
            span.set_attribute(sc.RG_ESCALATION, True)
            span.set_attribute(sc.RG_ESCALATION_REASON, "handed to a human agent")
            answer = answer or "I am handing you over to a colleague."
        span.set_attribute(sc.OI_OUTPUT_VALUE, answer)
    span.end(end_time=start + latency_ns)
    trace_id = format(span.get_span_context().trace_id, "032x")
    return trace_id, bool(draw[3] < profile.negative_feedback_rate)


def simulate_live_traffic(
    controller: CanaryController,
    *,
    baseline: TrafficProfile | None = None,
    candidate: TrafficProfile | None = None,
    batches: int = 30,
    batch_size: int = 300,
    users: int = 20_000,
    seed: int = 0,
    promote: bool = False,
    actor: str = "simulator",
    agent_name: str = "support-agent",
    on_batch: Callable[[int, CanaryController], None] | None = None,
) -> SimulationReport:
    """Serve ``batches × batch_size`` simulated requests through the canary, checking between batches.

    Stops when the canary is rolled back, reaches the plan's last step (promoting it when ``promote``),
    or the batches run out. The canary must be running (``controller.start``) beforehand.
    """
    baseline = baseline or TrafficProfile()
    candidate = candidate or TrafficProfile()
    rng = np.random.default_rng(seed)
    store_url = controller.store.url
    client = configure_routing(store_url, refresh_s=3600.0)
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("replaygate.canary.simulate")
    exporter = StoreSpanExporter(store_url)
    traces = TraceStore(store_url)
    transitions: list[Transition] = []
    served = candidate_served = 0
    done = 0
    try:
        for done in range(1, batches + 1):
            client.refresh()
            negative: list[str] = []
            for _ in range(batch_size):
                user = f"user-{int(rng.integers(users))}"
                variant = choose_variant(user, annotate=False)
                profile = candidate if variant.is_candidate else baseline
                trace_id, unhappy = _serve(tracer, rng, variant, profile, user, agent_name)
                served += 1
                candidate_served += int(variant.is_candidate)
                if unhappy:
                    negative.append(trace_id)
            spans = memory.get_finished_spans()
            memory.clear()
            exporter.export(list(spans))
            for trace_id in negative:
                traces.record_feedback(trace_id, -1.0, "simulated: not helpful")
            if on_batch is not None:
                on_batch(done, controller)
            result = controller.check(actor=actor)
            if result.rollback is not None and result.rollback.changed:
                transitions.append(result.rollback)
                break
            state = result.status.state
            if state.status != "canary":
                break
            if state.at_final_step:
                if promote:
                    transitions.append(
                        controller.promote(actor=actor, reason="simulation: last step reached")
                    )
                break
            evidence = result.status.evidence
            if evidence is not None and evidence.can_widen:
                t = controller.widen(actor=actor, reason="simulation: evidence holds", status=result.status)
                if t.changed:
                    transitions.append(t)
    finally:
        exporter.shutdown()
        traces.close()
        provider.shutdown()
    final = controller.state()
    return SimulationReport(
        seed=seed,
        requests=served,
        batches=done,
        candidate_requests=candidate_served,
        final_status=final.status,
        final_share=final.share,
        transitions=tuple(transitions),
    )
