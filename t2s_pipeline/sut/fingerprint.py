"""What system a run evaluated: the SUT fingerprint that the run id covers (SPEC §4).

Changing the service without touching the configuration must give a new run, never replace the
results of the old one. The fingerprint is the best identity each kind of SUT offers:

- ``builtin``: a hash of the built-in agent's source (its knobs are in the configuration);
- ``replay``: the replay file's SHA-256;
- ``http``: the ``version`` the health document reports; a service that reports none gets a
  per-run nonce, so two runs of it are never taken for the same run;
- ``python``: the function's module: its distribution's version and its source file's hash.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from t2s_pipeline.config import RunConfig
from t2s_pipeline.errors import SutError
from t2s_pipeline.sut.factory import http_client
from t2s_pipeline.sut.python import callable_fingerprint

_AGENT = Path(__file__).resolve().parent.parent / "agent"


def sut_fingerprint(config: RunConfig) -> str:
    """``kind:identity`` of the configuration's SUT (see the module docstring).

    >>> sut_fingerprint(RunConfig(name="x")).startswith("builtin:")
    True
    """
    sut = config.sut
    if sut.kind == "builtin":
        return f"builtin:{agent_version()}"
    if sut.kind == "replay":
        path = Path(sut.file or "")
        try:
            return f"replay:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"
        except OSError as error:
            raise SutError(f"cannot read the replay file {path}: {error.strerror}") from None
    if sut.kind == "python":
        targets = [t for t in (sut.callable, sut.retrieve) if t]
        try:
            return "python:" + "+".join(callable_fingerprint(t) for t in targets)
        except ImportError as error:
            raise SutError(f"cannot import the SUT's module: {error}") from None
    version = _reported_version(config)
    if version:
        return f"http:version:{version}"
    return f"http:nonce:{uuid.uuid4().hex[:16]}"


def agent_version() -> str:
    """The built-in agent's version: a hash of its source (what its health reports)."""
    return _source_hash(_AGENT)


def _source_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _reported_version(config: RunConfig) -> str | None:

    client = http_client(config, timeout_s=10.0)
    try:
        return client.health().version
    except SutError:
        return None  # unreachable now: the run gets a nonce, and fails on its own terms
    finally:
        client.close()
