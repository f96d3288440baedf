"""The client signs for the front door its URL names: a function URL for service `lambda`, an
HTTP API (or a custom domain in front of one) for `execute-api`, each in the URL's region
unless a region is given. Signing is local: no request is sent."""

from __future__ import annotations

import re

import pytest

from groupcoord.client.sigv4 import Signer, signing_scope

FUNCTION_URL = "https://abcdefghij0123456789klmnopqrstuv.lambda-url.eu-west-1.on.aws"
HTTP_API = "https://a1b2c3d4e5.execute-api.ap-southeast-2.amazonaws.com"


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")


def _scope(headers: dict[str, str]) -> tuple[str, str]:
    """(region, service) of the Authorization header's credential scope."""
    match = re.search(r"Credential=AKIDEXAMPLE/\d{8}/([a-z0-9-]+)/([a-z-]+)/aws4_request",
                      headers["Authorization"])  # fmt: skip
    assert match, headers["Authorization"]
    return match[1], match[2]


@pytest.mark.parametrize(
    ("url", "scope"),
    [
        (FUNCTION_URL, ("lambda", "eu-west-1")),
        (FUNCTION_URL + "/", ("lambda", "eu-west-1")),
        (HTTP_API, ("execute-api", "ap-southeast-2")),
        (
            "https://a1b2c3d4e5.execute-api.cn-north-1.amazonaws.com.cn",
            ("execute-api", "cn-north-1"),
        ),
        ("https://coordinator.example.com", ("execute-api", None)),
        ("http://127.0.0.1:8080", ("execute-api", None)),
    ],
)
def test_the_signing_scope_is_read_off_the_host(url: str, scope: tuple[str, str | None]) -> None:
    assert signing_scope(url) == scope


def test_a_function_url_is_signed_for_lambda_in_its_region(credentials: None) -> None:
    headers = Signer(None).sign(f"{FUNCTION_URL}/v1/heartbeat", b"{}", {})
    assert _scope(headers) == ("eu-west-1", "lambda")
    assert "x-amz-date" in {k.lower() for k in headers}


def test_an_http_api_is_signed_for_execute_api_in_its_region(credentials: None) -> None:
    headers = Signer(None).sign(f"{HTTP_API}/v1/heartbeat", b"{}", {})
    assert _scope(headers) == ("ap-southeast-2", "execute-api")


def test_a_custom_domain_takes_the_profiles_region(credentials: None) -> None:
    headers = Signer(None).sign("https://coordinator.example.com/v1/heartbeat", b"{}", {})
    assert _scope(headers) == ("us-west-2", "execute-api")


def test_a_given_region_wins(credentials: None) -> None:
    headers = Signer("us-east-2").sign(f"{FUNCTION_URL}/v1/heartbeat", b"{}", {})
    assert _scope(headers) == ("us-east-2", "lambda")
