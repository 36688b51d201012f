"""`GET /dashboard`: the single-page dashboard (plain HTML; its JS and CSS are served from /static).

Serves a packaged template only; it reads no warehouse data and imports nothing from service.build_job.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter(tags=["dashboard"])


@lru_cache(maxsize=1)
def _page() -> str:
    return (resources.files("service.api") / "templates" / "dashboard.html").read_text(encoding="utf-8")


@router.get("/dashboard", response_class=HTMLResponse, include_in_schema=False)
def dashboard() -> HTMLResponse:
    """The dashboard page; every figure on it is fetched by its JS from the /v1 API (with the user's token)."""
    # no-cache: a redeployed service must not keep serving an old page that calls renamed assets.
    return HTMLResponse(_page(), headers={"Cache-Control": "no-cache"})
