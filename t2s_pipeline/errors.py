"""One exception hierarchy for the whole package.

Every error a user can meet says what went wrong, where (file, field, case id) and how to fix it.
"""

from __future__ import annotations


class T2SError(Exception):
    """Base class of every error raised on purpose by t2s_pipeline."""


class CaseError(T2SError):
    """A gold case file is invalid: names the file, the field and the fix."""

    def __init__(self, path: str, field: str, problem: str, fix: str) -> None:
        self.path = path
        self.field = field
        self.problem = problem
        self.fix = fix
        super().__init__(f"{path}: field '{field}': {problem}. Fix: {fix}")


class ConfigError(T2SError):
    """A configuration file or option is invalid."""


class SqlAnalysisError(T2SError):
    """A query could not be parsed or analysed."""


class ExecutionError(T2SError):
    """A database could not be reached or opened (not a refusal: refusals are values)."""


class SutError(T2SError):
    """The system under test could not be configured or reached at all."""
