"""Real loopback servers for tests: an SMTP sink and an HTTP webhook sink.

Both bind 127.0.0.1 on a free port chosen by the OS, collect what they
receive, and stop when their `with` block ends, whatever the outcome, so
tests exercise the real protocol clients (smtplib, urllib) without mocks.
"""

from __future__ import annotations

import email
import email.policy
import threading
from collections.abc import Callable
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

LOOPBACK = "127.0.0.1"


class _FreePortController(Controller):
    """aiosmtpd's Controller bound to port 0: learns the port the OS chose before it
    connects to itself to check the server is up."""

    def _trigger_server(self) -> None:
        self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()


class SmtpSink:
    """An SMTP server that keeps every message it receives.

    `messages` holds the parsed messages, `envelopes` the (MAIL FROM, RCPT TO)
    pairs. With `credentials` ({login: password}) it demands AUTH (over plain
    SMTP, as a test relay may) and refuses other logins.
    """

    def __init__(self, credentials: dict[str, str] | None = None) -> None:
        self.credentials = credentials
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.host = LOOPBACK
        self.port = 0
        self._controller: Controller | None = None

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        self.messages.append(
            email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        )
        return "250 Message accepted for delivery"

    def _authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any
    ) -> AuthResult:
        ok = isinstance(auth_data, LoginPassword) and self.credentials is not None and (
            self.credentials.get(auth_data.login.decode()) == auth_data.password.decode()
        )
        return AuthResult(success=ok, handled=False)  # not handled: aiosmtpd answers 535

    def __enter__(self) -> SmtpSink:
        auth: dict[str, Any] = {}
        if self.credentials is not None:
            auth = {"auth_required": True, "auth_require_tls": False,
                    "authenticator": self._authenticate}
        self._controller = _FreePortController(self, hostname=LOOPBACK, port=0, **auth)
        try:
            self._controller.start()
        except BaseException:
            self._controller.stop(no_assert=True)
            raise
        self.port = self._controller.port
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None


class WebhookSink:
    """An HTTP server that keeps every POST and answers with `status` (settable any time).

    `requests` holds (path, headers, body bytes); `url` is its base URL.
    """

    def __init__(self, status: int = 200, body: bytes = b"ok") -> None:
        self.status = status
        self.body = body
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("WebhookSink is not running; use it in a with block")
        return f"http://{LOOPBACK}:{self._server.server_address[1]}"

    def _handler(self) -> Callable[..., BaseHTTPRequestHandler]:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                sink.requests.append((self.path, dict(self.headers.items()), body))
                self.send_response(sink.status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(sink.body)))
                self.end_headers()
                self.wfile.write(sink.body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                """Quiet: pytest shows what the test asserts, not an access log."""

        return Handler

    def __enter__(self) -> WebhookSink:
        self._server = ThreadingHTTPServer((LOOPBACK, 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None
