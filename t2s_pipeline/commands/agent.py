"""``t2s agent serve``: run the built-in baseline agent (SPEC section 14) under uvicorn.

The flags are the knobs of a configuration's ``sut:`` block for the built-in kind.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from t2s_pipeline.agent.app import AgentSettings, build_app
from t2s_pipeline.agent.llm import LlmConfig
from t2s_pipeline.errors import SutError


def register(subparsers: argparse._SubParsersAction) -> None:
    agent = subparsers.add_parser("agent", help="the built-in baseline text-to-SQL agent")
    sub = agent.add_subparsers(dest="agent_command", required=True)
    serve = sub.add_parser("serve", help="serve /v1/ask, /v1/retrieve, /v1/health")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8900)
    serve.add_argument("--domain", type=Path, default=Path("cases/erp"), help="case folder")
    serve.add_argument("--tables-k", type=int, default=4, help="tables offered per question")
    serve.add_argument("--examples-k", type=int, default=3, help="examples offered per question")
    serve.add_argument(
        "--generation",
        choices=["schema_linking", "nearest_example"],
        default="schema_linking",
        help="schema_linking (default) or nearest_example (answer with the nearest example's SQL)",
    )
    serve.add_argument(
        "--no-comments", action="store_true", help="ignore the schema notes (column comments)"
    )
    serve.add_argument("--no-examples", action="store_true", help="retrieve and use no examples")
    serve.add_argument(
        "--date-windows",
        choices=["calendar", "rolling"],
        default="calendar",
        help="'last month' as the previous calendar month (default) or the last 30 days",
    )
    serve.add_argument("--llm-base-url", help="OpenAI-compatible base URL, e.g. http://h/v1")
    serve.add_argument("--llm-model", help="model name sent to the chat endpoint")
    serve.add_argument("--llm-key-env", help="environment variable holding the API key")
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn  # only the serving path needs it

    settings = AgentSettings(
        generation=args.generation,
        tables_k=args.tables_k,
        examples_k=args.examples_k,
        use_comments=not args.no_comments,
        use_examples=not args.no_examples,
        date_windows=args.date_windows,
        llm=_llm_config(args),
    )
    app = build_app(args.domain, settings=settings)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info", access_log=False)
    return 0


def _llm_config(args: argparse.Namespace) -> LlmConfig | None:
    if args.llm_base_url is None and args.llm_model is None:
        return None
    if not (args.llm_base_url and args.llm_model):
        raise SutError("give both --llm-base-url and --llm-model to use an LLM backend")
    return LlmConfig(base_url=args.llm_base_url, model=args.llm_model, key_env=args.llm_key_env)
