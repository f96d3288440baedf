"""HTTP to the coordinator: JSON bodies, timeouts on every call, jittered retries, Retry-After
on 429, and SigV4 signing for a deployed API (IAM auth). Standard library plus botocore (which
boto3 already brings) only."""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .errors import CoordinatorUnavailable, GroupcoordError, InvalidRequest

RETRYABLE_STATUS = {429, 500, 502, 503, 504}


@dataclass
class Reply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


class Transport:
    """POSTs `/v1/<api>` to a base URL; retries what is safe to retry."""

    def __init__(
        self,
        base_url: str,
        *,
        client_id: str = "groupcoord-client",
        timeout_s: float = 10.0,
        retries: int = 5,
        backoff_s: float = 0.05,
        max_backoff_s: float = 2.0,
        sign: bool | None = None,
        region: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        # A plain-HTTP local endpoint (groupcoord serve) is not signed; AWS endpoints are.
        self.sign = urlsplit(self.base_url).scheme == "https" if sign is None else sign
        self.region = region
        self._credentials: Any = None

    def with_base_url(self, base_url: str) -> Transport:
        clone = Transport(
            base_url,
            client_id=self.client_id,
            timeout_s=self.timeout_s,
            retries=self.retries,
            backoff_s=self.backoff_s,
            max_backoff_s=self.max_backoff_s,
            sign=self.sign,
            region=self.region,
        )
        clone._credentials = self._credentials
        return clone

    def call(self, api: str, body: dict[str, Any], *, timeout_s: float | None = None) -> Reply:
        """One API call: 200 and 202 are returned; 4xx raise; 429/5xx/network are retried."""
        deadline = time.monotonic() + (timeout_s or self.timeout_s) * (self.retries + 1)
        attempt = 0
        while True:
            attempt += 1
            try:
                reply = self._once(api, body, timeout_s or self.timeout_s)
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as error:
                if attempt > self.retries or time.monotonic() >= deadline:
                    raise CoordinatorUnavailable(f"{api}: {error}") from error
                self._sleep(attempt)
                continue
            if reply.status in (200, 202):
                return reply
            if reply.status in RETRYABLE_STATUS and attempt <= self.retries:
                retry_after = reply.headers.get("retry-after")
                self._sleep(attempt, float(retry_after) if retry_after else None)
                continue
            message = f"{api}: HTTP {reply.status}: {reply.body.get('errorMessage', reply.body)}"
            if reply.status == 400:
                raise InvalidRequest(message, status=400)
            if reply.status in RETRYABLE_STATUS:
                raise CoordinatorUnavailable(message, status=reply.status)
            raise GroupcoordError(message, status=reply.status)

    def _sleep(self, attempt: int, at_least_s: float | None = None) -> None:
        backoff = random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2**attempt))
        time.sleep(max(backoff, at_least_s or 0.0))

    def _once(self, api: str, body: dict[str, Any], timeout_s: float) -> Reply:
        url = f"{self.base_url}/v1/{api}"
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Kafka-Client-Id": self.client_id}
        if self.sign:
            headers = self._signed_headers(url, data, headers)
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return Reply(response.status, _json(response.read()), _lower(response.headers))
        except urllib.error.HTTPError as error:
            return Reply(error.code, _json(error.read()), _lower(error.headers))

    def _signed_headers(self, url: str, data: bytes, headers: dict[str, str]) -> dict[str, str]:
        """SigV4 for API Gateway (service execute-api) with botocore's credential chain."""
        import botocore.session
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        session = botocore.session.get_session()
        if self._credentials is None:
            self._credentials = session.get_credentials()
        if self._credentials is None:
            raise GroupcoordError("no AWS credentials found to sign the request with")
        region = self.region or session.get_config_variable("region") or "us-east-1"
        request = AWSRequest(method="POST", url=url, data=data, headers=headers)
        SigV4Auth(self._credentials.get_frozen_credentials(), "execute-api", region).add_auth(
            request
        )
        return dict(request.headers.items())


def _json(raw: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(raw or b"{}")
    except ValueError:
        return {"errorMessage": raw[:200].decode("utf-8", "replace")}
    return parsed if isinstance(parsed, dict) else {"body": parsed}


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in dict(headers or {}).items()}
