"""SUT configurations (``configs/*.yaml``): one evaluation run partition each.

The run id is ``<name>-<hash8>``, the hash covering the configuration's content and the gold
case set's hash, so changing either yields a new, comparable partition and an old run is never
overwritten by a different experiment.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import string
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from t2s_pipeline.errors import ConfigError, SutError
from t2s_pipeline.sut.contract import FieldNames
from t2s_pipeline.sut.http import expand_extra

# Run names are partition keys, not SQL: a regular expression is the right tool.
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,54}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SutPaths(_Strict):
    """Endpoint paths of an HTTP SUT; ``retrieve: null`` when it has no probe endpoint."""

    ask: str = "/v1/ask"
    retrieve: str | None = "/v1/retrieve"
    health: str = "/v1/health"


class SutSettings(_Strict):
    kind: Literal["builtin", "http", "replay", "python"] = "builtin"
    url: str | None = None
    file: str | None = None
    # Adapters for a service built to its own contract (kind http; fields also kind python).
    paths: SutPaths = SutPaths()
    fields: dict[str, str] = {}
    """Contract field -> the service's name or dotted path (``sql: data.query.text``)."""
    headers: dict[str, str] = {}
    """Sent with every request; ``${ENV_VAR}`` is read from the environment at run time, so
    the secret is never in the file, the run registry or the logs."""
    extra: dict[str, Any] = {}
    """Added to every request body; ``{as_of}``, ``{dialect}``, ``{domain}``, ``{run_id}``."""
    probe: bool = True
    """``false``: the service has no retriever endpoint; items count under ``no_probe``."""
    # kind python: an in-process function (t2s_pipeline.sut.python).
    callable: str | None = None
    retrieve: str | None = None
    supports_exclusions: bool = False
    isolate: bool = True
    isolation: Literal["require", "warn"] = "require"
    """With ``isolate``: any not_isolated item fails the run before scoring (``warn``: counted
    and warned about, the run goes on)."""
    # The built-in agent's knobs (kind builtin only); each is part of the run id.
    generation: Literal["schema_linking", "nearest_example"] = "schema_linking"
    tables_k: int = Field(default=4, ge=1)
    examples_k: int = Field(default=3, ge=1)
    use_comments: bool = True
    use_examples: bool = True
    date_windows: Literal["calendar", "rolling"] = "calendar"


BUILTIN_KNOBS = (
    "generation",
    "tables_k",
    "examples_k",
    "use_comments",
    "use_examples",
    "date_windows",
)


class ScorerSettings(_Strict):
    tau: float = Field(default=0.25, ge=0.0, le=1.0)
    float_decimals: int = Field(default=6, ge=0, le=15)
    shelf_bound: int = Field(default=512, ge=1)
    ordered_compare: Literal["auto"] | bool = "auto"
    """Row order matters: ``auto`` exactly when the gold's outermost query has ORDER BY
    (SPEC 8, as Spider's evaluator does); ``true`` always; ``false`` never."""
    permutation_bound: int = Field(default=5040, ge=1)
    eval_row_cap: int = Field(default=100_000, ge=1)
    stored_rows: int = Field(default=200, ge=0)


class ClientSettings(_Strict):
    concurrency: int = Field(default=4, ge=1, le=256)
    timeout_s: float = Field(default=30.0, gt=0)
    max_attempts: int = Field(default=4, ge=1)


class JudgeSettings(_Strict):
    enabled: bool = False
    api: Literal["anthropic", "openai"] = "openai"
    base_url: str | None = None
    model: str | None = None
    key_env: str | None = None
    agreement_floor: float = Field(default=0.7, ge=0.0, le=1.0)


class TestSuiteSettings(_Strict):
    """Test-suite accuracy (``ex_ts``): EX also on the distilled neighbours of the snapshot."""

    __test__ = False  # not a pytest class

    enabled: bool = False
    seed: int = Field(default=0, ge=0)
    random_neighbours: int = Field(default=8, ge=0, le=64)
    """How many random neighbours the pool holds (three boundary neighbours are always made)."""


class RunConfig(_Strict):
    """One configuration of the system under test."""

    name: str
    cases: str = "cases/erp"
    sut: SutSettings = SutSettings()
    labels: dict[str, str | int | float | bool] = {}
    phrasings: Literal["all", "main"] = "all"
    scorer: ScorerSettings = ScorerSettings()
    client: ClientSettings = ClientSettings()
    judge: JudgeSettings = JudgeSettings()
    test_suite: TestSuiteSettings = TestSuiteSettings()
    compare_to: str | None = Field(default=None, pattern=r"^[a-z0-9-]+$")
    """The baseline (SPEC 13): a run id, or a configuration name meaning its latest finished
    run on the same cases. Unset: the champion of the case set (``t2s promote``)."""

    def config_hash(self) -> str:
        """SHA-256 of the configuration's canonical JSON (an unset ``compare_to`` and a
        default ``test_suite`` are left out, so configurations written before them keep their
        run ids)."""
        data = self.model_dump(mode="json")
        if data.get("compare_to") is None:
            data.pop("compare_to", None)
        if data.get("test_suite") == TestSuiteSettings().model_dump(mode="json"):
            data.pop("test_suite", None)
        text = json.dumps(data, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def run_id(self, case_set_hash: str, sut_fingerprint: str = "") -> str:
        """The partition key of this configuration against one gold case set and one SUT
        (``sut_fingerprint``, see :mod:`t2s_pipeline.sut.fingerprint`).

        >>> RunConfig(name="baseline").run_id("0" * 64)[:9]
        'baseline-'
        """
        key = f"{self.config_hash()}:{case_set_hash}"
        if sut_fingerprint:
            key += f":{sut_fingerprint}"
        digest = hashlib.sha256(key.encode()).hexdigest()
        return f"{self.name}-{digest[:8]}"


def load_config(path: Path | str) -> RunConfig:
    """Read and validate one configuration file; errors name the file, field and fix."""
    path = Path(path)
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ConfigError(f"{path}: no such configuration file") from error
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({error}). Fix the YAML syntax") from error
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping with at least 'name:'")
    data.setdefault("name", path.stem)
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ConfigError(
            f"{path}: field '{field}': {first['msg']}. Fix: see configs/baseline.yaml for the "
            "accepted fields and values"
        ) from error
    if not _NAME.match(config.name):
        raise ConfigError(
            f"{path}: field 'name': {config.name!r} is not [a-z0-9-] (max 55). "
            "Fix: use lower-case letters, digits and dashes"
        )
    _check_sut(path, config.sut)
    if config.judge.enabled and not config.judge.model:
        raise ConfigError(
            f"{path}: field 'judge.model': required when the judge is enabled. Fix: add model:"
        )
    return config


def _check_sut(path: Path, sut: SutSettings) -> None:
    knobs = sorted(set(BUILTIN_KNOBS) & sut.model_fields_set)
    if sut.kind != "builtin" and knobs:
        raise ConfigError(
            f"{path}: field 'sut.{knobs[0]}': only the built-in agent has it, this SUT is kind "
            f"{sut.kind}. Fix: remove {', '.join(knobs)} or use kind: builtin"
        )
    if sut.kind == "http" and not sut.url:
        raise ConfigError(f"{path}: field 'sut.url': required for kind http. Fix: add url:")
    if sut.kind == "replay" and not sut.file:
        raise ConfigError(f"{path}: field 'sut.file': required for kind replay. Fix: add file:")
    if sut.kind == "python" and not sut.callable:
        raise ConfigError(
            f"{path}: field 'sut.callable': required for kind python. "
            "Fix: add callable: package.module:function"
        )
    owners = {
        "url": ("http",),
        "file": ("replay",),
        "paths": ("http",),
        "headers": ("http",),
        "extra": ("http",),
        "probe": ("http",),
        "fields": ("http", "python"),
        "callable": ("python",),
        "retrieve": ("python",),
        "supports_exclusions": ("python",),
    }
    for option, kinds in owners.items():
        if option in sut.model_fields_set and sut.kind not in kinds:
            raise ConfigError(
                f"{path}: field 'sut.{option}': only kind {' or '.join(kinds)} has it, this SUT "
                f"is kind {sut.kind}. Fix: remove {option} or use kind: {kinds[0]}"
            )
    _check_adapters(path, sut)


def _check_adapters(path: Path, sut: SutSettings) -> None:
    """The adapter options are usable: known roles, valid placeholders, ${VAR} syntax."""

    try:
        FieldNames.from_mapping(sut.fields)
    except SutError as error:
        raise ConfigError(f"{path}: field 'sut.fields': {error}") from None
    try:
        expand_extra(sut.extra, None, "")
    except SutError as error:
        raise ConfigError(f"{path}: field 'sut.extra': {error}") from None
    for name, value in sut.headers.items():
        try:
            string.Template(value).substitute(_AnyEnv())
        except ValueError as error:
            raise ConfigError(
                f"{path}: field 'sut.headers.{name}': {error}. Fix: write ${{ENV_VAR}} for a "
                "value from the environment, $$ for a dollar sign"
            ) from None
    for name in ("ask", "health", "retrieve"):
        value = getattr(sut.paths, name)
        if value is not None and not value.startswith("/"):
            raise ConfigError(
                f"{path}: field 'sut.paths.{name}': {value!r} must start with '/'. "
                f"Fix: write /{value}"
            )


class _AnyEnv(dict[str, str]):
    """Accepts every variable name: syntax checks at load time, values at run time."""

    def __missing__(self, key: str) -> str:
        return ""


def expand_headers(headers: dict[str, str], where: str = "sut.headers") -> dict[str, str]:
    """The header values with ``${ENV_VAR}`` read from the environment now.

    >>> import os; os.environ["T2S_DOCTEST_TOKEN"] = "s3cret"
    >>> expand_headers({"Authorization": "Bearer ${T2S_DOCTEST_TOKEN}"})
    {'Authorization': 'Bearer s3cret'}
    """
    expanded = {}
    for name, value in headers.items():
        try:
            expanded[name] = string.Template(value).substitute(os.environ)
        except KeyError as error:
            raise ConfigError(
                f"field '{where}.{name}': the environment variable {error.args[0]} is not set. "
                f"Fix: export {error.args[0]}=... before the run (the value is never stored)"
            ) from None
    return expanded


def load_configs(folder: Path | str) -> dict[Path, RunConfig]:
    """Every configuration in a folder, by path (invalid files raise)."""
    return {path: load_config(path) for path in sorted(Path(folder).glob("*.yaml"))}
