"""Spans of sync, async, generator, async-generator and nested agents, with their child spans."""

import asyncio
import inspect
import json
from typing import Any

import pytest
import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from replaygate.instrumentation import semconv as sc

DOCS = [
    {
        "id": "refund-policy#0",
        "score": 0.91,
        "text": "Refunds up to $200.",
        "metadata": {"section": "refunds"},
    },
    {"id": "refund-limits#1", "score": 0.55, "text": "Above $200 a human decides."},
]


class Doc:
    def __init__(self, id: str, score: float, text: str) -> None:
        self.id, self.score, self.text = id, score, text


def _work(message: str) -> str:
    with ri.retrieval(message, data_source="policies", threshold=0.3) as r:
        r.record(DOCS, filtered=3)
    with ri.tool_call("lookup_order", {"order_id": "ORD-10042"}, call_id="call-1") as t:
        t.set_result({"status": "shipped", "amount": 120})
    with ri.llm_call("gpt-4o-mini", provider="openai", input_messages=message) as llm:
        llm.set_usage(input_tokens=120, output_tokens=30)
        llm.set_response_model("gpt-4o-mini-2024-07-18")
        llm.set_output("Your refund is on its way.")
    return "Your refund is on its way."


def by_name(spans: Any, prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def check_children(spans: list[ReadableSpan]) -> None:
    (agent,) = by_name(spans, "invoke_agent")
    assert {s.context.trace_id for s in spans} == {agent.context.trace_id}
    children = [s for s in spans if s is not agent]
    assert {s.name for s in children} == {
        "retrieval policies",
        "execute_tool lookup_order",
        "chat gpt-4o-mini",
    }
    for child in children:
        assert child.parent is not None and child.parent.span_id == agent.context.span_id
    (ret,) = by_name(spans, "retrieval")
    attrs = ret.attributes or {}
    assert attrs[sc.OPERATION_NAME] == "retrieval" and attrs[sc.OI_SPAN_KIND] == "RETRIEVER"
    assert attrs[sc.RG_RETRIEVAL_THRESHOLD] == 0.3 and attrs[sc.RG_RETRIEVAL_FILTERED] == 3
    docs = json.loads(str(attrs[sc.RETRIEVAL_DOCUMENTS]))
    assert [(d["id"], d["score"], d["rank"]) for d in docs] == [
        ("refund-policy#0", 0.91, 1),
        ("refund-limits#1", 0.55, 2),
    ]
    assert attrs[sc.oi_document(0, sc.OI_DOCUMENT_ID)] == "refund-policy#0"
    assert attrs[sc.oi_document(1, sc.OI_DOCUMENT_SCORE)] == 0.55
    assert attrs[sc.oi_document(0, sc.OI_DOCUMENT_CONTENT)] == "Refunds up to $200."
    assert json.loads(str(attrs[sc.oi_document(0, sc.OI_DOCUMENT_METADATA)])) == {"section": "refunds"}
    (tool,) = by_name(spans, "execute_tool")
    tattrs = tool.attributes or {}
    assert tattrs[sc.TOOL_NAME] == "lookup_order" and tattrs[sc.TOOL_CALL_ID] == "call-1"
    assert json.loads(str(tattrs[sc.TOOL_CALL_ARGUMENTS])) == {"order_id": "ORD-10042"}
    assert json.loads(str(tattrs[sc.TOOL_CALL_RESULT])) == {"status": "shipped", "amount": 120}
    (llm,) = by_name(spans, "chat")
    lattrs = llm.attributes or {}
    assert lattrs[sc.USAGE_INPUT_TOKENS] == 120 and lattrs[sc.USAGE_OUTPUT_TOKENS] == 30
    assert lattrs[sc.REQUEST_MODEL] == "gpt-4o-mini" and lattrs[sc.PROVIDER_NAME] == "openai"
    assert lattrs[sc.RESPONSE_MODEL] == "gpt-4o-mini-2024-07-18"


def test_sync_agent(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent(name="support", version="1.2")
    def respond(message: str, session_id: str | None = None, user_id: str | None = None) -> str:
        """Answer a customer."""
        return _work(message)

    assert respond("where is my refund?", session_id="s-1", user_id="u-7") == "Your refund is on its way."
    spans = list(memory.get_finished_spans())
    check_children(spans)
    (agent,) = by_name(spans, "invoke_agent")
    attrs = agent.attributes or {}
    assert agent.name == "invoke_agent support"
    assert attrs[sc.AGENT_NAME] == "support" and attrs[sc.AGENT_VERSION] == "1.2"
    assert attrs[sc.OI_INPUT_VALUE] == "where is my refund?"
    assert json.loads(str(attrs[sc.INPUT_MESSAGES]))[0]["parts"][0]["content"] == "where is my refund?"
    assert attrs[sc.OI_OUTPUT_VALUE] == "Your refund is on its way."
    assert attrs[sc.CONVERSATION_ID] == attrs[sc.OI_SESSION_ID] == "s-1"
    assert attrs[sc.OI_USER_ID] == "u-7"
    assert tuple(attrs[sc.RG_FAILURE_REASONS]) == ()  # type: ignore[arg-type]
    # signature, docstring and inspect checks survive
    assert respond.__doc__ == "Answer a customer."
    assert list(inspect.signature(respond).parameters) == ["message", "session_id", "user_id"]
    assert not inspect.iscoroutinefunction(respond)


def test_one_trace_per_run(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent
    def respond(message: str) -> str:
        return _work(message)

    respond("a")
    respond("b")
    agents = by_name(memory.get_finished_spans(), "invoke_agent")
    assert len(agents) == 2 and agents[0].context.trace_id != agents[1].context.trace_id
    assert all(a.parent is None for a in agents)


def test_async_agent(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent(name="async-support")
    async def respond(question: str, conversation_id: str) -> str:
        await asyncio.sleep(0)
        return _work(question)

    assert inspect.iscoroutinefunction(respond)
    assert asyncio.run(respond("refund?", conversation_id="c-9")) == "Your refund is on its way."
    spans = list(memory.get_finished_spans())
    check_children(spans)
    (agent,) = by_name(spans, "invoke_agent")
    assert (agent.attributes or {})[sc.CONVERSATION_ID] == "c-9"
    assert (agent.attributes or {})[sc.OI_INPUT_VALUE] == "refund?"


def test_generator_agent(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent
    def stream(message: str) -> Any:
        _work(message)
        yield "Your refund "
        yield "is on its way."
        return "done"

    assert inspect.isgeneratorfunction(stream)
    gen = stream("refund?")
    assert memory.get_finished_spans() == ()  # nothing starts before iteration
    assert "".join(gen) == "Your refund is on its way."
    spans = list(memory.get_finished_spans())
    check_children(spans)
    (agent,) = by_name(spans, "invoke_agent")
    assert (agent.attributes or {})[sc.OI_OUTPUT_VALUE] == "Your refund is on its way."
    assert sc.RG_STREAM_CLOSED_EARLY not in (agent.attributes or {})


def test_generator_send_and_return_value(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent
    def echo(message: str) -> Any:
        got = yield "ready"
        yield f"got {got}"
        return "finished"

    gen = echo("hi")
    assert next(gen) == "ready"
    assert gen.send("x") == "got x"
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == "finished"
    (agent,) = memory.get_finished_spans()
    assert (agent.attributes or {})[sc.OI_OUTPUT_VALUE] == "readygot x"


def test_async_generator_agent(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent(name="astream")
    async def stream(message: str) -> Any:
        _work(message)
        for piece in ("Your refund ", "is on its way."):
            await asyncio.sleep(0)
            yield piece

    assert inspect.isasyncgenfunction(stream)

    async def consume() -> str:
        return "".join([piece async for piece in stream("refund?")])

    assert asyncio.run(consume()) == "Your refund is on its way."
    spans = list(memory.get_finished_spans())
    check_children(spans)
    (agent,) = by_name(spans, "invoke_agent")
    assert (agent.attributes or {})[sc.OI_OUTPUT_VALUE] == "Your refund is on its way."


def test_nested_agents_and_marks(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent(name="specialist")
    def specialist(message: str) -> str:
        ri.mark_failure("could not verify the order")
        return ""

    @ri.trace_agent(name="router")
    def router(message: str) -> str:
        ri.mark_escalation("customer is angry")
        ri.mark_clarification()
        inner = specialist(message)
        return inner or "A human will contact you."

    router("I want my money NOW")
    spans = memory.get_finished_spans()
    (outer,) = [s for s in spans if s.name == "invoke_agent router"]
    (inner,) = [s for s in spans if s.name == "invoke_agent specialist"]
    assert inner.parent is not None and inner.parent.span_id == outer.context.span_id
    assert inner.context.trace_id == outer.context.trace_id
    oattrs, iattrs = outer.attributes or {}, inner.attributes or {}
    assert tuple(oattrs[sc.RG_FAILURE_REASONS]) == ("escalation",)  # type: ignore[arg-type]
    assert oattrs[sc.RG_ESCALATION] is True and oattrs[sc.RG_ESCALATION_REASON] == "customer is angry"
    assert oattrs[sc.RG_CLARIFICATION] is True
    assert tuple(iattrs[sc.RG_FAILURE_REASONS]) == ("empty_answer", "explicit")  # type: ignore[arg-type]
    assert iattrs[sc.RG_FAILURE_REASON] == "could not verify the order"
    assert sc.RG_ESCALATION not in iattrs


def test_exception_propagates_unchanged_and_is_recorded(memory: InMemorySpanExporter) -> None:
    boom = ValueError("the order table is gone")

    @ri.trace_agent
    def respond(message: str) -> str:
        raise boom

    with pytest.raises(ValueError) as caught:
        respond("refund?")
    assert caught.value is boom
    (agent,) = memory.get_finished_spans()
    assert agent.status.status_code == StatusCode.ERROR
    assert "ValueError: the order table is gone" in (agent.status.description or "")
    assert any(e.name == "exception" for e in agent.events)
    assert tuple((agent.attributes or {})[sc.RG_FAILURE_REASONS]) == ("exception",)  # type: ignore[arg-type]


def test_stream_exception_propagates(memory: InMemorySpanExporter) -> None:
    boom = RuntimeError("model crashed")

    @ri.trace_agent
    async def stream(message: str) -> Any:
        yield "partial "
        raise boom

    async def consume() -> list[str]:
        return [p async for p in stream("x")]

    with pytest.raises(RuntimeError) as caught:
        asyncio.run(consume())
    assert caught.value is boom
    (agent,) = memory.get_finished_spans()
    assert agent.status.status_code == StatusCode.ERROR
    assert (agent.attributes or {})[sc.OI_OUTPUT_VALUE] == "partial "


def test_methods_classmethods_and_input_choice(memory: InMemorySpanExporter) -> None:
    class Agent:
        @ri.trace_agent(name="method")
        def respond(self, user_id: str, message: str, session_id: str | None = None) -> dict[str, Any]:
            return {"answer": f"hello {user_id}", "label": "greeting"}

        @classmethod
        @ri.trace_agent(name="classy")
        def build(cls, turns: list[str]) -> str:
            return "ok"

    agent = Agent()
    assert agent.respond("u-1", "hi there", session_id="s-2") == {"answer": "hello u-1", "label": "greeting"}
    assert Agent.build(["first", "second"]) == "ok"
    spans = {s.name: s.attributes or {} for s in memory.get_finished_spans()}
    method = spans["invoke_agent method"]
    assert method[sc.OI_INPUT_VALUE] == "hi there"  # the `message` parameter, not the first string
    assert method[sc.OI_USER_ID] == "u-1" and method[sc.OI_SESSION_ID] == "s-2"
    assert method[sc.OI_OUTPUT_VALUE] == "hello u-1"
    assert json.loads(str(spans["invoke_agent classy"][sc.OI_INPUT_VALUE])) == ["first", "second"]


def test_empty_answer_is_a_failure_reason(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent
    def respond(message: str) -> str:
        return "   "

    respond("hello")
    (agent,) = memory.get_finished_spans()
    assert tuple((agent.attributes or {})[sc.RG_FAILURE_REASONS]) == ("empty_answer",)  # type: ignore[arg-type]


def test_span_decorators(memory: InMemorySpanExporter) -> None:
    @ri.trace_retriever(data_source="kb")
    def search(query: str, k: int = 2) -> list[Doc]:
        return [Doc("a", 0.9, "alpha"), Doc("b", 0.4, "beta")][:k]

    @ri.trace_tool
    def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
        return {"refunded": amount}

    @ri.trace_llm(provider="openai")
    async def complete(model: str, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "model": "gpt-4o-mini-2024",
            "choices": [{"message": {"content": "done"}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 4},
        }

    @ri.trace_agent
    def respond(message: str) -> str:
        search(message)
        issue_refund("ORD-1", amount=50.0)
        return str(asyncio.run(complete("gpt-4o-mini", [{"role": "user", "content": message}]))["model"])

    respond("refund please")
    spans = {s.name: s.attributes or {} for s in memory.get_finished_spans()}
    docs = json.loads(str(spans["retrieval kb"][sc.RETRIEVAL_DOCUMENTS]))
    assert [(d["id"], d["rank"], d["content"]) for d in docs] == [("a", 1, "alpha"), ("b", 2, "beta")]
    assert spans["retrieval kb"][sc.RG_RETRIEVAL_QUERY] == "refund please"
    tool = spans["execute_tool issue_refund"]
    assert json.loads(str(tool[sc.TOOL_CALL_ARGUMENTS])) == {"order_id": "ORD-1", "amount": 50.0}
    assert json.loads(str(tool[sc.TOOL_CALL_RESULT])) == {"refunded": 50.0}
    llm = spans["chat gpt-4o-mini"]
    assert llm[sc.USAGE_INPUT_TOKENS] == 11 and llm[sc.USAGE_OUTPUT_TOKENS] == 4
    assert llm[sc.RESPONSE_MODEL] == "gpt-4o-mini-2024" and llm[sc.OI_OUTPUT_VALUE] == "done"


def test_tool_error_recorded_and_propagated(memory: InMemorySpanExporter) -> None:
    with pytest.raises(KeyError):
        with ri.tool_call("lookup_order", {"order_id": "nope"}):
            raise KeyError("nope")
    (tool,) = memory.get_finished_spans()
    assert tool.status.status_code == StatusCode.ERROR


def test_record_retrieval_and_current_trace_id(memory: InMemorySpanExporter) -> None:
    seen: list[str | None] = []

    @ri.trace_agent
    def respond(message: str) -> str:
        seen.append(ri.current_trace_id())
        ri.record_retrieval(message, DOCS, data_source="policies")
        return "ok"

    assert ri.current_trace_id() is None
    respond("q")
    (agent,) = by_name(memory.get_finished_spans(), "invoke_agent")
    assert seen == [format(agent.context.trace_id, "032x")]
    (ret,) = by_name(memory.get_finished_spans(), "retrieval")
    assert ret.parent is not None and ret.parent.span_id == agent.context.span_id


def test_marks_outside_an_agent_are_noops(memory: InMemorySpanExporter) -> None:
    ri.mark_escalation("x")
    ri.mark_failure("y")
    ri.mark_clarification()
    assert ri.annotate_agent({"replaygate.variant": "candidate"}) is False
    assert memory.get_finished_spans() == ()


def test_annotate_agent(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent
    def respond(message: str) -> str:
        with ri.tool_call("t"):
            assert ri.annotate_agent({sc.RG_VARIANT: "candidate", sc.RG_CONFIG_ID: "cfg-2"}) is True
        return "ok"

    respond("q")
    (agent,) = by_name(memory.get_finished_spans(), "invoke_agent")
    assert (agent.attributes or {})[sc.RG_VARIANT] == "candidate"
    assert (agent.attributes or {})[sc.RG_CONFIG_ID] == "cfg-2"


def test_stream_argument_errors_raise_at_call_time(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent
    def stream(message: str) -> Any:
        yield message

    @ri.trace_agent
    async def astream(message: str) -> Any:
        yield message

    with pytest.raises(TypeError):
        stream()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        astream("a", "b")  # type: ignore[call-arg]
    assert memory.get_finished_spans() == ()
