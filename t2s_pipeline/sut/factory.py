"""The client a configuration's ``sut:`` block names, with its adapters applied (SPEC 14)."""

from __future__ import annotations

from t2s_pipeline.config import RunConfig, SutSettings, expand_headers
from t2s_pipeline.sut.contract import FieldNames, Paths
from t2s_pipeline.sut.http import HttpSettings, HttpSutClient
from t2s_pipeline.sut.python import PythonSettings, PythonSutClient
from t2s_pipeline.sut.retry import RetryPolicy


def http_settings(
    config: RunConfig, base_url: str | None = None, timeout_s: float | None = None
) -> HttpSettings:
    """The HTTP settings of a configuration (``base_url`` for the built-in agent's server).

    Header values are read from the environment here, at run time, never stored.
    """
    sut = config.sut
    adapted = sut.kind == "http"
    return HttpSettings(
        base_url=base_url or sut.url or "",
        concurrency=config.client.concurrency,
        request_timeout_s=timeout_s or config.client.timeout_s,
        retry=RetryPolicy(max_attempts=config.client.max_attempts),
        field_names=FieldNames.from_mapping(sut.fields) if adapted else FieldNames(),
        paths=_paths(sut) if adapted else Paths(),
        headers=expand_headers(sut.headers) if adapted else {},
        probe=sut.probe,
        extra=sut.extra if adapted else {},
    )


def python_settings(config: RunConfig) -> PythonSettings:
    sut = config.sut
    assert sut.callable is not None  # load_config requires it for kind python
    return PythonSettings(
        ask=sut.callable,
        retrieve=sut.retrieve,
        supports_exclusions=sut.supports_exclusions,
        concurrency=config.client.concurrency,
        timeout_s=config.client.timeout_s,
        field_names=FieldNames.from_mapping(sut.fields),
    )


def http_client(config: RunConfig, timeout_s: float | None = None) -> HttpSutClient:
    return HttpSutClient(http_settings(config, timeout_s=timeout_s))


def python_client(config: RunConfig) -> PythonSutClient:
    return PythonSutClient(python_settings(config))


def _paths(sut: SutSettings) -> Paths:
    return Paths(ask=sut.paths.ask, retrieve=sut.paths.retrieve, health=sut.paths.health)
