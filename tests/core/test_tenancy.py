"""Tenancy in the pure core: the tenant a page names, the ids it gets, and the refusals."""

from __future__ import annotations

import json

import pytest

from streams.core.assembly import Assembler, BadInput, Completed, parse_page
from streams.core.tenancy import TenantError, by_tenant, check_tenant, qualify, scoped, tenant_in
from streams.settings import ConfigError, Settings


def _page(doc_id: str = "report-1", **metadata: object) -> bytes:
    body = {"doc_id": doc_id, "document_name": "r.txt", "page_number": 1, "page_count": 1, "text": "The pier."}
    return json.dumps({**body, "metadata": metadata}).encode()


def test_a_page_under_tenancy_gets_the_qualified_id_and_its_tenant() -> None:
    page = parse_page(_page(workspace="acme"), tenant_key="workspace")
    assert (page.doc_id, page.tenant) == ("acme#report-1", "acme")
    assert parse_page(_page(workspace="acme")).doc_id == "report-1"  # tenancy off: the id as published


@pytest.mark.parametrize(
    ("metadata", "code", "says"),
    [
        ({}, "tenant_missing", "no 'workspace'"),
        ({"workspace": ""}, "tenant_missing", "no 'workspace'"),
        ({"workspace": 7}, "tenant_invalid", "got int"),
        ({"workspace": ["acme"]}, "tenant_invalid", "got list"),
        ({"workspace": "ac#me"}, "tenant_invalid", "is not 1-63"),
        ({"workspace": "-acme"}, "tenant_invalid", "is not 1-63"),
        ({"workspace": "a" * 64}, "tenant_invalid", "is not 1-63"),
    ],
)
def test_a_page_without_a_tenant_name_is_refused_with_its_reason(metadata: dict, code: str, says: str) -> None:
    with pytest.raises(BadInput) as refused:
        parse_page(_page(**metadata), tenant_key="workspace")
    assert refused.value.code == code and says in refused.value.reason and refused.value.doc_id == "report-1"


def test_a_tenant_field_in_the_page_itself_names_nothing() -> None:
    raw = json.loads(_page(workspace="acme"))
    page = parse_page(json.dumps({**raw, "tenant": "globex"}).encode(), tenant_key="workspace")
    assert page.tenant == "acme"
    assert parse_page(json.dumps({**raw, "tenant": "globex"}).encode()).tenant == ""


def test_two_tenants_assemble_the_same_document_apart() -> None:
    assembler = Assembler({}, {}, tenant_key="workspace")
    done = [o for t in ("acme", "globex") for o in assembler.on_page(_page(workspace=t)) if isinstance(o, Completed)]
    assert [(d.document.doc_id, d.document.tenant) for d in done] == [
        ("acme#report-1", "acme"),
        ("globex#report-1", "globex"),
    ]


def test_ids_name_their_tenant() -> None:
    assert qualify("acme", "a#b") == "acme#a#b" and qualify("", "a#b") == "a#b"
    assert scoped("acme", "window-ff") == "acme#window-ff" and scoped("", "window-ff") == "window-ff"
    assert tenant_in("acme#window-ff") == "acme" and tenant_in("window-ff") == ""
    assert by_tenant(["acme#x", "y", "globex#z", "acme#w"]) == {
        "acme": ["acme#x", "acme#w"],
        "": ["y"],
        "globex": ["globex#z"],
    }
    with pytest.raises(TenantError):
        check_tenant("white space")


def test_queries_name_their_tenant_exactly_when_tenancy_is_on() -> None:
    on, off = Settings(tenant_key="workspace"), Settings()
    assert on.tenant_scope("acme") == "acme" and off.tenant_scope(None) == ""
    with pytest.raises(ConfigError, match="name the tenant"):
        on.tenant_scope(None)
    with pytest.raises(ConfigError, match="is not 1-63"):
        on.tenant_scope("a b")
    with pytest.raises(ConfigError, match="tenancy is off"):
        off.tenant_scope("acme")
    with pytest.raises(ValueError, match="MongoDB reads as a path"):
        Settings(tenant_key="meta.workspace")


def test_a_tenants_console_needs_tenancy_and_a_tenant_name() -> None:
    assert Settings(tenant_key="workspace", ui_tenant="acme").ui_tenant == "acme"
    with pytest.raises(ValueError, match="tenancy is off"):
        Settings(ui_tenant="acme")
    with pytest.raises(ValueError, match="is not 1-63"):
        Settings(tenant_key="workspace", ui_tenant="ac me")
