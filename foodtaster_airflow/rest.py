"""A small client of Airflow 3's REST API (`/api/v2`), for the self-pause and for tests.

Authentication: `POST /auth/token` with a user and password gives a JWT (the simple
auth manager and FAB both serve it); without a user, `GET /auth/token` works when
`simple_auth_manager_all_admins` is on.
"""

from __future__ import annotations

from typing import Any

import requests

API_CONN_ID = "airflow_api"  # an HTTP connection to the api-server, with a user allowed to pause


class AirflowApiError(RuntimeError):
    pass


class AirflowApi:
    def __init__(
        self, base_url: str, username: str | None = None, password: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self.timeout = timeout
        self._token: str | None = None

    @classmethod
    def from_connection(cls, conn: Any) -> AirflowApi:
        """From an Airflow connection: `http://user:password@host:8080` (or extra base_url)."""
        extra = conn.extra_dejson or {}
        base_url = extra.get("base_url")
        if not base_url:
            host = conn.host or "localhost"
            if "://" in host:
                base_url = host
            else:
                scheme = "https" if conn.conn_type == "https" else "http"
                base_url = f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")
        return cls(base_url, conn.login or None, conn.password or None)

    def token(self) -> str:
        if self._token is None:
            if self.username:
                response = requests.post(
                    f"{self.base_url}/auth/token",
                    json={"username": self.username, "password": self.password or ""},
                    timeout=self.timeout,
                )
            else:
                response = requests.get(f"{self.base_url}/auth/token", timeout=self.timeout)
            self._check(response, "log in")
            self._token = response.json()["access_token"]
        return self._token

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = requests.request(
            method, f"{self.base_url}/api/v2/{path.lstrip('/')}",
            headers={"Authorization": f"Bearer {self.token()}"}, timeout=self.timeout, **kwargs,
        )
        self._check(response, f"{method} {path}")
        return response.json() if response.content else None

    @staticmethod
    def _check(response: requests.Response, what: str) -> None:
        if response.status_code >= 400:
            raise AirflowApiError(
                f"Airflow API: {what} -> HTTP {response.status_code}: {response.text[:500]}"
            )

    def set_paused(self, dag_id: str, paused: bool = True) -> dict[str, Any]:
        return self.request(
            "PATCH", f"dags/{dag_id}", params={"update_mask": "is_paused"},
            json={"is_paused": paused},
        )

    def dag(self, dag_id: str) -> dict[str, Any]:
        return self.request("GET", f"dags/{dag_id}")

    def create_backfill(
        self, dag_id: str, from_date: str, to_date: str, **options: Any
    ) -> dict[str, Any]:
        """A backfill over [from_date, to_date] (ISO dates or datetimes), as in the UI."""
        body = {"dag_id": dag_id, "from_date": _instant(from_date), "to_date": _instant(to_date)}
        return self.request("POST", "backfills", json={**body, **options})

    def backfill(self, backfill_id: int) -> dict[str, Any]:
        return self.request("GET", f"backfills/{backfill_id}")

    def dag_runs(self, dag_id: str) -> list[dict[str, Any]]:
        return self.request(
            "GET", f"dags/{dag_id}/dagRuns", params={"limit": 100, "order_by": "logical_date"}
        )["dag_runs"]

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        return self.request("GET", f"dags/{dag_id}/dagRuns/{run_id}/taskInstances")[
            "task_instances"
        ]


def _instant(value: str) -> str:
    return f"{value}T00:00:00Z" if len(value) == 10 else value
