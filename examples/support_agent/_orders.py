"""The order table the tools read: a few dozen orders of a small shop (ids like ``ORD-10042``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["ORDERS", "Order", "find_order", "orders_of"]

OrderStatus = Literal["processing", "shipped", "delivered", "cancelled"]


@dataclass(frozen=True)
class Order:
    """One order: who placed it, what it cost, where it is."""

    order_id: str
    user_id: str
    amount: float
    status: OrderStatus
    placed_on: str
    delivered_on: str | None
    item: str
    destination: Literal["domestic", "international"]

    def as_dict(self) -> dict[str, Any]:
        """Return the order as the JSON-able dict the ``lookup_order`` tool returns."""
        return asdict(self)


def _o(oid: int, user: int, amount: float, status: OrderStatus, placed: str, delivered: str | None,
       item: str, dest: Literal["domestic", "international"] = "domestic") -> Order:  # fmt: skip
    return Order(f"ORD-{oid}", f"u-{user}", amount, status, placed, delivered, item, dest)


ORDERS: tuple[Order, ...] = (
    _o(10031, 1001, 24.99, "delivered", "2026-10-02", "2026-10-06", "phone case"),
    _o(10037, 1002, 89.00, "delivered", "2026-10-05", "2026-10-09", "wireless earbuds"),
    _o(10042, 1003, 129.50, "delivered", "2026-10-11", "2026-10-15", "bluetooth speaker"),
    _o(10048, 1004, 45.00, "shipped", "2026-11-20", None, "usb-c charger"),
    _o(10053, 1005, 349.00, "delivered", "2026-10-18", "2026-10-22", "noise-cancelling headphones"),
    _o(10058, 1006, 612.40, "delivered", "2026-10-21", "2026-10-27", "tablet", "international"),
    _o(10061, 1007, 18.75, "processing", "2026-11-27", None, "screen protector"),
    _o(10066, 1008, 199.99, "delivered", "2026-11-01", "2026-11-05", "smart watch"),
    _o(10070, 1009, 275.00, "delivered", "2026-11-03", "2026-11-08", "mechanical keyboard"),
    _o(10077, 1010, 450.00, "delivered", "2026-11-04", "2026-11-07", "4k monitor"),
    _o(10081, 1011, 59.90, "shipped", "2026-11-24", None, "fitness band", "international"),
    _o(10085, 1012, 149.00, "delivered", "2026-11-06", "2026-11-10", "e-reader"),
    _o(10090, 1013, 229.00, "delivered", "2026-11-08", "2026-11-12", "robot vacuum"),
    _o(10094, 1014, 34.50, "cancelled", "2026-11-10", None, "cable set"),
    _o(10099, 1015, 1199.00, "delivered", "2026-11-11", "2026-11-14", "laptop"),
    _o(10103, 1016, 74.00, "delivered", "2026-11-12", "2026-11-16", "webcam"),
    _o(10108, 1017, 310.00, "shipped", "2026-11-25", None, "espresso machine"),
    _o(10112, 1018, 12.99, "delivered", "2026-11-13", "2026-11-17", "stylus"),
    _o(10117, 1019, 205.00, "delivered", "2026-11-14", "2026-11-19", "drawing tablet"),
    _o(10121, 1020, 160.00, "delivered", "2026-11-15", "2026-11-20", "router", "international"),
    _o(10126, 1001, 99.00, "delivered", "2026-11-16", "2026-11-20", "portable ssd"),
    _o(10130, 1003, 540.00, "delivered", "2026-11-17", "2026-11-21", "camera lens"),
    _o(10134, 1005, 65.00, "processing", "2026-11-28", None, "desk lamp"),
    _o(10139, 1008, 820.00, "delivered", "2026-11-18", "2026-11-23", "smartphone"),
)

_BY_ID = {o.order_id: o for o in ORDERS}


def find_order(order_id: str) -> Order | None:
    """Return the order with this id (case-insensitive), or None."""
    return _BY_ID.get(order_id.strip().upper())


def orders_of(user_id: str) -> tuple[Order, ...]:
    """Return every order placed by ``user_id``."""
    return tuple(o for o in ORDERS if o.user_id == user_id)
