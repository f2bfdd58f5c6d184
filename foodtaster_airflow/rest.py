"""Airflow 3's REST API (`/api/v2`): the self-pause and the run note go through the official
client (`apache-airflow-client`, versioned with Airflow: 3.3.2 here); tests use `request`
for what they read (runs, task instances, backfills).

Authentication: `POST /auth/token` with a user and password gives a JWT (the simple
auth manager and FAB both serve it); without a user, `GET /auth/token` works when
`simple_auth_manager_all_admins` is on. The official client takes the token as its
`access_token`; it has no call for `/auth/token` itself, so getting the token stays here.
"""

from __future__ import annotations

from typing import Any

import requests

from foodtaster.errors import Failed

API_CONN_ID = "airflow_api"  # an HTTP connection to the api-server, with a user allowed to pause


class AirflowApiError(Failed):
    """The API answered with an error (`status`, its HTTP status, where it answered) or not at all."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


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
                f"Airflow API: {what} -> HTTP {response.status_code}: {response.text[:500]}",
                status=response.status_code,
            )

    def client(self) -> Any:
        """The official client's ApiClient, signed in with this API's token."""
        from airflow_client.client import ApiClient, Configuration

        return ApiClient(Configuration(host=self.base_url, access_token=self.token()))

    def set_paused(self, dag_id: str, paused: bool = True) -> dict[str, Any]:
        """Pause (or unpause) a DAG: `PATCH /api/v2/dags/{dag_id}?update_mask=is_paused`."""
        from airflow_client.client import ApiException, DAGApi, DAGPatchBody

        try:
            with self.client() as client:
                dag = DAGApi(client).patch_dag(
                    dag_id, DAGPatchBody(is_paused=paused), update_mask=["is_paused"],
                    _request_timeout=self.timeout,
                )
        except ApiException as err:
            raise AirflowApiError(
                f"Airflow API: pause {dag_id} -> HTTP {err.status}: {str(err.body)[:500]}"
            ) from None
        return dag.to_dict()

    def set_note(self, dag_id: str, run_id: str, note: str) -> None:
        """Set a run's note: `PATCH /api/v2/dags/{dag_id}/dagRuns/{run_id}?update_mask=note`.
        The run's answer is not read back (nothing here needs it). Signs in first: an API
        that is not there (`airflow dags test`) fails at once, not after importing the official
        client (a second or more of a task's time, for nothing)."""
        self.token()
        from airflow_client.client import ApiException, DagRunApi, DAGRunPatchBody

        try:
            with self.client() as client:
                response = DagRunApi(client).patch_dag_run_without_preload_content(
                    dag_id, run_id, DAGRunPatchBody(note=note), update_mask=["note"],
                    _request_timeout=self.timeout,
                )
        except ApiException as err:
            raise AirflowApiError(
                f"Airflow API: note on {dag_id} {run_id} -> HTTP {err.status}: "
                f"{str(err.body)[:500]}", status=err.status,
            ) from None
        if response.status >= 400:
            raise AirflowApiError(f"Airflow API: note on {dag_id} {run_id} -> HTTP "
                                  f"{response.status}: {response.data[:500]!r}", status=response.status)

    def clear_task(self, dag_id: str, run_id: str, task_id: str) -> int:
        """Clear one failed task of a run, as the UI's Clear does (`POST /api/v2/dags/{dag_id}/
        clearTaskInstances`): the scheduler runs it again and the run's state follows. Returns
        the task instances cleared (0 when the task had not failed)."""
        self.token()
        from airflow_client.client import (
            ApiException,
            ClearTaskInstancesBody,
            ClearTaskInstancesBodyTaskIdsInner,
            TaskInstanceApi,
        )

        body = ClearTaskInstancesBody(dag_run_id=run_id, only_failed=True,
                                      task_ids=[ClearTaskInstancesBodyTaskIdsInner(actual_instance=task_id)],
                                      dry_run=False, reset_dag_runs=True)
        try:
            with self.client() as client:
                cleared = TaskInstanceApi(client).post_clear_task_instances(
                    dag_id, body, _request_timeout=self.timeout)
        except ApiException as err:
            raise AirflowApiError(
                f"Airflow API: clear {task_id} of {dag_id} {run_id} -> HTTP {err.status}: "
                f"{str(err.body)[:500]}"
            ) from None
        return int(cleared.total_entries or 0)

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
