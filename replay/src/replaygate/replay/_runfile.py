"""The run file: one versioned JSON document per replay run.

It is the contract between the replay engine (which writes it) and the statistics, comparison and gate
(which read it). ``format_version`` changes whenever a field changes meaning.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from replaygate.replay._bounded import MAX_JSON_BYTES, read_text_bounded
from replaygate.replay._errors import RunFileError
from replaygate.replay._run_summary_model import RunSummary
from replaygate.replay._versioned import Upgrade, parse_versioned

__all__ = [
    "RUN_FORMAT_VERSION",
    "RUN_UPGRADES",
    "Attempt",
    "AttemptStatus",
    "AttemptsEditedError",
    "CheckResult",
    "ConversationTurn",
    "Fingerprint",
    "JudgeResult",
    "JudgeSpec",
    "Measures",
    "RetrievalScores",
    "RunFile",
    "ScenarioEntry",
    "attempt_digest",
    "attempt_json",
    "attempts_json",
    "bare_digest",
    "attempts_digest",
    "content_hash",
    "digest_of",
    "load_run",
    "save_atomic",
    "dump_run",
    "save_run",
    "write_atomic",
]

RUN_FORMAT_VERSION: Final = 1

AttemptStatus = Literal["pass", "fail", "error"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JudgeSpec(_Model):
    """How one judge was made: the registered factory's name and its (non-secret) arguments."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Fingerprint(_Model):
    """Everything that decides whether two runs can be compared.

    ``judges`` (judge slot -> :class:`JudgeSpec`) says how each judge was made, so any registered judge
    is rebuilt from the run; None in runs written before it was recorded, or when a judge was not made
    by ``create_judge``.
    """

    agent_config_hash: str
    declared_versions: dict[str, str] = Field(default_factory=dict)  # model, prompt, tools, index
    target: str
    code_commit: str | None = None
    judge_model: str | None = None
    judge_prompt_version: str | None = None
    replaygate_version: str
    suite_hash: str
    policy_hash: str | None = None
    tier: str | None = None
    k: int
    seed: int
    date: str  # ISO 8601 UTC, when the run started
    simulator: dict[str, Any] | None = None  # kind, model, prompt_version, temperature, seed (follow-ups)
    judges: dict[str, JudgeSpec] | None = None

    def config_id(self) -> str:
        """The configuration the run names: its declared ``config_id``, else its configuration's hash."""
        return str(self.declared_versions.get("config_id") or self.agent_config_hash)


class ScenarioEntry(_Model):
    """A scenario as it was when the run started (enough to compare runs without the YAML)."""

    id: str
    title: str = ""
    must_pass: bool = False
    threshold: float = 0.8
    repeats: int
    status: str = "active"
    counts: bool = True  # False: quarantined and not must-pass (reported, does not count)
    tags: dict[str, str] = Field(default_factory=dict)  # dimension, request_type, risk, free-form
    content_hash: str = ""


class CheckResult(_Model):
    """One deterministic check: ``detail`` says why it failed (the matching text, the missing tool)."""

    name: str
    passed: bool
    detail: str = ""


class JudgeResult(_Model):
    """One judge verdict; ``score`` in [0, 1]."""

    name: str
    score: float
    passed: bool
    detail: str = ""
    claims: list[dict[str, Any]] = Field(default_factory=list)


class RetrievalScores(_Model):
    """Retrieval metrics of one attempt against the scenario's labels."""

    k: int
    hit_rate: float
    mrr: float
    recall: float
    ndcg: float
    retrieved: int
    filtered: int | None = None
    threshold: float | None = None
    threshold_noop: bool = False


class Measures(_Model):
    """Guardrail measures of one attempt; ``cost_usd`` is None when a price is unknown (never 0)."""

    latency_s: float
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    escalated: bool = False
    empty: bool = False
    steps: int = 0
    llm_calls: int | None = None  # LLM calls captured (0: none was; None: not recorded, older run files)


class ConversationTurn(_Model):
    """One turn of an attempt's conversation: the user's message, the agent's answer and label.

    ``generated`` is true for a turn the simulated user wrote (false: a turn of the scenario).
    """

    user: str
    answer: str | None = None
    label: str | None = None
    generated: bool = False


class Attempt(_Model):
    """One of the k attempts at one scenario."""

    scenario_id: str
    index: int
    status: AttemptStatus
    error: str | None = None
    answer: str | None = None
    checks: list[CheckResult] = Field(default_factory=list)
    judges: list[JudgeResult] = Field(default_factory=list)
    retrieval: RetrievalScores | None = None
    measures: Measures
    attribution: Literal["retrieval", "generation"] | None = None
    trace_id: str | None = None
    artifact_path: str | None = None
    started: str = ""
    conversation: list[ConversationTurn] | None = None  # every turn, for scenarios with follow-ups


_ATTEMPT_LIST: TypeAdapter[list[Attempt]] = TypeAdapter(list[Attempt])


class RunFile(_Model):
    """A whole run: its fingerprint, the scenarios as they were, and every attempt."""

    format_version: Literal[1] = RUN_FORMAT_VERSION
    run_id: str
    fingerprint: Fingerprint
    scenarios: list[ScenarioEntry]
    attempts: list[Attempt]
    shard: str | None = None  # "i/n" when this file is one shard
    policy: dict[str, Any] | None = None  # the gate policy as parsed when the run started
    summary: RunSummary = Field(default_factory=RunSummary)  # summarize_attempts; older files: see RunSummary
    attempts_digest: str | None = None  # written by save_run; load_run refuses a file whose attempts differ

    def attempts_for(self, scenario_id: str) -> list[Attempt]:
        """Return the attempts of one scenario, in index order."""
        return sorted((a for a in self.attempts if a.scenario_id == scenario_id), key=lambda a: a.index)


def content_hash(obj: Any) -> str:
    """Return ``sha256:<hex>`` of the canonical JSON of ``obj`` (sorted keys, no spaces).

    Used for the suite hash, the gate-policy hash and configuration hashes, so every part hashes alike.
    """
    data = _CANONICAL.encode(obj)
    return "sha256:" + hashlib.sha256(data.encode("utf-8")).hexdigest()


#: ``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)``, made once
#: (``dumps`` with options builds an encoder per call).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def attempt_digest(attempt: Attempt) -> str:
    """The sha256 (hex) of one attempt's JSON, without its ``artifact_path`` (a best-effort pointer)."""
    text = attempt.model_dump_json(exclude={"artifact_path"})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_STARTED = ',"started":'
_PATH_FIELD = ',"artifact_path":'
_NEXT_ATTEMPT = '},{"scenario_id":'
_ATTEMPTS_OPEN = '"attempts": [\n'


def attempt_json(attempt: Attempt) -> tuple[str, str]:
    """The attempt's JSON (``model_dump_json()``) and its :func:`attempt_digest`, serialized once.

    The JSON without ``artifact_path`` is hashed: the full text with that field cut out (the field is
    followed by ``started``: only ``conversation``, whose turns have fixed keys, comes after, so the last
    ``,"artifact_path":`` is the attempt's own, and a string value holds no unescaped quote).
    """
    return _with_digest(attempt.model_dump_json())


#: How many attempts :func:`attempts_json` serializes in one call into pydantic.
_GROUP = 256


def attempts_json(attempts: Sequence[Attempt]) -> list[tuple[str, str]]:
    """:func:`attempt_json` of each attempt, serialized together (one call into pydantic for a group).

    The group's JSON array is cut where one attempt ends and the next begins (``},{"scenario_id":``);
    when that text occurs anywhere else too (inside a judge's claims, say), each attempt is serialized
    on its own instead. Either way each text is exactly the attempt's ``model_dump_json()``.
    """
    if len(attempts) > _GROUP:  # a few hundred at a time: one very long text costs more per attempt
        return [
            pair for i in range(0, len(attempts), _GROUP) for pair in attempts_json(attempts[i : i + _GROUP])
        ]
    if len(attempts) < 2 or any(type(a) is not Attempt for a in attempts):
        return [attempt_json(a) for a in attempts]
    parts = _ATTEMPT_LIST.dump_json(list(attempts)).decode("utf-8")[1:-1].split(_NEXT_ATTEMPT)
    if len(parts) != len(attempts):
        return [attempt_json(a) for a in attempts]
    head = _NEXT_ATTEMPT[2:]
    texts = [parts[0] + "}", *(f"{head}{p}}}" for p in parts[1:-1]), head + parts[-1]]
    return [_with_digest(text) for text in texts]


def _with_digest(text: str) -> tuple[str, str]:
    at = text.rfind(_PATH_FIELD)
    end = text.find(_STARTED, at)
    bare = text[:at] + text[end:]
    return text, hashlib.sha256(bare.encode("utf-8")).hexdigest()


def attempts_digest(digests: Iterable[str]) -> str:
    """``sha256:<hex>`` over a set of :func:`attempt_digest` values, in sorted order (order-free).

    The run file and its journal hold the same attempts in different orders; both give the same digest.
    """
    joined = "\n".join(sorted(digests))
    return "sha256:" + hashlib.sha256(joined.encode("ascii")).hexdigest()


def digest_of(run: RunFile, known: Mapping[tuple[str, int], tuple[Attempt, str]] | None = None) -> str:
    """The digest of a run's attempts as they are now (compare with ``run.attempts_digest``).

    ``known`` holds digests already made (by the journal), used only for the very attempt object.
    """
    cache = known or {}

    def one(a: Attempt) -> str:
        hit = cache.get((a.scenario_id, a.index))
        return hit[1] if hit is not None and hit[0] is a else attempt_digest(a)

    return attempts_digest(one(a) for a in run.attempts)


def _free_form(run: RunFile) -> Iterator[tuple[Any, int]]:
    """The run file's free-form values and their depths (root 0), for the nesting limit."""
    yield run.policy, 1
    yield run.fingerprint.simulator, 2
    for attempt in run.attempts:
        for judge in attempt.judges:
            for claim in judge.claims:
                yield claim, 6  # run > attempts > attempt > judges > judge > claims > claim


#: Older run-file layouts this replaygate reads, by version (none yet: version 1 is the first).
RUN_UPGRADES: Final[dict[int | None, Upgrade]] = {}


def bare_digest(text: str) -> str | None:
    """The :func:`attempt_digest` of an attempt from its JSON as written (``model_dump_json`` layout).

    The text without its ``artifact_path`` field is hashed; None when the field cannot be found. Equal to
    the recorded digest only for the very text that was hashed when the attempt was written.
    """
    i = text.rfind(',"artifact_path":')
    j = text.find(_STARTED, i) if i >= 0 else -1
    if j < 0:
        return None
    return hashlib.sha256((text[:i] + text[j:]).encode("utf-8")).hexdigest()


def _line_digests(text: str, count: int) -> list[str] | None:
    """The :func:`attempt_digest` of each attempt line of a run file as :func:`dump_run` lays it out.

    Hashes the lines as they are (without their ``artifact_path``) instead of serializing each attempt
    again; None when the text is not laid out that way (the caller then serializes each attempt).
    """
    at = text.rfind(_ATTEMPTS_OPEN)
    if at < 0:
        return None
    lines = text[at + len(_ATTEMPTS_OPEN) :].split("\n")
    body = [line.strip() for line in lines[:count]]
    if len(body) != count:
        return None
    digests = []
    for number, line in enumerate(body, start=1):
        digest = bare_digest(line[:-1] if number < count and line.endswith(",") else line)
        if digest is None:
            return None
        digests.append(digest)
    return digests


def load_run(path: str | os.PathLike[str]) -> RunFile:
    """Read a run file; a missing, unreadable, invalid or edited file raises :class:`RunFileError`.

    The attempts must match the digest recorded when the file was written: an attempt edited, added or
    removed afterwards is refused. Read in one pass (:func:`load_versioned`); the digest is checked
    on the attempt lines as written, and by serializing each attempt again only when those differ.
    """
    p = Path(path)
    text = read_text_bounded(p, what="run file", error=RunFileError, max_bytes=MAX_JSON_BYTES)
    run = parse_versioned(
        text,
        p,
        RunFile,
        version=RUN_FORMAT_VERSION,
        what="run file",
        error=RunFileError,
        upgrades=RUN_UPGRADES,
        free_form=_free_form,
    )
    if run.attempts_digest is None:
        raise RunFileError(
            f"{p}: the run file records no attempts digest (written by an older replaygate or edited); "
            "re-run it"
        )
    quick = _line_digests(text, len(run.attempts))
    if quick is not None and attempts_digest(quick) == run.attempts_digest:
        return run
    actual = digest_of(run)
    if actual != run.attempts_digest:
        raise AttemptsEditedError(p, run, actual)
    return run


class AttemptsEditedError(RunFileError):
    """A run file's attempts differ from the digest it recorded; ``run`` is the file as read.

    The gate names the edited attempts from the journal when one is beside the file (:meth:`naming`).
    """

    def __init__(self, path: Path, run: RunFile, actual: str, found: str = "") -> None:
        self.path, self.run, self.actual = path, run, actual
        super().__init__(
            f"{path}: the attempts were edited after the run: their digest is {actual}, the run recorded "
            f"{run.attempts_digest}{f'; {found}' if found else ''}; re-run it (a run file is evidence, "
            "not an input to edit)"
        )

    def naming(self, found: str) -> AttemptsEditedError:
        """The same refusal, saying what the journal found (``attempt a#1 differ from its journal X``)."""
        return AttemptsEditedError(self.path, self.run, self.actual, found)


def dump_run(
    run: RunFile,
    serialized: Mapping[tuple[str, int], tuple[Attempt, str]] | None = None,
    *,
    trust_digest: bool = False,
) -> str:
    """The run file's text: indented JSON, with the attempts last, one attempt per line (compact).

    ``serialized`` holds attempts already turned into JSON (by the journal), keyed by (scenario id, index);
    one is used only for the very attempt object it was made from. The attempts' digest is computed
    and written (``trust_digest``: the caller just computed ``run.attempts_digest`` itself).
    """
    known = serialized or {}
    if run.attempts_digest is None or not trust_digest:
        run = run.model_copy(update={"attempts_digest": digest_of(run)})
    lines: list[str] = []
    for attempt in run.attempts:
        cached = known.get((attempt.scenario_id, attempt.index))
        lines.append(cached[1] if cached is not None and cached[0] is attempt else attempt.model_dump_json())
    head = run.model_dump_json(indent=2, exclude={"attempts"})
    body = "[]" if not lines else "[\n    " + ",\n    ".join(lines) + "\n  ]"
    return f'{head[:-2]},\n  "attempts": {body}\n}}\n'


def save_run(
    run: RunFile,
    path: str | os.PathLike[str],
    *,
    serialized: Mapping[tuple[str, int], tuple[Attempt, str]] | None = None,
    trust_digest: bool = False,
) -> Path:
    """Write a run file atomically (temporary file, fsync, rename); see :func:`dump_run` for its layout."""
    return save_atomic(Path(path), dump_run(run, serialized, trust_digest=trust_digest))


def _umask() -> int:
    """The process's umask now (read from /proc, which does not change it; else set and restored)."""
    try:
        status = Path("/proc/self/status").read_text().splitlines()
        return int(next(x for x in status if x.startswith("Umask:")).split()[1], 8)
    except (OSError, StopIteration, ValueError, IndexError):
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


def _file_mode(path: Path) -> int:
    """The mode a replaced file keeps, or a new file gets (``open()``'s: 0666 less the umask)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return 0o666 & ~_umask()


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path``, fsync, and return the temporary path.

    The caller renames it into place (``os.replace``) — so several files can be prepared before any is
    replaced — and removes it on failure. The file gets the mode of the file it replaces, or, for a new
    file, the mode ``open()`` would give it (0666 less the umask).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _file_mode(path))  # mkstemp's 0600 would hide the file from teammates and CI
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def save_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (:func:`write_atomic`, then rename); return ``path``."""
    tmp = write_atomic(path, text)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
