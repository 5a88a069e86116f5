"""Optional generation backend: an OpenAI-compatible chat-completions endpoint.

The prompt carries the offered DDL and the allowed examples (never an excluded one: they were
removed before this point). The SQL is taken from the reply's fenced block — a string
operation on the model's text, not SQL parsing.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass

import httpx
from pydantic import BaseModel, ValidationError

from t2s_pipeline.agent.generation import AskContext, Generation, GenerationError, Generator
from t2s_pipeline.errors import SutError
from t2s_pipeline.sut.contract import RetrieveResponse

_FENCE = "```"
_SQL_STARTS = frozenset({"select", "with", "from", "values", "table"})


@dataclass(frozen=True)
class LlmConfig:
    """Where the chat model is; the API key is read from the environment variable ``key_env``."""

    base_url: str
    model: str
    key_env: str | None = None
    timeout_s: float = 60.0
    temperature: float = 0.0


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    message: _Message


class _Completion(BaseModel):
    choices: list[_Choice]


class ChatCompletions(Generator):
    """Ask a chat model for the SQL, given the offered DDL and examples."""

    def __init__(
        self, config: LlmConfig, dialect: str, environ: Mapping[str, str] | None = None
    ) -> None:
        self.config = config
        self.dialect = dialect
        self._key = _api_key(config, os.environ if environ is None else environ)

    async def generate(
        self,
        question: str,
        evidence: str | None,
        offered: RetrieveResponse,
        context: AskContext | None = None,
    ) -> Generation:
        as_of = context.as_of if context else None
        messages = build_messages(question, evidence, offered, self.dialect, as_of)
        reply = await self._complete(messages)
        sql = extract_sql(reply)
        if sql is None:
            return Generation(None, refused=True, message="the model's reply holds no SQL")
        return Generation(sql)

    async def _complete(self, messages: list[dict[str, str]]) -> str:
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        payload = {
            "model": self.config.model,
            "temperature": self.config.temperature,
            "messages": messages,
        }
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        try:
            async with httpx.AsyncClient(timeout=self.config.timeout_s) as http:
                response = await http.post(url, json=payload, headers=headers)
            response.raise_for_status()
            completion = _Completion.model_validate_json(response.content)
        except (httpx.HTTPError, ValidationError) as error:
            raise GenerationError(f"chat backend {url} failed: {error}"[:300]) from None
        if not completion.choices:
            raise GenerationError(f"chat backend {url} returned no choices")
        return completion.choices[0].message.content or ""


def build_messages(
    question: str,
    evidence: str | None,
    offered: RetrieveResponse,
    dialect: str,
    as_of: dt.date | None = None,
) -> list[dict[str, str]]:
    """System and user messages: tables' DDL, worked examples, evidence, the snapshot's
    "today" when known, then the question."""
    system = (
        f"You write one read-only {dialect} SQL query that answers the user's question. "
        "Use only the tables given. Reply with the query in a ```sql fenced block."
    )
    parts = ["Tables:"] + [table.ddl for table in offered.tables]
    for example in offered.examples:
        parts += [f"Example question: {example.question}", f"```sql\n{example.sql}\n```"]
    if evidence:
        parts.append(f"Evidence: {evidence}")
    if as_of is not None:
        parts.append(f"Today is {as_of.isoformat()}.")
    parts.append(f"Question: {question}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def extract_sql(reply: str) -> str | None:
    """The SQL in a model's reply: a ```sql block, else the first fenced block, else the text.

    >>> extract_sql("Here:\\n```sql\\nSELECT 1;\\n```\\nDone.")
    'SELECT 1;'
    >>> extract_sql("SELECT 2"), extract_sql("   "), extract_sql("```\\nSELECT\\n  3\\n```")
    ('SELECT 2', None, 'SELECT\\n  3')
    """
    blocks = [_fenced_body(block) for block in reply.split(_FENCE)[1::2]]
    tagged = [body for tag, body in blocks if tag == "sql"]
    chosen = tagged[0] if tagged else blocks[0][1] if blocks else reply
    return chosen.strip() or None


def _fenced_body(block: str) -> tuple[str, str]:
    """Split a fenced block into its language tag (lower-cased, may be empty) and body."""
    head, newline, body = block.partition("\n")
    tag = head.strip().lower()
    # A bare first word may be the query itself (```SELECT<newline>...```), not a language tag.
    if newline and (not tag or (tag.isalnum() and tag not in _SQL_STARTS)):
        return tag, body
    return "", block


def _api_key(config: LlmConfig, environ: Mapping[str, str]) -> str | None:
    if config.key_env is None:
        return None
    key = environ.get(config.key_env)
    if not key:
        raise SutError(
            f"environment variable {config.key_env} (named by --llm-key-env) is not set; "
            "export the API key there or drop --llm-key-env for a keyless endpoint"
        )
    return key
