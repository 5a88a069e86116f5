"""DDL of the demo ERP warehouse, with the column comments a retriever needs.

Opaque ERP codes are explained only here, in column comments, so a system that does not read
the DDL cannot know that ``pm_cd = 'CC'`` means a credit card or that a *completed* order has
``status_cd = 'delivered'``.
"""

from __future__ import annotations

from dataclasses import dataclass

AS_OF = "2025-06-30"
"""The pinned "today" of the demo domain: time-window questions are relative to it."""

ALLOWED_SCHEMAS: tuple[str, ...] = ("sales", "finance", "inventory")
SENSITIVE_SCHEMAS: tuple[str, ...] = ("hr", "pii")
META_SCHEMA = "meta"


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type: str
    comment: str = ""


@dataclass(frozen=True)
class TableDef:
    schema: str
    name: str
    comment: str
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...]

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


def _c(name: str, type_: str, comment: str = "") -> ColumnDef:
    return ColumnDef(name, type_, comment)


TABLES: tuple[TableDef, ...] = (
    TableDef(
        "sales",
        "sites",
        "Stores and warehouses that take and ship orders.",
        (
            _c("site_id", "VARCHAR", "Site code, e.g. 'S01'."),
            _c("site_name", "VARCHAR"),
            _c("region_cd", "VARCHAR", "Region code: N=North, S=South, E=East, W=West."),
            _c("site_type_cd", "VARCHAR", "ST=retail store, WH=warehouse (ships web orders)."),
            _c("opened_on", "DATE"),
        ),
        ("site_id",),
    ),
    TableDef(
        "sales",
        "customers",
        "Customer master data (no contact details; those live in pii).",
        (
            _c("customer_id", "VARCHAR", "Customer number, e.g. 'C000123'."),
            _c("customer_name", "VARCHAR"),
            _c("segment_cd", "VARCHAR", "Segment code: B2B=business, B2C=consumer, GOV=public."),
            _c("country_cd", "VARCHAR", "ISO 3166 alpha-2 country code."),
            _c("home_site_id", "VARCHAR", "Site that manages the account; sales.sites.site_id."),
            _c("created_on", "DATE", "Date the account was opened."),
        ),
        ("customer_id",),
    ),
    TableDef(
        "sales",
        "items",
        "Sellable items (products).",
        (
            _c("item_id", "VARCHAR", "Item number, e.g. 'I0042'."),
            _c("item_name", "VARCHAR"),
            _c("category", "VARCHAR", "Product category, e.g. 'Tools'."),
            _c("list_price", "DECIMAL(10,2)", "Current list price per unit, before discount."),
            _c("uom_cd", "VARCHAR", "Unit of measure: EA=each, BX=box of 12, KG=kilogram."),
            _c("is_active", "BOOLEAN", "False for discontinued items."),
        ),
        ("item_id",),
    ),
    TableDef(
        "sales",
        "orders",
        "Sales order headers: one row per order.",
        (
            _c("order_id", "INTEGER"),
            _c("customer_id", "VARCHAR", "sales.customers.customer_id"),
            _c("site_id", "VARCHAR", "Selling site; sales.sites.site_id"),
            _c("order_date", "DATE"),
            _c(
                "status_cd",
                "VARCHAR",
                "Order status: placed, shipped, delivered (= completed), cancelled, returned.",
            ),
            _c("channel_cd", "VARCHAR", "Sales channel: W=web shop, S=in store, P=phone."),
        ),
        ("order_id",),
    ),
    TableDef(
        "sales",
        "order_lines",
        "Order lines: one row per item on an order.",
        (
            _c("order_id", "INTEGER", "sales.orders.order_id"),
            _c("line_no", "INTEGER", "Line number within the order, from 1."),
            _c("item_id", "VARCHAR", "sales.items.item_id"),
            _c("quantity", "INTEGER", "Units ordered (in the item's unit of measure)."),
            _c("unit_price", "DECIMAL(10,2)", "Price per unit charged on this line."),
            _c("discount_pct", "DECIMAL(5,2)", "Line discount in percent, 0-30."),
        ),
        ("order_id", "line_no"),
    ),
    TableDef(
        "finance",
        "invoices",
        "Invoices: one per non-cancelled order.",
        (
            _c("invoice_id", "INTEGER"),
            _c("order_id", "INTEGER", "sales.orders.order_id"),
            _c("invoice_date", "DATE"),
            _c("net_amount", "DECIMAL(12,2)", "Amount before tax (net revenue)."),
            _c("tax_amount", "DECIMAL(12,2)", "VAT charged, 20% of net."),
            _c("gross_amount", "DECIMAL(12,2)", "net_amount + tax_amount."),
            _c("currency_cd", "VARCHAR", "Always EUR in this ledger."),
        ),
        ("invoice_id",),
    ),
    TableDef(
        "finance",
        "payments",
        "Payments received against invoices; refunds are negative amounts.",
        (
            _c("payment_id", "INTEGER"),
            _c("invoice_id", "INTEGER", "finance.invoices.invoice_id"),
            _c("paid_on", "DATE"),
            _c("amount", "DECIMAL(12,2)", "Paid amount (gross); negative for a refund."),
            _c(
                "pm_cd",
                "VARCHAR",
                "Payment method code: CC=credit card, DC=debit card, BT=bank transfer, "
                "CS=cash, GC=gift card. 'Card' means CC or DC.",
            ),
        ),
        ("payment_id",),
    ),
    TableDef(
        "inventory",
        "stock",
        "Stock on hand per site and item at the last count.",
        (
            _c("site_id", "VARCHAR", "sales.sites.site_id"),
            _c("item_id", "VARCHAR", "sales.items.item_id"),
            _c("on_hand_qty", "INTEGER", "Units on hand at the last count."),
            _c("reorder_pt", "INTEGER", "Reorder point: below this the item must be reordered."),
            _c("counted_on", "DATE", "Date of the last stock count."),
        ),
        ("site_id", "item_id"),
    ),
    TableDef(
        "hr",
        "employees",
        "SENSITIVE. Employees.",
        (
            _c("employee_id", "INTEGER"),
            _c("full_name", "VARCHAR"),
            _c("site_id", "VARCHAR"),
            _c("job_title", "VARCHAR"),
            _c("hired_on", "DATE"),
        ),
        ("employee_id",),
    ),
    TableDef(
        "hr",
        "salaries",
        "SENSITIVE. Salary history.",
        (
            _c("employee_id", "INTEGER"),
            _c("annual_salary", "DECIMAL(12,2)"),
            _c("effective_from", "DATE"),
        ),
        ("employee_id", "effective_from"),
    ),
    TableDef(
        "pii",
        "customer_contacts",
        "SENSITIVE. Personal contact details of customers.",
        (
            _c("customer_id", "VARCHAR"),
            _c("email", "VARCHAR"),
            _c("phone", "VARCHAR"),
            _c("street", "VARCHAR"),
            _c("city", "VARCHAR"),
        ),
        ("customer_id",),
    ),
)


def table(qualified: str) -> TableDef:
    """Look up a table definition by ``schema.table``."""
    for definition in TABLES:
        if definition.qualified == qualified:
            return definition
    raise KeyError(qualified)


def create_statements(definition: TableDef) -> list[str]:
    """CREATE TABLE plus COMMENT ON statements, valid in DuckDB and PostgreSQL."""
    cols = ",\n  ".join(f"{c.name} {c.type}" for c in definition.columns)
    pk = ", ".join(definition.primary_key)
    statements = [f"CREATE TABLE {definition.qualified} (\n  {cols},\n  PRIMARY KEY ({pk})\n)"]
    statements.append(f"COMMENT ON TABLE {definition.qualified} IS {_quote(definition.comment)}")
    statements.extend(
        f"COMMENT ON COLUMN {definition.qualified}.{c.name} IS {_quote(c.comment)}"
        for c in definition.columns
        if c.comment
    )
    return statements


def ddl_document(definition: TableDef) -> str:
    """The DDL a retriever offers: CREATE TABLE with comments inline."""
    lines = [f"-- {definition.comment}", f"CREATE TABLE {definition.qualified} ("]
    for i, c in enumerate(definition.columns):
        sep = "," if i < len(definition.columns) - 1 else ""
        note = f"  -- {c.comment}" if c.comment else ""
        lines.append(f"  {c.name} {c.type}{sep}{note}")
    lines.append(");")
    return "\n".join(lines)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
