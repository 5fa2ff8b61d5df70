"""The knowledge base: a dozen policy documents with stable ids, split into chunks ``<doc id>#<n>``.

Each paragraph of a document is one chunk. The text is what the agent quotes, so every amount and
duration an answer states comes from here (a grounded answer) or is a planted ungrounded claim.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DOCUMENTS", "INDEX_VERSION", "Document", "KbChunk", "chunk_documents", "document"]

#: Bump when the documents or the chunking change; recorded as ``retrieval_index_version``.
INDEX_VERSION = "kb-2026.11-v1"


@dataclass(frozen=True)
class Document:
    """One policy document: a stable id, a title and paragraphs (one chunk each)."""

    id: str
    title: str
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class KbChunk:
    """One chunk of a document, with the document's id and title."""

    id: str
    doc_id: str
    title: str
    text: str


DOCUMENTS: tuple[Document, ...] = (
    Document(
        "refund-policy",
        "Refund policy",
        (
            "Refunds go back to the original payment method. Once approved, a refund reaches the original "
            "payment method within 5 to 7 business days.",
            "Refunds are available for delivered orders and for orders cancelled before shipping. Shipping "
            "fees are refunded only when the item arrived damaged or we sent the wrong item.",
        ),
    ),
    Document(
        "refund-limits",
        "Refund limits and approval",
        (
            "A support agent can approve a refund of up to $200 per order. A refund can never exceed the "
            "amount paid for the order.",
            "Any refund above $200 must be approved by a human supervisor: the request is escalated and a "
            "supervisor answers within 1 business day.",
        ),
    ),
    Document(
        "shipping-domestic",
        "Domestic shipping",
        (
            "Standard domestic shipping takes 3 to 5 business days. Express shipping takes 1 to 2 business "
            "days and costs $12.99.",
            "Orders over $50 ship free with standard shipping. Orders placed before 2 pm ship the same day, "
            "and a tracking number is emailed when the parcel leaves the warehouse.",
        ),
    ),
    Document(
        "shipping-international",
        "International shipping",
        (
            "International shipping is available to 40 countries and takes 7 to 14 business days. "
            "International orders cannot be sent by express shipping.",
            "Customs duties and import taxes for international orders are paid by the recipient on delivery.",
        ),
    ),
    Document(
        "returns-window",
        "Returns window",
        (
            "Items can be returned within 30 days of delivery. Returned items must be unused and in their "
            "original packaging.",
            "Return shipping labels are free for domestic orders. A returned item is inspected within 3 "
            "business days of arrival, and then the refund is issued.",
        ),
    ),
    Document(
        "returns-damaged",
        "Damaged or defective items",
        (
            "If an item arrives damaged or defective, report it within 14 days of delivery with a photo. "
            "We send a free replacement or issue a full refund, shipping fees included.",
            "Damaged items worth less than $25 do not need to be returned.",
        ),
    ),
    Document(
        "account-password",
        "Password reset and sign-in",
        (
            "To reset your password, choose Forgot password on the sign-in page and follow the link we "
            "email you. The reset link is valid for 60 minutes.",
            "After 5 failed sign-in attempts the account is locked for 30 minutes. Support agents never ask "
            "for your password.",
        ),
    ),
    Document(
        "account-delete",
        "Deleting an account",
        (
            "You can delete your account under Settings, Privacy, Delete account. Deletion becomes "
            "permanent after a 14-day grace period, and signing in during that period cancels the request.",
            "Order history is kept for 7 years for tax purposes, even after the account is deleted.",
        ),
    ),
    Document(
        "payment-methods",
        "Payment methods",
        (
            "We accept Visa, Mastercard, American Express, PayPal and gift cards. Payment is taken when the "
            "order ships.",
            "Gift cards cannot be used to buy other gift cards, and cash on delivery is not available.",
        ),
    ),
    Document(
        "order-cancellation",
        "Cancelling an order",
        (
            "An order can be cancelled free of charge until it ships, usually within 2 hours of being "
            "placed. Cancelled orders are refunded in full.",
            "Once an order has shipped it cannot be cancelled, but it can be returned under the returns "
            "policy.",
        ),
    ),
    Document(
        "warranty",
        "Warranty",
        (
            "Electronics carry a 1-year limited warranty from the delivery date. The warranty covers "
            "manufacturing defects, not accidental damage or normal wear.",
            "To make a warranty claim, contact support with your order number and a description of the "
            "fault; a repair or a replacement is arranged within 10 business days.",
        ),
    ),
    Document(
        "escalation-policy",
        "Escalation to a human agent",
        (
            "A conversation is handed to a human agent when the customer mentions legal action, a chargeback "
            "or a formal complaint, when the customer is very upset, or when a refund above $200 is "
            "requested.",
            "A human agent replies within 1 business day. The assistant must not argue about legal matters "
            "or promise compensation.",
        ),
    ),
)


def chunk_documents(documents: tuple[Document, ...] = DOCUMENTS) -> tuple[KbChunk, ...]:
    """Split documents into chunks, one per paragraph, with ids ``<doc id>#<paragraph index>``."""
    return tuple(
        KbChunk(id=f"{doc.id}#{i}", doc_id=doc.id, title=doc.title, text=para)
        for doc in documents
        for i, para in enumerate(doc.paragraphs)
    )


def document(doc_id: str) -> Document:
    """Return the document with this id (KeyError naming the known ids when there is none)."""
    for doc in DOCUMENTS:
        if doc.id == doc_id:
            return doc
    raise KeyError(f"no knowledge-base document {doc_id!r}; known: {', '.join(d.id for d in DOCUMENTS)}")
