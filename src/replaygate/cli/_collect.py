"""``replaygate collect``: the OTLP/HTTP receiver in front of the store (see ``replaygate.collect``)."""

from __future__ import annotations

import click

from replaygate.cli._options import store_option

__all__ = ["register"]


@click.command("collect")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=4318, show_default=True, help="Port (4318 is OTLP/HTTP's).")
@store_option
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="File holding the bearer token [default: $REPLAYGATE_COLLECT_TOKEN].",
)
@click.option("--max-body-mb", type=click.IntRange(1, 512), default=16, show_default=True)
@click.option(
    "--max-inflight",
    type=click.IntRange(1, 64),
    default=4,
    show_default=True,
    help="Requests writing to the store at once, per worker; more wait, then get 429.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Worker processes (gunicorn); each decodes and writes on its own.",
)
@click.option(
    "--threads", type=click.IntRange(1, 256), default=8, show_default=True, help="Request threads per worker."
)
def collect_cmd(
    host: str,
    port: int,
    store: str | None,
    token_file: str | None,
    max_body_mb: int,
    max_inflight: int,
    workers: int,
    threads: int,
) -> None:
    """Receive OTLP/HTTP spans (and feedback) from agents on any machine and write them to the store.

    Served by gunicorn (SIGTERM stops it gracefully: requests in flight are answered first).
    """
    from pathlib import Path

    from replaygate.collect import serve_collect

    token = Path(token_file).read_text(encoding="utf-8").strip() if token_file else None
    serve_collect(
        host,
        port,
        store=store,
        token=token,
        workers=workers,
        threads=threads,
        announce=click.echo,
        max_body_bytes=max_body_mb << 20,
        max_inflight=max_inflight,
    )


def register(group: click.Group) -> None:
    """Add ``collect`` to the root group."""
    group.add_command(collect_cmd)
