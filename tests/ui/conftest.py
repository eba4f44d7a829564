from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from support.browser import Browser, find_chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """A headless Chromium (Debian's ``chromium``); CI sets COREMODELS_REQUIRE_BROWSER=1 so it never skips."""
    chromium = find_chromium()
    if chromium is None:
        message = (
            "no headless Chromium: install Debian's `chromium` package (apt-get install -y chromium) "
            "or point COREMODELS_CHROMIUM at a Chromium binary"
        )
        if os.environ.get("COREMODELS_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " (COREMODELS_REQUIRE_BROWSER=1: the browser tests may not skip)")
        pytest.skip(message)
    with Browser(chromium) as instance:
        yield instance
