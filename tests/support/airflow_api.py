"""A loopback HTTP server answering as Airflow's REST API does: a token (POST /auth/token),
a run note's PATCH, a clear's POST (one task instance cleared). It records every request."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeAirflowApi:
    """Started on entering (or `start`), shut on leaving (or `close`); `requests` holds
    (method, path, JSON body) of each request, in order."""

    def __init__(self, failed_patches: int = 0) -> None:
        """`failed_patches`: the first PATCHes answered with HTTP 500, as Airflow's API answers
        when its SQLite database stays locked."""
        self.requests: list[tuple[str, str, dict]] = []
        seen = self.requests
        failing = [failed_patches]

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, body: dict, status: int = 200) -> None:
                sent = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                seen.append((self.command, self.path, sent))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                if self.path == "/auth/token":
                    self._answer({"access_token": "t0ken"})
                else:
                    self._answer({"task_instances": [], "total_entries": 1})

            def do_PATCH(self) -> None:  # noqa: N802
                if failing[0] > 0:
                    failing[0] -= 1
                    self._answer({"detail": {"reason": "Database error"}}, status=500)
                else:
                    self._answer({"note": "set"})

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeAirflowApi:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeAirflowApi:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()
