"""A plain HTTP client of the contract, as any user's code would call it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


# The header the tests' coordinators take the caller's principal from (serve
# --principal-header), when they are started with it.
PRINCIPAL_HEADER = "X-Test-Principal"


class Api:
    def __init__(
        self, base_url: str, client_id: str = "test-client", principal: str | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.client_id = client_id
        self.session = requests.Session()
        if principal is not None:
            self.session.headers[PRINCIPAL_HEADER] = principal

    def call(
        self,
        api: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        method: str = "POST",
        headers: dict[str, str] | None = None,
    ) -> Answer:
        all_headers = {"Kafka-Client-Id": self.client_id, **(headers or {})}
        if raw is None and body is not None:
            response = self.session.request(
                method, f"{self.base_url}/v1/{api}", json=body, headers=all_headers, timeout=30
            )
        else:
            response = self.session.request(
                method, f"{self.base_url}/v1/{api}", data=raw, headers=all_headers, timeout=30
            )
        try:
            parsed = response.json()
        except ValueError:
            parsed = response.text
        return Answer(response.status_code, parsed, dict(response.headers))

    def ok(self, api: str, body: Any) -> dict[str, Any]:
        """Call and insist on a 200: the Kafka response body."""
        answer = self.call(api, body)
        assert answer.status == 200, (answer.status, answer.body)
        return answer.body
