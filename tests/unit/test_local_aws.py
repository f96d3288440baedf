"""What a boto3 client gets for a loopback engine and for AWS (client/local_aws.py)."""

from __future__ import annotations

import pytest

from groupcoord.client.local_aws import AwsConfigMissing, client_arguments, local_defaults

LOCAL = "http://127.0.0.1:8000"


def test_a_loopback_endpoint_without_configuration_gets_dummies_and_says_so() -> None:
    arguments, note = client_arguments("dynamodb", endpoint_url=LOCAL, environ={"HOME": "/x"})
    assert arguments == {
        "endpoint_url": LOCAL,
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    assert note == f"dynamodb at {LOCAL} (loopback): dummy credentials and region us-east-1"


def test_configured_credentials_and_region_are_kept_on_loopback() -> None:
    environ = {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_REGION": "eu-west-1"}
    arguments, note = client_arguments("dynamodb", endpoint_url=LOCAL, environ=environ)
    assert arguments == {"endpoint_url": LOCAL, "region_name": "eu-west-1"} and note is None
    assert local_defaults(environ) == {}


def test_the_environments_endpoint_counts_and_a_given_region_is_not_replaced() -> None:
    environ = {"AWS_ENDPOINT_URL_KINESIS": "http://localhost:4568", "HOME": "/x"}
    arguments, note = client_arguments("kinesis", region="eu-west-2", environ=environ)
    assert arguments["region_name"] == "eu-west-2" and "endpoint_url" not in arguments
    assert note == "kinesis at http://localhost:4568 (loopback): dummy credentials"


def test_aws_without_a_region_is_one_line_naming_what_to_set(tmp_path: object) -> None:
    with pytest.raises(AwsConfigMissing) as missing:
        client_arguments("dynamodb", environ={"HOME": str(tmp_path)})
    assert "AWS_REGION" in str(missing.value) and "\n" not in str(missing.value)
    arguments, note = client_arguments("dynamodb", environ={"AWS_DEFAULT_REGION": "eu-west-1"})
    assert arguments == {"region_name": "eu-west-1"} and note is None
