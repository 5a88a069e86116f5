"""Property: renaming aliases never changes what the analysis says about a query."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from t2s_pipeline.sql.analysis import analyse_query
from t2s_pipeline_tests.sql.fixture_files import shared_schema

# A prefix keeps generated names clear of SQL keywords.
ALIASES = st.from_regex(r"x_[a-z0-9_]{0,6}", fullmatch=True)

TEMPLATE = """
WITH {cte} AS (
  SELECT {o}.customer_id, SUM({o}.amount) AS {total}
  FROM sales.orders {o} WHERE {o}.status_cd = 'paid' GROUP BY {o}.customer_id
)
SELECT {c}.name AS {out}, {t}.{total}
FROM sales.customers {c} JOIN {cte} {t} ON {t}.customer_id = {c}.customer_id
WHERE {t}.{total} > 100
ORDER BY 2 DESC
"""

BASELINE = TEMPLATE.format(cte="t", o="o", total="total", c="c", t="tt", out="name")


@settings(max_examples=25, deadline=None)
@given(names=st.lists(ALIASES, min_size=6, max_size=6, unique=True))
def test_aliases_do_not_change_the_analysis(names: list[str]) -> None:
    """Aliases are the author's choice; sets, origins and canonical form must not see them."""
    cte, o, total, c, t, out = names
    sql = TEMPLATE.format(cte=cte, o=o, total=total, c=c, t=t, out=out)
    schema = shared_schema()
    renamed = analyse_query(sql, "duckdb", schema)
    baseline = analyse_query(BASELINE, "duckdb", schema)
    assert renamed.components == baseline.components
    assert renamed.output_columns == baseline.output_columns
    assert renamed.canonical == baseline.canonical
