"""`/docs` (Swagger UI) and `/redoc` render on a host with no internet (issue 33, item 3): headless Chromium with
every request to a host other than the service's loopback address aborted. The operations they must show are the
service's own `/openapi.json`'s.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def offline(browser, start_service, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A service with an empty warehouse (the docs need no table) and a browser context that reaches it only."""
    with start_service(tmp_path_factory.mktemp("api-docs") / "wh") as (url, http):
        spec = http.get("/openapi.json").raise_for_status().json()
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        here = urlsplit(url).netloc
        elsewhere: list[tuple[str, str]] = []   # (resource type, url) of every request that left the service

        def only_here(route: Any) -> None:
            if urlsplit(route.request.url).netloc == here:
                route.continue_()
            else:
                elsewhere.append((route.request.resource_type, route.request.url))
                route.abort()

        context.route("**/*", only_here)
        try:
            yield {"url": url, "spec": spec, "context": context, "elsewhere": elsewhere}
        finally:
            context.close()


def test_swagger_ui_renders_every_operation_offline(offline: dict[str, Any]) -> None:
    page = offline["context"].new_page()
    page.set_default_timeout(20_000)
    page.goto(f"{offline['url']}/docs")
    page.locator(".opblock-summary-path[data-path='/v1/tables']").first.wait_for(state="visible")
    shown = page.eval_on_selector_all(
        ".opblock", "els => els.map(e => [e.className, e.querySelector('.opblock-summary-path').dataset.path])")
    rendered = {(method, path) for classes, path in shown
                for method in [c.removeprefix("opblock-") for c in classes.split() if c.startswith("opblock-")]}
    assert rendered == {(m, p) for p, ops in offline["spec"]["paths"].items() for m in ops}
    assert offline["elsewhere"] == [], "Swagger UI asked another host for something"


def test_redoc_renders_every_operation_offline(offline: dict[str, Any]) -> None:
    page = offline["context"].new_page()
    page.set_default_timeout(20_000)
    page.goto(f"{offline['url']}/redoc")
    page.locator("[data-section-id^='operation/']").first.wait_for(state="visible")
    ids = page.eval_on_selector_all("[data-section-id^='operation/']", "els => els.map(e => e.dataset.sectionId)")
    assert set(ids) == {f"operation/{op['operationId']}" for ops in offline["spec"]["paths"].values()
                        for op in ops.values()}
    listing = offline["spec"]["paths"]["/v1/tables"]["get"]
    section = page.locator(f"[data-section-id='operation/{listing['operationId']}']")
    section.scroll_into_view_if_needed()
    assert section.locator("h2").inner_text() == listing["summary"]
    # ReDoc's side menu ends with Redocly's logo from their CDN, hidden when it fails to load; scripts, styles and
    # fonts (everything the page needs) come from the service.
    assert {kind for kind, _ in offline["elsewhere"]} <= {"image"}, offline["elsewhere"]
