"""One chat-completions call to an OpenAI-compatible endpoint: what the LLM judge and the simulator share.

``post_chat(base_url, body, ...)`` POSTs ``body`` to ``{base_url}/chat/completions`` (a bearer token when
given), bounded by ``timeout_s``, and returns the first choice's message content (a JSON value re-encoded
as text; the raw body when the answer is not a chat completion, so the caller's schema check fails and it
retries). Every transport failure raises the caller's error class with a message naming ``who`` and the
URL. ``fence(text, nonce)`` wraps untrusted text (answers, documents, conversation turns) between markers
carrying a per-call nonce, so the text cannot close the fence itself.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["fence", "post_chat"]


def fence(text: str, nonce: str) -> str:
    """``text`` between ``<<<UNTRUSTED-nonce`` and ``UNTRUSTED-nonce>>>`` lines."""
    return f"<<<UNTRUSTED-{nonce}\n{text}\nUNTRUSTED-{nonce}>>>"


async def post_chat(
    base_url: str,
    body: dict[str, Any],
    *,
    api_key: str | None,
    timeout_s: float,
    who: str,
    error: type[Exception],
) -> str:
    """The message content of one chat completion; transport failures raise ``error`` naming ``who``."""
    import httpx  # loaded when a judge or simulator is made: importing replaygate.replay does not pay for it

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = f"{base_url}/chat/completions"
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.post(url, json=body, headers=headers)
            response.raise_for_status()
    except httpx.TimeoutException:
        raise error(f"{who}: {url} did not answer within {timeout_s:g} s") from None
    except httpx.HTTPStatusError as exc:
        raise error(
            f"{who}: {url} answered HTTP {exc.response.status_code}: {exc.response.text[:200]!r}"
        ) from None
    except httpx.HTTPError as exc:
        raise error(f"{who}: cannot reach {url}: {exc}") from None
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return response.text  # not a chat completion: validation fails and the call is retried once
    return content if isinstance(content, str) else json.dumps(content)
