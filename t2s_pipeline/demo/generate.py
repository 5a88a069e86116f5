"""Deterministic generator of the demo ERP warehouse.

Every table is drawn from one seeded NumPy generator in a fixed order, so two builds at the same
scale produce the same rows and the same snapshot hash (recorded in ``meta.snapshot``). Amounts
are generated in integer cents and cast to DECIMAL in the database, so no float noise enters.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from t2s_pipeline.demo.schema import AS_OF, META_SCHEMA, TABLES, TableDef, create_statements
from t2s_pipeline.execution.schema_rows import duckdb_snapshot_hash

SEED = 20250630
START = np.datetime64("2023-01-01")
END = np.datetime64(AS_OF)
DEFAULT_PATH = Path(".t2s/warehouse.duckdb")

# Columns generated as integer cents (or hundredths of a percent) and cast to DECIMAL on insert.
_CENTS = {
    "list_price",
    "unit_price",
    "net_amount",
    "tax_amount",
    "gross_amount",
    "amount",
    "annual_salary",
    "discount_pct",
}

_FIRST = np.array(
    [
        "Ada",
        "Ben",
        "Carla",
        "Dario",
        "Elif",
        "Femi",
        "Greta",
        "Hugo",
        "Ines",
        "Jonas",
        "Kira",
        "Luca",
        "Mona",
        "Nils",
        "Olga",
        "Pablo",
        "Quinn",
        "Rosa",
        "Sami",
        "Tara",
        "Ugo",
        "Vera",
        "Wim",
        "Xena",
        "Yusuf",
        "Zoe",
    ]
)
_LAST = np.array(
    [
        "Berg",
        "Costa",
        "Dietz",
        "Eriksen",
        "Fontaine",
        "Garcia",
        "Horvat",
        "Ivanova",
        "Jansen",
        "Kowalski",
        "Larsen",
        "Moreau",
        "Novak",
        "Okafor",
        "Petit",
        "Quist",
        "Rossi",
        "Schmidt",
        "Tanaka",
        "Ueda",
        "Varga",
        "Weber",
        "Young",
        "Zimmer",
    ]
)
_CATEGORIES = (
    "Tools",
    "Garden",
    "Paint",
    "Electrical",
    "Plumbing",
    "Fasteners",
    "Safety",
    "Lumber",
)
_NOUNS = [
    "Hammer",
    "Drill",
    "Saw",
    "Wrench",
    "Rake",
    "Hose",
    "Primer",
    "Roller",
    "Cable",
    "Switch",
    "Valve",
    "Pipe",
    "Screw",
    "Bolt",
    "Gloves",
    "Goggles",
    "Plank",
    "Beam",
    "Ladder",
    "Clamp",
    "Sander",
    "Trowel",
    "Bucket",
    "Tape",
    "Lamp",
    "Socket",
    "Fan",
    "Brush",
    "Shovel",
    "Chisel",
]


@dataclass(frozen=True)
class BuildReport:
    path: Path
    scale: float
    snapshot_hash: str
    seconds: float
    bytes: int
    row_counts: dict[str, int]


def generate_tables(scale: float = 1.0, seed: int = SEED) -> dict[str, pd.DataFrame]:
    """Generate every table as a DataFrame keyed by ``schema.table``, deterministically.

    >>> sorted(generate_tables(0.01))[:2]
    ['finance.invoices', 'finance.payments']
    """
    rng = np.random.default_rng(seed)
    tables: dict[str, pd.DataFrame] = {}
    tables["sales.sites"] = _sites()
    tables["sales.items"] = _items(rng)
    tables["sales.customers"] = _customers(rng, max(50, int(2000 * scale)))
    orders, lines = _orders_and_lines(rng, tables, max(200, int(40000 * scale)))
    tables["sales.orders"], tables["sales.order_lines"] = orders, lines
    tables["finance.invoices"] = _invoices(rng, orders, lines)
    tables["finance.payments"] = _payments(rng, orders, tables["finance.invoices"])
    tables["inventory.stock"] = _stock(rng, tables)
    tables["hr.employees"], tables["hr.salaries"] = _staff(rng)
    tables["pii.customer_contacts"] = _contacts(rng, tables["sales.customers"])
    return tables


def snapshot_hash(tables: dict[str, pd.DataFrame]) -> str:
    """SHA-256 over every table's name, column names and row hashes, in a fixed order."""
    digest = hashlib.sha256()
    for name in sorted(tables):
        frame = tables[name]
        digest.update(name.encode())
        digest.update(",".join(frame.columns).encode())
        digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def build_warehouse(
    out: Path = DEFAULT_PATH,
    scale: float = 1.0,
    progress: Callable[[str], None] | None = None,
) -> BuildReport:
    """Write the warehouse to ``out`` atomically (a temporary file renamed into place)."""
    started = time.perf_counter()
    say = progress or (lambda _message: None)
    say(f"generating tables at scale {scale}")
    tables = generate_tables(scale)
    digest = snapshot_hash(tables)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    for leftover in (tmp, Path(str(tmp) + ".wal")):
        leftover.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        _write(con, tables, say)
        _write_meta(con, scale, digest)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    os.replace(tmp, out)
    return BuildReport(
        path=out,
        scale=scale,
        snapshot_hash=digest,
        seconds=time.perf_counter() - started,
        bytes=out.stat().st_size,
        row_counts={name: len(frame) for name, frame in tables.items()},
    )


def read_snapshot_hash(path: Path) -> str:
    """The snapshot hash recorded in a built warehouse file."""
    return duckdb_snapshot_hash(str(path))


def _write(
    con: duckdb.DuckDBPyConnection, tables: dict[str, pd.DataFrame], say: Callable[[str], None]
) -> None:
    for schema in sorted({t.schema for t in TABLES}):
        con.execute(f"CREATE SCHEMA {schema}")
    for definition in TABLES:
        for statement in create_statements(definition):
            con.execute(statement)
        frame = tables[definition.qualified]
        say(f"writing {definition.qualified} ({len(frame):,} rows)")
        con.register("frame", frame)
        con.execute(
            f"INSERT INTO {definition.qualified} SELECT {_select_list(definition)} FROM frame"
        )
        con.unregister("frame")


def _select_list(definition: TableDef) -> str:
    parts = []
    for column in definition.columns:
        if column.name in _CENTS:
            parts.append(f"CAST(CAST({column.name} AS DECIMAL(18,0)) / 100 AS {column.type})")
        else:
            parts.append(f"CAST({column.name} AS {column.type})")
    return ", ".join(parts)


def _write_meta(con: duckdb.DuckDBPyConnection, scale: float, digest: str) -> None:
    con.execute(f"CREATE SCHEMA {META_SCHEMA}")
    con.execute(f"CREATE TABLE {META_SCHEMA}.snapshot (key VARCHAR PRIMARY KEY, value VARCHAR)")
    rows = [("snapshot_hash", digest), ("scale", str(scale)), ("seed", str(SEED)), ("as_of", AS_OF)]
    con.executemany(f"INSERT INTO {META_SCHEMA}.snapshot VALUES (?, ?)", rows)


def _sites() -> pd.DataFrame:
    names = [
        "Aberdeen", "Bergen", "Cork", "Dover", "Essen", "Faro",
        "Genoa", "Hull", "Izmir", "Jena", "Kiel", "Lille",
    ]  # fmt: skip
    regions = ["N", "N", "W", "S", "E", "S", "S", "N", "E", "E", "N", "W"]
    kinds = ["ST", "ST", "ST", "WH", "ST", "ST", "WH", "ST", "ST", "ST", "ST", "ST"]
    opened = [f"20{10 + i}-0{1 + i % 9}-15" for i in range(12)]
    return pd.DataFrame(
        {
            "site_id": [f"S{i + 1:02d}" for i in range(12)],
            "site_name": names,
            "region_cd": regions,
            "site_type_cd": kinds,
            "opened_on": pd.to_datetime(opened).date,
        }
    )


def _items(rng: np.random.Generator) -> pd.DataFrame:
    n = len(_CATEGORIES) * 30
    category = np.repeat(np.array(_CATEGORIES), 30)
    noun = np.array(_NOUNS)[np.arange(n) % len(_NOUNS)]
    grade = np.array(["Basic", "Pro", "Max", "Lite"])[(np.arange(n) // len(_NOUNS)) % 4]
    return pd.DataFrame(
        {
            "item_id": [f"I{i + 1:04d}" for i in range(n)],
            "item_name": [f"{c} {g} {w}" for c, g, w in zip(category, grade, noun, strict=True)],
            "category": category,
            "list_price": rng.integers(199, 25000, n),
            "uom_cd": rng.choice(["EA", "BX", "KG"], n, p=[0.7, 0.2, 0.1]),
            "is_active": rng.random(n) > 0.08,
        }
    )


def _customers(rng: np.random.Generator, n: int) -> pd.DataFrame:
    first = rng.choice(_FIRST, n)
    last = rng.choice(_LAST, n)
    days = rng.integers(0, int((END - np.datetime64("2019-01-01")).astype(int)), n)
    return pd.DataFrame(
        {
            "customer_id": [f"C{i + 1:06d}" for i in range(n)],
            "customer_name": [f"{a} {b}" for a, b in zip(first, last, strict=True)],
            "segment_cd": rng.choice(["B2C", "B2B", "GOV"], n, p=[0.7, 0.25, 0.05]),
            "country_cd": rng.choice(["DE", "FR", "GB", "IT", "ES", "NL"], n),
            "home_site_id": [f"S{i:02d}" for i in rng.integers(1, 13, n)],
            "created_on": np.datetime64("2019-01-01") + days.astype("timedelta64[D]"),
        }
    )


def _orders_and_lines(
    rng: np.random.Generator, tables: dict[str, pd.DataFrame], n: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    span = int((END - START).astype(int)) + 1
    # Business grows over time: later days are more likely.
    day = np.minimum((np.sqrt(rng.random(n)) * span).astype(np.int64), span - 1)
    day.sort()
    order_date = START + day.astype("timedelta64[D]")
    age = span - 1 - day
    status = rng.choice(
        ["delivered", "shipped", "placed", "cancelled", "returned"],
        n,
        p=[0.78, 0.04, 0.02, 0.1, 0.06],
    )
    recent = age < 10
    status[recent] = rng.choice(["placed", "shipped", "delivered"], int(recent.sum()))
    customers = tables["sales.customers"]["customer_id"].to_numpy()
    orders = pd.DataFrame(
        {
            "order_id": np.arange(100001, 100001 + n),
            "customer_id": customers[rng.integers(0, len(customers), n)],
            "site_id": np.char.add("S", np.char.zfill(rng.integers(1, 13, n).astype(str), 2)),
            "order_date": order_date,
            "status_cd": status,
            "channel_cd": rng.choice(["W", "S", "P"], n, p=[0.5, 0.4, 0.1]),
        }
    )
    per_order = rng.choice([1, 2, 3, 4], n, p=[0.25, 0.3, 0.25, 0.2])
    order_of_line = np.repeat(orders["order_id"].to_numpy(), per_order)
    starts = np.repeat(np.cumsum(per_order) - per_order, per_order)
    line_no = np.arange(len(order_of_line)) - starts + 1
    items = tables["sales.items"]
    pick = rng.integers(0, len(items), len(order_of_line))
    price = items["list_price"].to_numpy()[pick]
    promo = rng.random(len(pick)) < 0.1
    price = np.where(promo, (price * 0.9).astype(np.int64), price)
    lines = pd.DataFrame(
        {
            "order_id": order_of_line,
            "line_no": line_no,
            "item_id": items["item_id"].to_numpy()[pick],
            "quantity": rng.choice([1, 1, 1, 2, 2, 3, 4, 5, 10, 12], len(pick)),
            "unit_price": price,
            "discount_pct": rng.choice([0, 0, 0, 0, 500, 1000, 1500, 3000], len(pick)),
        }
    )
    return orders, lines


def _line_cents(lines: pd.DataFrame) -> np.ndarray:
    gross = lines["quantity"].to_numpy() * lines["unit_price"].to_numpy()
    return np.round(gross * (10000 - lines["discount_pct"].to_numpy()) / 10000).astype(np.int64)


def _invoices(rng: np.random.Generator, orders: pd.DataFrame, lines: pd.DataFrame) -> pd.DataFrame:
    net_by_order = pd.Series(_line_cents(lines)).groupby(lines["order_id"].to_numpy()).sum()
    billed = orders[orders["status_cd"] != "cancelled"]
    net = net_by_order.reindex(billed["order_id"].to_numpy()).to_numpy()
    tax = np.round(net * 0.2).astype(np.int64)
    delay = rng.integers(0, 4, len(billed)).astype("timedelta64[D]")
    invoice_date = np.minimum(billed["order_date"].to_numpy() + delay, END)
    return pd.DataFrame(
        {
            "invoice_id": np.arange(500001, 500001 + len(billed)),
            "order_id": billed["order_id"].to_numpy(),
            "invoice_date": invoice_date,
            "net_amount": net,
            "tax_amount": tax,
            "gross_amount": net + tax,
            "currency_cd": "EUR",
        }
    )


def _payments(
    rng: np.random.Generator, orders: pd.DataFrame, invoices: pd.DataFrame
) -> pd.DataFrame:
    status = orders.set_index("order_id")["status_cd"].reindex(invoices["order_id"]).to_numpy()
    paid = invoices[status != "placed"]
    paid_status = status[status != "placed"]
    n = len(paid)
    method = rng.choice(["CC", "DC", "BT", "CS", "GC"], n, p=[0.4, 0.25, 0.2, 0.1, 0.05])
    gross = paid["gross_amount"].to_numpy()
    split = (rng.random(n) < 0.08) & (gross > 1000)
    first_part = np.where(split, gross // 2, gross)
    delay = rng.integers(0, 20, n).astype("timedelta64[D]")
    paid_on = np.minimum(paid["invoice_date"].to_numpy() + delay, END)
    invoice_ids = paid["invoice_id"].to_numpy()
    second_method = rng.choice(["CC", "GC"], int(split.sum()))
    returned = paid_status == "returned"
    refund_on = np.minimum(paid_on[returned] + np.timedelta64(14, "D"), END)
    frame = pd.DataFrame(
        {
            "invoice_id": np.concatenate([invoice_ids, invoice_ids[split], invoice_ids[returned]]),
            "paid_on": np.concatenate([paid_on, paid_on[split], refund_on]),
            "amount": np.concatenate(
                [first_part, gross[split] - first_part[split], -gross[returned]]
            ),
            "pm_cd": np.concatenate([method, second_method, method[returned]]),
        }
    )
    frame = frame.sort_values(["paid_on", "invoice_id"], kind="stable").reset_index(drop=True)
    frame.insert(0, "payment_id", np.arange(900001, 900001 + len(frame)))
    return frame


def _stock(rng: np.random.Generator, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    sites = tables["sales.sites"]["site_id"].to_numpy()
    items = tables["sales.items"]["item_id"].to_numpy()
    site, item = np.meshgrid(sites, items, indexing="ij")
    n = site.size
    counted = END - rng.integers(0, 60, n).astype("timedelta64[D]")
    return pd.DataFrame(
        {
            "site_id": site.ravel(),
            "item_id": item.ravel(),
            "on_hand_qty": rng.integers(0, 400, n),
            "reorder_pt": rng.choice([10, 20, 25, 50], n),
            "counted_on": counted,
        }
    )


def _staff(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    n = 150
    employees = pd.DataFrame(
        {
            "employee_id": np.arange(1, n + 1),
            "full_name": [
                f"{a} {b}" for a, b in zip(rng.choice(_FIRST, n), rng.choice(_LAST, n), strict=True)
            ],
            "site_id": [f"S{i:02d}" for i in rng.integers(1, 13, n)],
            "job_title": rng.choice(["Clerk", "Picker", "Manager", "Driver", "Analyst"], n),
            "hired_on": np.datetime64("2012-01-01")
            + rng.integers(0, 4500, n).astype("timedelta64[D]"),
        }
    )
    raises = rng.integers(1, 4, n)
    employee = np.repeat(employees["employee_id"].to_numpy(), raises)
    step = np.arange(len(employee)) - np.repeat(np.cumsum(raises) - raises, raises)
    base = np.repeat(rng.integers(2_800_000, 9_000_000, n), raises)
    salaries = pd.DataFrame(
        {
            "employee_id": employee,
            "annual_salary": base + step * 150_000,
            "effective_from": np.datetime64("2023-01-01") + (step * 365).astype("timedelta64[D]"),
        }
    )
    return employees, salaries


def _contacts(rng: np.random.Generator, customers: pd.DataFrame) -> pd.DataFrame:
    n = len(customers)
    ids = customers["customer_id"].to_numpy()
    return pd.DataFrame(
        {
            "customer_id": ids,
            "email": [f"{i.lower()}@example.org" for i in ids],
            "phone": [f"+49 30 {k:07d}" for k in rng.integers(0, 9_999_999, n)],
            "street": [f"{k} Harbour Road" for k in rng.integers(1, 300, n)],
            "city": rng.choice(["Berlin", "Paris", "Leeds", "Milan", "Porto", "Utrecht"], n),
        }
    )
