"""AWS settings for a boto3 client, on the standard library: a local engine (DynamoDB Local,
kinesis-local, LocalStack) on a loopback address takes any credentials and region, so a
machine without AWS configuration gets dummy ones there (and is told so); against AWS, a
missing region is one line naming what to set, before any request.

`serve`, the Kinesis client and the examples all decide here."""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from ipaddress import ip_address
from urllib.parse import urlsplit

DUMMY_ACCESS_KEY = "testing"
DUMMY_SECRET_KEY = "testing"
DEFAULT_REGION = "us-east-1"
CREDENTIALS_HINT = (
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (a profile of "
    "~/.aws/credentials), or run where an instance or task role applies"
)
REGION_HINT = "set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region in ~/.aws/config)"


class AwsConfigMissing(Exception):
    """What to set, in one line."""


def is_loopback(url: str | None) -> bool:
    host = urlsplit(url or "").hostname or ""
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_from_environment(service: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The endpoint boto3 itself takes from the environment for `service`
    (AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL)."""
    key = "AWS_ENDPOINT_URL_" + service.upper().replace("-", "_")
    return environ.get(key) or environ.get("AWS_ENDPOINT_URL") or None


def _has_credentials(environ: Mapping[str, str]) -> bool:
    return bool(environ.get("AWS_ACCESS_KEY_ID") and environ.get("AWS_SECRET_ACCESS_KEY"))


def _configured_region(environ: Mapping[str, str]) -> str | None:
    return environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or None


def local_defaults(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment variables a loopback engine needs that `environ` lacks (credentials
    set in the environment are kept)."""
    missing: dict[str, str] = {}
    if not _has_credentials(environ):
        missing["AWS_ACCESS_KEY_ID"] = DUMMY_ACCESS_KEY
        missing["AWS_SECRET_ACCESS_KEY"] = DUMMY_SECRET_KEY
    if not _configured_region(environ):
        missing["AWS_DEFAULT_REGION"] = DEFAULT_REGION
    return missing


def ensure_local_defaults(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """A process that talks only to loopback engines (`serve`): the dummy settings put into
    its environment; returns those it set."""
    missing = local_defaults(environ)
    environ.update(missing)
    return missing


def client_arguments(
    service: str,
    endpoint_url: str | None = None,
    region: str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> tuple[dict[str, str], str | None]:
    """boto3.client(service, **arguments) for `endpoint_url` (else the environment's), and a
    note saying which dummy settings a loopback endpoint got (None: none). Raises
    AwsConfigMissing when a region is needed and none is known; credentials against AWS are
    left to boto3's chain (a profile, a role), `CREDENTIALS_HINT` says what to set when it
    finds none."""
    endpoint = endpoint_url or endpoint_from_environment(service, environ)
    arguments: dict[str, str] = {}
    if endpoint_url:
        arguments["endpoint_url"] = endpoint_url
    region = region or _configured_region(environ)
    if not is_loopback(endpoint):
        if region is None and not _profile_configured(environ):
            raise AwsConfigMissing(f"no AWS region for {service}: {REGION_HINT}")
        if region is not None:
            arguments["region_name"] = region
        return arguments, None
    dummies = local_defaults(environ)
    arguments["region_name"] = region or DEFAULT_REGION
    if "AWS_ACCESS_KEY_ID" in dummies:
        arguments["aws_access_key_id"] = DUMMY_ACCESS_KEY
        arguments["aws_secret_access_key"] = DUMMY_SECRET_KEY
    said = ["credentials"] if "AWS_ACCESS_KEY_ID" in dummies else []
    if region is None:
        said.append(f"region {DEFAULT_REGION}")
    note = f"{service} at {endpoint} (loopback): dummy {' and '.join(said)}" if said else None
    return arguments, note


def _profile_configured(environ: Mapping[str, str]) -> bool:
    """A profile or config file that may hold the region: boto3 reads it (no request)."""
    if environ.get("AWS_PROFILE") or environ.get("AWS_CONFIG_FILE"):
        return True
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.exists(os.path.join(home, ".aws", "config"))
