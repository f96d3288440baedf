"""The end-to-end suite: the client library, the admin CLI and the example worker against
`groupcoord serve` over HTTP, with the short timers of `helpers.SETTINGS`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.helpers import SETTINGS
from tests.support.servers import running_service


@pytest.fixture(scope="session")
def coordinator(service_endpoint: str | None) -> Iterator[str]:
    """One `groupcoord serve` with the e2e timers for the tests that share it (they use
    unique group and topic names); yields its base URL."""
    with running_service(service_endpoint, settings=SETTINGS) as url:
        yield url
