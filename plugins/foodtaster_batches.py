"""Foodtaster's page in the Airflow UI: every dataset's recent batches and trend, and one
batch's reasons and samples.

An Airflow 3 plugin: a FastAPI app served by the api-server under /foodtaster/, shown
in the UI's Browse menu as an external view (an iframe). The pages are rendered by
foodtaster.ops.pages from the lake; only a logged-in Airflow user sees them (the same
session cookie or token as the UI's own API).
"""

from __future__ import annotations

from airflow.api_fastapi.core_api.security import get_user
from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse, Response

URL_PREFIX = "/foodtaster"
app = FastAPI(title="Foodtaster batches", dependencies=[Depends(get_user)])


def _context():
    # Read at each request, not at import: the registry and lake are files a person edits.
    from foodtaster.registry import lake_root, load_registry
    from foodtaster.state.lake import Lake

    return Lake(lake_root()), load_registry()


@app.get("/", response_class=HTMLResponse)
def batches() -> str:
    from foodtaster.ops.pages import batches_page

    lake, datasets = _context()
    return batches_page(lake, datasets)


@app.get("/datasets/{dataset}/batches/{batch_id}", response_class=HTMLResponse)
def batch(dataset: str, batch_id: str) -> str:
    from foodtaster.ops.pages import PageNotFound, batch_page

    lake, datasets = _context()
    try:
        return batch_page(lake, datasets, dataset, batch_id)
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
    fastapi_apps = [{"app": app, "url_prefix": URL_PREFIX, "name": "Foodtaster batches"}]
    external_views = [{
        "name": "Foodtaster batches",
        "href": f"{URL_PREFIX}/",
        "url_route": "foodtaster",
        "destination": "nav",
        "category": "browse",
    }]
