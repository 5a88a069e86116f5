"""Schemathesis against the agent's own OpenAPI document: generated input never causes a 5xx.

Positive cases (valid bodies) must get responses that conform to the documented schemas;
negative cases (bodies that violate the request schema) must be refused with a 4xx.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from t2s_pipeline.agent.openapi import openapi_document

CONFIG = SchemathesisConfig.from_dict(
    {
        "generation": {"mode": "all", "max-examples": 40},
        # 413 (body over the size limit) is a documented, correct refusal of invalid input.
        "checks": {"negative_data_rejection": {"expected-statuses": ["400", "405", "413", "422"]}},
    }
)
schema = schemathesis.openapi.from_dict(openapi_document(), config=CONFIG)


@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_agent_survives_generated_requests(case: schemathesis.Case, agent_url: str) -> None:
    """Every documented operation, with generated valid and invalid input."""
    case.call_and_validate(base_url=agent_url)
