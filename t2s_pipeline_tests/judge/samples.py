"""Small judge inputs and endpoints for the client and lane tests."""

from __future__ import annotations

from t2s_pipeline.judge.client import JudgeEndpoint
from t2s_pipeline.judge.prompt import JudgeInput, ResultPreview
from t2s_pipeline.judge.wire import Api, Shape
from t2s_pipeline.sut.retry import RetryPolicy

from .fake_llm import KEY


def judge_input(question: str, item_id: str | None = None) -> JudgeInput:
    """An item whose candidate counts every order where the gold counts delivered ones."""
    return JudgeInput(
        item_id=item_id or f"{question}#0",
        question=question,
        gold_sql="SELECT COUNT(*) AS n FROM sales.orders WHERE status_cd = 'delivered'",
        candidate_sql="SELECT COUNT(*) AS n FROM sales.orders",
        gold=ResultPreview("ok", None, ("n",), 1, ((30782,),)),
        candidate=ResultPreview("ok", None, ("n",), 1, ((40000,),)),
        scores=(("exact_match", 0.0), ("filters_recall", 0.0), ("cells_recall", None)),
    )


def endpoint(
    api: Api,
    base_url: str,
    structured: bool = False,
    key: str | None = KEY,
    timeout_s: float = 1.2,
) -> JudgeEndpoint:
    """An endpoint with short timeouts and quick retries, so fault tests stay fast."""
    return JudgeEndpoint(
        shape=Shape(api, "fake-judge-1", structured=structured),
        base_url=base_url,
        key_env="T2S_TEST_JUDGE_KEY",
        api_key=key,
        timeout_s=timeout_s,
        concurrency=8,
        retry=RetryPolicy(max_attempts=3, base_s=0.01, max_s=0.05),
    )
