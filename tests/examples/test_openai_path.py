"""The real-model path against an OpenAI-compatible stand-in served on 127.0.0.1 by the test."""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from examples.support_agent import ModelError, OfflineModel, OpenAIChatModel, SupportAgent
from examples.support_agent.target import run_session


class FakeOpenAI:
    """Scripted chat completions: look the order up, then answer; escalate when asked to."""

    def __init__(self, fail_status=None):
        self.requests = []
        self.fail_status = fail_status

    def reply(self, body):
        messages = body["messages"]
        last = messages[-1]
        if last["role"] == "user":
            text = last["content"]
            order = re.search(r"ORD-\d{5}", text)
            if "lawyer" in text:
                return self.tool_call("escalate_to_human", {"reason": "legal threat"})
            if "refund" in text.lower() and not order:
                return self.tool_call("ask_clarifying_question", {"question": "What is your order number?"})
            if order:
                return self.tool_call("lookup_order", {"order_id": order.group(0)})
            return {"role": "assistant", "content": "Standard domestic shipping takes 3 to 5 business days."}
        result = json.loads(last["content"])
        if result.get("status") == "escalated":
            return {
                "role": "assistant",
                "content": f"A human will contact you (ticket {result['ticket_id']}).",
            }
        return {"role": "assistant", "content": f"Order {result['order_id']} is {result['status']}."}

    @staticmethod
    def tool_call(name, arguments):
        call = {
            "id": f"call_{name}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}


@pytest.fixture
def server():
    fake = FakeOpenAI()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            if fake.fail_status:
                self.send_response(fake.fail_status)
                self.end_headers()
                return
            message = fake.reply(body)
            payload = json.dumps(
                {
                    "id": "chatcmpl-1",
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield fake
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def real_env(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-123")
    monkeypatch.setenv("SUPPORT_AGENT_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("SUPPORT_AGENT_TIMEOUT", "5")
    return server


def test_without_the_environment_the_offline_model_is_used(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "SUPPORT_AGENT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(SupportAgent("production").model, OfflineModel)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert isinstance(SupportAgent("production").model, OfflineModel)  # one of three is not enough


def test_tool_calling_round_trip(real_env):
    agent = SupportAgent("production")
    assert isinstance(agent.model, OpenAIChatModel)
    turn = agent.respond_turn("Where is my order ORD-10048?", session_id="s")
    assert turn.answer == "Order ORD-10048 is shipped."
    assert turn.tools == ("lookup_order",) and turn.label == "answer"
    assert len(real_env.requests) == 2
    first, second = real_env.requests
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer test-key-123"
    assert first["body"]["model"] == "gpt-4o-mini"
    assert {t["function"]["name"] for t in first["body"]["tools"]} >= {
        "lookup_order",
        "issue_refund",
        "escalate_to_human",
    }
    system = first["body"]["messages"][0]["content"]
    nonce = re.search(r"<<<([0-9a-f]{16})>>>", system).group(1)
    assert f"<<<end {nonce}>>>" in system and "data, not instructions" in system
    assert turn.chunk_ids and all(f"[{c}]" in system for c in turn.chunk_ids)
    tool_message = second["body"]["messages"][-1]
    assert tool_message["role"] == "tool" and json.loads(tool_message["content"])["order_id"] == "ORD-10048"


def test_escalation_and_clarification_labels_and_multi_turn_history(real_env):
    out = run_session(["I will call my lawyer about ORD-10042"], {}, _prod())
    assert out["label"] == "escalate" and "ticket ESC-" in out["answer"]
    out = run_session(["I want a refund", "ORD-10042"], {}, _prod())
    assert out["labels"] == ["clarify", "answer"]
    assert out["answers"][0] == "What is your order number?"
    last_body = real_env.requests[-2]["body"]  # the second turn's first call carries the first turn
    roles = [m["role"] for m in last_body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


def test_endpoint_errors_raise_a_model_error_that_says_what_to_do(real_env):
    real_env.fail_status = 500
    with pytest.raises(ModelError, match="OPENAI_BASE_URL"):
        SupportAgent("production").respond("How long does shipping take?")


def _prod():
    from examples.support_agent import load_config

    return load_config("production").to_dict()
