"""Foodtaster's page in the Airflow UI: every dataset's recent batches and trend, one batch's
reasons and quarantined messages, and what the lake keeps of a batch for a person: its Data
Docs and its alerts.

An Airflow 3 plugin: a FastAPI app served by the api-server under /foodtaster/, shown in the
UI's Browse menu by a React app plugin (`foodtaster_batches.js`), which frames the pages in a
sandbox that lets a click open Airflow's own pages in the whole window; an external view's
frame forbids that (docs/decisions/019-the-batches-page-as-a-react-app-plugin.md). The pages
are rendered by foodtaster.ops.pages from the lake; only a logged-in Airflow user sees them
(the same session cookie or token as the UI's own API), and a quarantined message's raw bytes
only a user the auth manager lets read `Foodtaster raw payloads` (others: the masked view;
foodtaster_airflow.raw_payloads). An error is answered as a sentence on a page, never as JSON,
and never echoes a long value back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.core_api.security import get_user
from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

URL_PREFIX = "/foodtaster"
NAME = "Foodtaster batches"
VIEW_JS = Path(__file__).with_name("foodtaster_batches.js")
app = FastAPI(title=NAME, dependencies=[Depends(get_user)])


def _error_page(status: int, message: str) -> HTMLResponse:
    from foodtaster.ops.pages import error_page

    return HTMLResponse(error_page(status, message), status_code=status,
                        headers={"Cache-Control": "no-store"})


@app.exception_handler(StarletteHTTPException)
def _http_error(_request: Request, err: StarletteHTTPException) -> HTMLResponse:
    return _error_page(err.status_code, str(err.detail))


@app.exception_handler(RequestValidationError)
def _bad_request(_request: Request, err: RequestValidationError) -> HTMLResponse:
    from foodtaster.ops.shown import quoted

    problems = [f"{'/'.join(str(part) for part in e.get('loc', ())[1:]) or 'the request'}: "
                f"{e.get('msg', 'not valid')}" + (f" (got {quoted(e['input'])})" if "input" in e else "")
                for e in err.errors()[:3]]
    return _error_page(400, "; ".join(problems))


@app.get("/ui/batches-view.js")
def view_js() -> Response:
    """The React app Airflow's UI loads for the Browse menu's entry (no data: the pages it frames
    are read from the lake at each request)."""
    return Response(VIEW_JS.read_bytes(), media_type="text/javascript",
                    headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"})


def _context():
    # Read at each request, not at import: the registry and lake are files a person edits.
    from foodtaster.lake_paths import lake_root
    from foodtaster.registry import load_registry
    from foodtaster.state.lake import Lake

    return Lake(lake_root()), load_registry()


@app.get("/", response_class=HTMLResponse)
def batches() -> str:
    from foodtaster.ops.pages import batches_page

    lake, datasets = _context()
    return batches_page(lake, datasets)


def show_raw(user: Annotated[BaseUser, Depends(get_user)]) -> bool:
    """Whether this request's user may read raw payloads, as the auth manager says."""
    from airflow.api_fastapi.app import get_auth_manager

    from foodtaster_airflow.raw_payloads import may_read_raw

    return may_read_raw(get_auth_manager(), user)


@app.get("/datasets/{dataset}/batches/{batch_id}", response_class=HTMLResponse)
def batch(dataset: str, batch_id: str, raw: Annotated[bool, Depends(show_raw)],
          reason: str | None = Query(None), page: int = Query(1, ge=1)) -> str:
    from foodtaster.ops.pages import PageNotFound, batch_page

    lake, datasets = _context()
    try:
        return batch_page(lake, datasets, dataset, batch_id, reason=reason, page=page, show_raw=raw)
    except PageNotFound as err:
        raise HTTPException(status_code=404, detail=str(err)) from err


def _lake_file(found: tuple[bytes, str]) -> Response:
    from foodtaster.ops.lake_files import LAKE_PAGE_POLICY

    content, media_type = found
    return Response(content, media_type=media_type, headers={
        "Content-Security-Policy": LAKE_PAGE_POLICY, "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store"})


@app.get("/datasets/{dataset}/batches/{batch_id}/data-docs/{path:path}")
def data_docs(dataset: str, batch_id: str, path: str) -> Response:
    from foodtaster.ops.lake_files import data_docs_file
    from foodtaster.ops.pages import PageNotFound

    lake, datasets = _context()
    try:
        return _lake_file(data_docs_file(lake, datasets, dataset, batch_id, path))
    except PageNotFound as err:
        raise HTTPException(status_code=404, detail=str(err)) from err


@app.get("/datasets/{dataset}/alerts/{name}")
def alert(dataset: str, name: str) -> Response:
    from foodtaster.ops.lake_files import alert_file
    from foodtaster.ops.pages import PageNotFound

    lake, datasets = _context()
    try:
        return _lake_file(alert_file(lake, datasets, dataset, name))
    except PageNotFound as err:
        raise HTTPException(status_code=404, detail=str(err)) from err


@app.get("/datasets/{dataset}/trend.png")
def trend(dataset: str, since: str | None = Query(None), until: str | None = Query(None)) -> Response:
    from foodtaster.ops.pages import PageNotFound, trend_png

    lake, datasets = _context()
    try:
        png = trend_png(lake, datasets, dataset, since=since, until=until)
    except PageNotFound as err:
        raise HTTPException(status_code=404, detail=str(err)) from err
    except ValueError as err:  # a malformed or empty date range
        raise HTTPException(status_code=400, detail=str(err)) from err
    return Response(png, media_type="image/png", headers={"Cache-Control": "no-store"})


class FoodtasterPlugin(AirflowPlugin):
    name = "foodtaster"
    fastapi_apps = [{"app": app, "url_prefix": URL_PREFIX, "name": NAME}]
    react_apps = [{
        "name": NAME,
        "bundle_url": f"{URL_PREFIX}/ui/batches-view.js",
        "url_route": "foodtaster",
        "destination": "nav",
        "category": "browse",
    }]
