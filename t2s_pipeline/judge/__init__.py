"""The optional LLM-judge lane (SPEC §12): an LLM names the failure category of items the
deterministic diagnosis did not find correct, with a short explanation; responses are cached in
the results store; human labels calibrate both the judge and the deterministic diagnosis.

Modules, one concern each: ``verdict`` (strict reading of a reply), ``prompt`` (what the judge
is shown, and the cache key), ``wire`` (the Anthropic and OpenAI request/response shapes),
``client`` (HTTP, retries, failure classes), ``cache`` (the store table), ``lane`` (judging a
run's items through the cache), ``inputs`` (building prompts from the stored stages), ``labels``
(the human label file), ``calibration`` (agreement, kappa, confusion) and ``report``.
"""
