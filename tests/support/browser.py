"""Debian's chromium driven by Playwright (the `playwright` package; `playwright install` is not
used: the machine's network is closed, so it launches /usr/bin/chromium as its executable).

`Browser` is one headless session: `page` for Playwright's own calls (`frame_locator` reaches
into Airflow's frame as a user's click does, `get_by_role` finds what a person reads), and a
few short calls the page tests share: go to a page, find elements in the current frame, read
their text, run a script, take a screenshot. The browser is sandbox-free (tests run as root)
and silent on the network: nothing may wait on a background fetch.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from playwright.sync_api import ElementHandle, Frame, Page, sync_playwright
from playwright.sync_api import Error as PlaywrightError

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                 "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1400, "height": 1000}


def chromium_binary() -> str | None:
    """Debian's chromium, where installed (`make browser-tools`)."""
    return shutil.which("chromium")


class BrowserError(RuntimeError):
    """What the browser could not do: an element not there, a script that threw."""


class Browser:
    """One chromium session; a context manager that closes the browser and Playwright's driver."""

    def __init__(self, chromium: str) -> None:
        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            self.page: Page = self._browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
        except BaseException:
            self._playwright.stop()
            raise
        self._frame: Frame = self.page.main_frame

    def go(self, url: str) -> None:
        self.page.goto(url)
        self._frame = self.page.main_frame

    def back(self) -> None:
        self.page.go_back()
        self._frame = self.page.main_frame

    def find(self, css: str) -> ElementHandle:
        """The first element `css` selects in the current frame; BrowserError when none is."""
        found = self._frame.query_selector(css)
        if found is None:
            raise BrowserError(f"no element {css!r} in {self._frame.url}")
        return found

    def find_all(self, css: str) -> list[ElementHandle]:
        return self._frame.query_selector_all(css)

    @staticmethod
    def text(element: ElementHandle) -> str:
        return element.inner_text()

    @staticmethod
    def type(element: ElementHandle, text: str) -> None:
        element.type(text)

    @staticmethod
    def clear(element: ElementHandle) -> None:
        element.fill("")

    @staticmethod
    def click(element: ElementHandle) -> None:
        element.click()

    def frame(self, element: ElementHandle | None) -> None:
        """Into an iframe element's document, or back to the top page with None."""
        inner = element.content_frame() if element is not None else None
        if element is not None and inner is None:
            raise BrowserError("the element is no frame")
        self._frame = inner or self.page.main_frame

    def script(self, source: str, *args: Any) -> Any:
        """A function body run in the current frame, its arguments `arguments[0]`... (elements too)."""
        try:
            return self._frame.evaluate(f"function (args) {{ return (function () {{ {source} }}).apply("
                                        "null, args); }", list(args))
        except PlaywrightError as err:
            raise BrowserError(str(err)) from err

    @property
    def current_url(self) -> str:
        """The window's address as its document reads it (a history change the UI makes for its
        frame included)."""
        return self.page.main_frame.evaluate("location.href")

    def screenshot(self, path: Path) -> Path:
        self.page.screenshot(path=str(path))
        return path

    def close(self) -> None:
        try:
            self._browser.close()
        finally:
            self._playwright.stop()  # its driver process ends, and the browser with it

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
