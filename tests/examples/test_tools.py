import pytest

from examples.support_agent import ORDERS, RefundRefused, SupportTools

LARGE = next(o for o in ORDERS if o.status == "delivered" and o.amount > 400)
SMALL = next(o for o in ORDERS if o.status == "delivered" and o.amount < 150)


def test_lookup_order_finds_known_orders_and_reports_unknown_ones():
    tools = SupportTools(200, False)
    found = tools.lookup_order(SMALL.order_id.lower())
    assert found["found"] is True and found["order_id"] == SMALL.order_id and found["amount"] == SMALL.amount
    assert tools.lookup_order("ORD-99999") == {"found": False, "order_id": "ORD-99999"}


def test_enforced_limit_refuses_amounts_above_it():
    tools = SupportTools(200, True)
    with pytest.raises(RefundRefused) as exc:
        tools.issue_refund(LARGE.order_id, 300)
    refused = exc.value.result
    assert refused["status"] == "refused" and "$200" in refused["reason"] and "$200" in str(exc.value)
    assert tools.refunded == {}
    ok = tools.issue_refund(LARGE.order_id, 200)
    assert ok["status"] == "refunded" and ok["amount"] == 200


def test_without_enforcement_the_tool_grants_amounts_above_the_limit():
    tools = SupportTools(200, False)
    result = tools.issue_refund(LARGE.order_id, 300)
    assert result["status"] == "refunded" and result["amount"] == 300
    assert tools.refunded[LARGE.order_id] == 300


def test_refunds_never_exceed_what_was_paid():
    tools = SupportTools(10_000, False)
    assert tools.issue_refund(SMALL.order_id, SMALL.amount)["status"] == "refunded"
    with pytest.raises(RefundRefused, match="exceed"):
        tools.issue_refund(SMALL.order_id, 1)
    with pytest.raises(RefundRefused, match="no such order"):
        tools.issue_refund("ORD-00000", 5)
    with pytest.raises(RefundRefused, match="positive"):
        tools.issue_refund(SMALL.order_id, 0)
    assert tools.refunded == {SMALL.order_id: SMALL.amount}


def test_escalation_returns_a_ticket():
    tools = SupportTools(200, False)
    result = tools.escalate_to_human("legal threat")
    assert result["status"] == "escalated" and result["ticket_id"].startswith("ESC-")
    assert tools.escalations == ["legal threat"]
