"""A small W3C WebDriver client for Debian's chromium through chromedriver (selenium is not
in the environment): start, go to a page, read text, run a script, take a screenshot.

The browser is headless, sandbox-free (tests run as root), and silent on the network:
this machine's network is closed, so nothing may wait on a background fetch.
"""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import requests

from foodtaster_dev.localenv import free_port, start_group, stop_group, wait_for_http

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1000"]


def browser_binaries() -> tuple[str | None, str | None]:
    """Debian's chromium and chromedriver, where installed (`make browser-tools`)."""
    return shutil.which("chromium"), shutil.which("chromedriver")


class WebDriverError(RuntimeError):
    pass


class Browser:
    """One chromium session; a context manager that stops chromedriver's process group."""

    def __init__(self, chromium: str, chromedriver: str, log: Path) -> None:
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        self.process = start_group([chromedriver, f"--port={self.port}"], dict(os.environ), log)
        self.url = f"http://127.0.0.1:{self.port}"
        self.session = None
        try:
            wait_for_http(f"{self.url}/status", timeout=30, process=self.process, log=log)
            options = {"binary": chromium, "args": [*CHROMIUM_ARGS, f"--user-data-dir={self.profile}"]}
            answer = self._call("POST", "/session", {"capabilities": {"alwaysMatch": {
                "browserName": "chrome", "goog:chromeOptions": options}}}, in_session=False)
            self.session = answer["sessionId"]
        except BaseException:
            self.close()
            raise

    def _call(self, method: str, path: str, body: dict | None = None, *,
              in_session: bool = True) -> Any:
        url = f"{self.url}/session/{self.session}{path}" if in_session else f"{self.url}{path}"
        response = requests.request(method, url, json=body if body is not None else
                                    ({} if method == "POST" else None), timeout=60)
        value = response.json().get("value")
        if response.status_code >= 400:
            raise WebDriverError(f"{method} {path}: {response.status_code} {value}")
        return value

    def go(self, url: str) -> None:
        self._call("POST", "/url", {"url": url})

    def back(self) -> None:
        self._call("POST", "/back")

    def find(self, css: str) -> str:
        return self._call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def find_all(self, css: str) -> list[str]:
        return [e[ELEMENT] for e in self._call("POST", "/elements", {"using": "css selector",
                                                                      "value": css})]

    def text(self, element: str) -> str:
        return self._call("GET", f"/element/{element}/text")

    def type(self, element: str, text: str) -> None:
        self._call("POST", f"/element/{element}/value", {"text": text})

    def clear(self, element: str) -> None:
        self._call("POST", f"/element/{element}/clear")

    def click(self, element: str) -> None:
        self._call("POST", f"/element/{element}/click")

    def frame(self, element: str | None) -> None:
        """Switch into an iframe element, or back to the top page with None."""
        self._call("POST", "/frame", {"id": {ELEMENT: element} if element else None})

    def script(self, source: str, *args: Any) -> Any:
        return self._call("POST", "/execute/sync", {"script": source, "args": list(args)})

    @property
    def current_url(self) -> str:
        return self._call("GET", "/url")

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(base64.b64decode(self._call("GET", "/screenshot")))
        return path

    def close(self) -> None:
        try:
            if self.session:
                self._call("DELETE", "")
        except (requests.RequestException, WebDriverError):
            pass  # the browser is going away with chromedriver's process group anyway
        finally:
            stop_group(self.process, grace=5)
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
