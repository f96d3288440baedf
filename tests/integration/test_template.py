"""template.yaml against the code it deploys, offline (no AWS account, no SAM CLI).

- The SAM template is transformed to CloudFormation with aws-sam-translator.
- The DynamoDB table is created by moto's CloudFormation and compared with
  `groupcoord.store.schema.table_definition()`.
- The HTTP API's routes are compared with `groupcoord.http.apis.APIS`; both front doors
  (FrontDoor HttpApi and FunctionUrl) are checked as CloudFormation would deploy them, with
  the conditions evaluated (`_deployed`).
- Each function's CodeUri + Handler is imported the way Lambda imports it (code directory and
  layer on sys.path, the template's environment) in a fresh interpreter.
- Every environment variable is a known setting, and the parameter defaults are the code's.
- Every function role grants only item-level DynamoDB actions on this table.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

from groupcoord.http.apis import APIS, DEFAULT_ROUTE_FUNCTION, FUNCTION_APIS, ROUTER
from groupcoord.settings import Settings, env_var_name
from groupcoord.store import schema

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"
TABLE_NAME = "groupcoord-template-test"
# What a resource's id stands in for in a resolved environment (the push channel's URLs).
RESOURCE_ID = "a1b2c3d4e5"
PUSH_URL = f"wss://{RESOURCE_ID}.execute-api.{REGION}.amazonaws.com/push"
PUSH_CONNECTIONS = f"https://{RESOURCE_ID}.execute-api.{REGION}.amazonaws.com/push"

# Environment variables that are not coordinator settings.
POWERTOOLS_VARS = {
    "POWERTOOLS_SERVICE_NAME",
    "POWERTOOLS_METRICS_NAMESPACE",
    "POWERTOOLS_LOG_LEVEL",
    "POWERTOOLS_TRACER_CAPTURE_RESPONSE",
    "POWERTOOLS_TRACER_CAPTURE_ERROR",
    "POWERTOOLS_TRACE_DISABLED",
}
SETTING_VARS = {env_var_name(name): name for name in Settings.names()}

# Item-level actions a function may be granted. Transactions are authorized per contained
# operation (TransactWriteItems: PutItem/UpdateItem/DeleteItem/ConditionCheckItem,
# TransactGetItems: GetItem), so they need no actions of their own.
ALLOWED_DYNAMODB_ACTIONS = {
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
}
# The secondary indexes each function queries (groupcoord.store: groups.py lists groups
# through the listing index, sweeper.py finds overdue deadlines through the deadlines index).
# Every other function reads the table only. "*" would mean any index of the table.
INDEX_READERS = {
    "admin": {schema.LISTING_INDEX},
    ROUTER: {schema.LISTING_INDEX},
    "sweeper": {schema.DEADLINE_INDEX},
}
# The functions an offset-commit runs in, so the only ones that may write the sink tables.
COMMITTERS = {"offsets", ROUTER}
# The functions that sync a Kinesis-backed topic's shards: create-topics (admin), a consumer
# group's target install and a classic join (membership), a commit of a shard's end naming
# children the registry lacks (offsets), the sweeper's schedule.
KINESIS_SYNCERS = {"membership", "offsets", "admin", "sweeper", ROUTER}
# The functions that post push notices (docs/sessions.md, "Push"), so the only ones granted
# execute-api:ManageConnections: a request that changes what members should do (membership:
# installs, releases, rebalances, shutdown requests; offsets: a committed shard end; admin: a
# topic change, members removed; the router: all of them), the sweeper's expiries and late
# topic changes, and the push function's disconnect grace.
NOTIFIERS = {"membership", "offsets", "admin", "sweeper", "push", ROUTER}
PUSH = "push"
FRONT_DOORS = ("HttpApi", "FunctionUrl")
EXPECTED_MANAGED_POLICIES = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
}


class _NoManagedPolicies:
    """ManagedPolicyLoader stand-in: the template names no managed policies, so no IAM call."""

    def load(self) -> dict[str, str]:
        return {}


def _sam_template() -> dict[str, Any]:
    return yaml_parse(TEMPLATE.read_text())


def _serverless_functions(template: dict[str, Any]) -> dict[str, str]:
    """Function name (directory under functions/) -> logical id, from each CodeUri."""
    found = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            code_uri = resource["Properties"]["CodeUri"]
            match = re.fullmatch(r"functions/([a-z_]+)/?", code_uri)
            assert match, f"{logical_id}: CodeUri {code_uri!r} is not functions/<name>/"
            found[match.group(1)] = logical_id
    return found


FUNCTION_NAMES = sorted(_serverless_functions(_sam_template()))


@pytest.fixture(scope="module")
def sam_template() -> dict[str, Any]:
    return _sam_template()


@pytest.fixture(scope="module")
def functions(sam_template) -> dict[str, str]:
    return _serverless_functions(sam_template)


@pytest.fixture(scope="module")
def cfn(sam_template) -> dict[str, Any]:
    """The template as CloudFormation sees it after the SAM transform."""
    return _transform(sam_template)


def _transform(sam_template: dict[str, Any], parameters: dict[str, str] | None = None):
    """The SAM transform with these parameter values (the others at their defaults)."""
    template = copy.deepcopy(sam_template)
    # The translator insists on S3 locations (sam build/package make them); keep the local path
    # as the key so the transformed Code/Content still says where the code lives.
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str):
                props[key] = f"s3://local-build/{props[key]}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_DEFAULT_REGION", REGION)
        return transform(template, dict(parameters or {}), _NoManagedPolicies())


def _resources(cfn: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in cfn["Resources"].items() if v["Type"] == type_}


def _sub_refs(value: Any) -> set[str]:
    """Resource logical ids referenced by Ref, GetAtt or ${...} in Fn::Sub, anywhere in value."""
    refs: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref" and isinstance(inner, str):
                refs.add(inner)
            elif key == "Fn::GetAtt":
                refs.add(inner[0] if isinstance(inner, list) else inner.split(".")[0])
            elif key == "Fn::Sub":
                text = inner[0] if isinstance(inner, list) else inner
                # Fn::Sub's own variables (its second argument) are no references.
                own = set(inner[1]) if isinstance(inner, list) else set()
                named = {m.split(".")[0] for m in re.findall(r"\$\{([^}!]+)\}", text)}
                refs |= named - own
                if isinstance(inner, list):
                    refs |= _sub_refs(inner[1])
            else:
                refs |= _sub_refs(inner)
    elif isinstance(value, list):
        for inner in value:
            refs |= _sub_refs(inner)
    return refs


def _http_apis(cfn: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The HTTP API (FrontDoor HttpApi), not the push channel's WebSocket API."""
    apis = _resources(cfn, "AWS::ApiGatewayV2::Api")
    return {k: v for k, v in apis.items() if v["Properties"].get("ProtocolType") != "WEBSOCKET"}


def _push_apis(cfn: dict[str, Any]) -> dict[str, dict[str, Any]]:
    apis = _resources(cfn, "AWS::ApiGatewayV2::Api")
    return {k: v for k, v in apis.items() if v["Properties"].get("ProtocolType") == "WEBSOCKET"}


def _table_logical_id(cfn: dict[str, Any]) -> str:
    tables = _resources(cfn, "AWS::DynamoDB::Table")
    assert len(tables) == 1, f"expected exactly one DynamoDB table, found {sorted(tables)}"
    return next(iter(tables))


# --- the inventory ---------------------------------------------------------------------------


def test_one_function_per_api_group_the_router_the_sweeper_and_push(functions):
    assert set(functions) == {*FUNCTION_APIS, ROUTER, "sweeper", PUSH}


def test_functions_runtime_timeouts_and_tracing(cfn, functions):
    for name, logical_id in functions.items():
        props = cfn["Resources"][logical_id]["Properties"]
        assert props["Runtime"] == "python3.12", name
        # Graviton: cheaper per GB-second (bench/cost_model.py); the layer is built for it.
        assert props["Architectures"] == ["arm64"], name
        # X-Ray tracing is off unless the Tracing parameter asks (test_tracing_parameter).
        assert "TracingConfig" not in props, name
        expected_timeout = 60 if name == "sweeper" else 29
        assert props["Timeout"] == expected_timeout, name
        assert len(props["Layers"]) == 1, name


def test_core_layer(cfn, functions):
    layers = _resources(cfn, "AWS::Lambda::LayerVersion")
    assert len(layers) == 1
    ((layer_id, layer),) = layers.items()
    assert layer["Properties"]["Content"]["S3Key"].rstrip("/") == "layers/core"
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.12"]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert (ROOT / "layers/core/groupcoord/__init__.py").is_file()
    assert (ROOT / "layers/core/requirements.txt").is_file()
    for logical_id in functions.values():
        assert cfn["Resources"][logical_id]["Properties"]["Layers"] == [{"Ref": layer_id}]


def test_core_layer_is_built_by_its_makefile_for_the_functions_runtime(sam_template):
    """layers/core/Makefile builds the layer (the server code only, pinned dependencies) for the
    runtime and architecture the template declares; sam passes neither to make, so the Makefile
    names them too (.ci/template-checks.sh checks the built layer)."""
    layers = {
        logical_id: r
        for logical_id, r in sam_template["Resources"].items()
        if r["Type"] == "AWS::Serverless::LayerVersion"
    }
    ((logical_id, layer),) = layers.items()
    metadata, props = layer.get("Metadata", {}), layer["Properties"]
    assert metadata.get("BuildMethod") == "makefile"
    functions = sam_template["Globals"]["Function"]
    assert props["CompatibleRuntimes"] == [functions["Runtime"]] == ["python3.12"]
    architectures = functions["Architectures"]
    assert [metadata.get("BuildArchitecture")] == props["CompatibleArchitectures"] == architectures
    makefile = (ROOT / props["ContentUri"] / "Makefile").read_text()
    assert re.search(rf"^build-{logical_id}:", makefile, re.M)
    # A default (?=), so that .ci/template-checks.sh can build it for the host to import.
    assert architectures == ["arm64"]
    assert re.search(rf"^LAYER_ARCH \?= {architectures[0]}$", makefile, re.M)
    runtime_version = functions["Runtime"].removeprefix("python")
    assert re.search(rf"^LAYER_PYTHON := {re.escape(runtime_version)}$", makefile, re.M)


def _locked_pins() -> dict[str, list[str]]:
    """layers/core/requirements.txt: requirement -> its --hash options (continuations joined)."""
    text = (ROOT / "layers/core/requirements.txt").read_text()
    pins = {}
    for line in text.replace("\\\n", " ").splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            pins[words[0]] = words[1:]
    return pins


def test_layer_requirements_are_exact_pins_each_with_wheel_hashes():
    """Every pin carries the sha256 of its wheels (`make -C layers/core lock`), and the layer's
    build installs with --require-hashes: a wheel that is not the locked file fails the build.
    A compiled wheel has one hash per locked architecture (x86_64, arm64)."""
    pins = _locked_pins()
    assert pins
    for requirement, options in pins.items():
        assert re.fullmatch(r"[A-Za-z0-9._-]+(\[[^\]]*\])?==\S+", requirement), requirement
        assert options, f"{requirement}: no --hash (make -C layers/core lock)"
        for option in options:
            assert re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", option), (requirement, option)
        assert len(options) <= 2, requirement
    # The compiled ones the layer ships: one wheel per architecture.
    for compiled in ("pydantic_core", "google-re2", "wrapt"):
        ((requirement, options),) = [(r, o) for r, o in pins.items() if r.startswith(compiled)]
        assert len(options) == 2, requirement
    makefile = (ROOT / "layers/core/Makefile").read_text()
    assert "--require-hashes" in makefile
    assert re.search(r"^LOCKED_ARCHS := x86_64 arm64$", makefile, re.M)
    assert re.search(r"^lock:", makefile, re.M)


def test_sweeper_runs_every_minute(cfn, functions):
    rules = _resources(cfn, "AWS::Events::Rule")
    targets = {
        target["Arn"]["Fn::GetAtt"][0]: rule["Properties"]["ScheduleExpression"]
        for rule in rules.values()
        for target in rule["Properties"]["Targets"]
    }
    assert targets == {functions["sweeper"]: "rate(1 minute)"}


# --- (a) the table, created by moto's CloudFormation ------------------------------------------


def _normalized_table(description: dict[str, Any]) -> dict[str, Any]:
    def projection(p: dict[str, Any]) -> dict[str, Any]:
        out = {"ProjectionType": p["ProjectionType"]}
        if p.get("NonKeyAttributes"):
            out["NonKeyAttributes"] = sorted(p["NonKeyAttributes"])
        return out

    billing = description.get("BillingModeSummary", {}).get("BillingMode") or description.get(
        "BillingMode"
    )
    return {
        "BillingMode": billing,
        "KeySchema": description["KeySchema"],
        "AttributeDefinitions": sorted(
            description["AttributeDefinitions"], key=lambda a: a["AttributeName"]
        ),
        "GlobalSecondaryIndexes": sorted(
            (
                {
                    "IndexName": gsi["IndexName"],
                    "KeySchema": gsi["KeySchema"],
                    "Projection": projection(gsi["Projection"]),
                }
                for gsi in description.get("GlobalSecondaryIndexes", [])
            ),
            key=lambda g: g["IndexName"],
        ),
        "LocalSecondaryIndexes": description.get("LocalSecondaryIndexes", []),
    }


def test_table_properties_not_modelled_by_moto(cfn):
    props = cfn["Resources"][_table_logical_id(cfn)]["Properties"]
    # CloudFormation names the table; the functions get the name from the environment.
    assert "TableName" not in props
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    # moto's CloudFormation ignores TimeToLiveSpecification, so it is checked here.
    assert props["TimeToLiveSpecification"] == {
        "AttributeName": schema.TTL_ATTRIBUTE,
        "Enabled": True,
    }


def test_table_created_by_cloudformation_matches_table_definition(cfn):
    table_id = _table_logical_id(cfn)
    # The table alone, with the parameters and conditions its properties refer to.
    stack_template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Parameters": {
            name: cfn["Parameters"][name]
            for name in (
                "TableDeletionProtection",
                "TableMaxReadRequestUnits",
                "TableMaxWriteRequestUnits",
            )
        },
        "Conditions": {name: cfn["Conditions"][name] for name in ("CapsReads", "CapsWrites")},
        "Resources": {table_id: cfn["Resources"][table_id]},
    }
    with mock_aws():
        cloudformation = boto3.client("cloudformation", region_name=REGION)
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        cloudformation.create_stack(
            StackName="groupcoord-test", TemplateBody=json.dumps(stack_template)
        )
        stack = cloudformation.describe_stacks(StackName="groupcoord-test")["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE"
        resource = cloudformation.describe_stack_resource(
            StackName="groupcoord-test", LogicalResourceId=table_id
        )["StackResourceDetail"]
        physical_name = resource["PhysicalResourceId"]
        created = dynamodb.describe_table(TableName=physical_name)["Table"]
        ttl = dynamodb.describe_time_to_live(TableName=physical_name)["TimeToLiveDescription"]

    assert _normalized_table(created) == _normalized_table(schema.table_definition(TABLE_NAME))
    if ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):  # if moto ever models it
        assert ttl["AttributeName"] == schema.TTL_ATTRIBUTE


# --- (b) the routes ---------------------------------------------------------------------------


def _integration_function(operation: dict[str, Any]) -> str:
    uri = operation["x-amazon-apigateway-integration"]["uri"]
    (ref,) = {r for r in _sub_refs(uri) if not r.startswith("AWS::")}
    return ref


def test_routes_are_post_v1_api_on_the_serving_function(cfn, functions):
    cfn = _deployed(cfn, {"FrontDoor": "HttpApi"})
    ((api_id, api),) = _http_apis(cfn).items()
    body = api["Properties"]["Body"]
    routes: dict[str, str] = {}
    for path, operations in body["paths"].items():
        for method, operation in operations.items():
            if method == "x-amazon-apigateway-any-method":
                route_key = "$default" if path == "/$default" else f"ANY {path}"
            else:
                route_key = f"{method.upper()} {path}"
            assert route_key not in routes, f"duplicate route {route_key}"
            routes[route_key] = _integration_function(operation)
            # Every route, $default included, requires SigV4 (IAM) auth.
            assert operation.get("security") == [{"AWS_IAM": []}], route_key
            integration = operation["x-amazon-apigateway-integration"]
            assert integration["type"] == "aws_proxy", route_key
            assert integration["payloadFormatVersion"] == "2.0", route_key

    expected = {
        f"POST /v1/{api_name}": functions[function]
        for function, apis in FUNCTION_APIS.items()
        for api_name in apis
    }
    expected["$default"] = functions[DEFAULT_ROUTE_FUNCTION]
    assert routes == expected

    schemes = body["components"]["securitySchemes"]
    assert schemes["AWS_IAM"]["x-amazon-apigateway-authtype"] == "awsSigv4"
    stages = _resources(cfn, "AWS::ApiGatewayV2::Stage")
    stages = {k: s for k, s in stages.items() if s["Properties"]["ApiId"] == {"Ref": api_id}}
    assert [s["Properties"]["StageName"] for s in stages.values()] == ["$default"]


def test_api_url_output(cfn):
    (api_id,) = _http_apis(cfn)
    http_api = _deployed(cfn, {"FrontDoor": "HttpApi"})
    assert http_api["Outputs"]["ApiUrl"]["Value"] == {
        "Fn::Sub": f"https://${{{api_id}}}.execute-api.${{AWS::Region}}.${{AWS::URLSuffix}}"
    }
    (url_id,) = _resources(cfn, "AWS::Lambda::Url")
    function_url = _deployed(cfn, {"FrontDoor": "FunctionUrl"})
    assert function_url["Outputs"]["ApiUrl"]["Value"] == {"Fn::GetAtt": [url_id, "FunctionUrl"]}
    for stack in (http_api, function_url):
        assert stack["Outputs"]["TableName"]["Value"] == {"Ref": _table_logical_id(cfn)}


# --- (c) every handler imports the way Lambda imports it ---------------------------------------


def _at_defaults(cfn: dict[str, Any], value: Any, parameters: dict[str, str]) -> Any:
    """A condition or an Fn::If of plain values, evaluated with these parameter values."""
    if isinstance(value, dict) and len(value) == 1:
        ((function, args),) = value.items()
        if function == "Ref" and args in cfn["Parameters"]:
            return parameters.get(args, str(cfn["Parameters"][args]["Default"]))
        if function == "Condition":
            return _at_defaults(cfn, cfn["Conditions"][args], parameters)
        if function == "Fn::Equals":
            left, right = (str(_at_defaults(cfn, a, parameters)) for a in args)
            return left == right
        if function == "Fn::Not":
            return not _at_defaults(cfn, args[0], parameters)
        if function == "Fn::If":
            condition, when_true, when_false = args
            held = _at_defaults(cfn, cfn["Conditions"][condition], parameters)
            return _at_defaults(cfn, when_true if held else when_false, parameters)
        if function == "Fn::Join" and isinstance(args[1], dict) and "Ref" in args[1]:
            listed = str(_at_defaults(cfn, args[1], parameters))
            return args[0].join(v.strip() for v in listed.split(",") if v.strip())
    return value


_NO_VALUE = {"Ref": "AWS::NoValue"}


def _chosen(value: Any, held: dict[str, bool]) -> Any:
    """`value` with every Fn::If replaced by the branch its condition picks, and AWS::NoValue
    dropped from objects and lists, as CloudFormation resolves them."""
    if isinstance(value, dict):
        if set(value) == {"Fn::If"}:
            condition, when_true, when_false = value["Fn::If"]
            return _chosen(when_true if held[condition] else when_false, held)
        picked = {k: _chosen(v, held) for k, v in value.items()}
        return {k: v for k, v in picked.items() if v != _NO_VALUE}
    if isinstance(value, list):
        return [v for v in (_chosen(v, held) for v in value) if v != _NO_VALUE]
    return value


def _deployed(cfn: dict[str, Any], parameters: dict[str, str]) -> dict[str, Any]:
    """The stack CloudFormation would create with these parameter values (the others at their
    defaults): resources and outputs whose condition is false left out, every Fn::If
    resolved."""
    held = {
        name: bool(_at_defaults(cfn, {"Condition": name}, parameters)) for name in cfn["Conditions"]
    }
    kept = {
        section: {
            name: _chosen({k: v for k, v in item.items() if k != "Condition"}, held)
            for name, item in cfn.get(section, {}).items()
            if held.get(item.get("Condition", ""), True)
        }
        for section in ("Resources", "Outputs")
    }
    return {**cfn, **kept, "Conditions": held}


def _resolved_environment(
    cfn: dict[str, Any], logical_id: str, parameters: dict[str, str] | None = None
) -> dict[str, str]:
    """The function's environment with parameters at their defaults (or these values), the
    table at TABLE_NAME."""
    table_id = _table_logical_id(cfn)
    variables = cfn["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
    resolved = {}
    for name, value in variables.items():
        if isinstance(value, dict) and set(value) == {"Fn::If"}:
            value = _at_defaults(cfn, value, parameters or {})
        if isinstance(value, dict) and set(value) == {"Fn::Sub"}:  # a URL of a resource
            value = _substituted(cfn, value["Fn::Sub"])
        if isinstance(value, dict) and set(value) == {"Fn::Join"}:  # a CommaDelimitedList
            separator, listed = value["Fn::Join"]
            ref = listed["Ref"]
            value = (parameters or {}).get(ref, cfn["Parameters"][ref]["Default"])
            value = separator.join(v.strip() for v in str(value).split(","))
        if isinstance(value, dict) and set(value) == {"Ref"}:
            ref = value["Ref"]
            if ref == table_id:
                value = TABLE_NAME
            else:
                assert ref in cfn["Parameters"], f"{name} refers to {ref}"
                value = (parameters or {}).get(ref, cfn["Parameters"][ref]["Default"])
        assert isinstance(value, (str, int)), f"{name}: unsupported value {value!r}"
        resolved[name] = str(value)
    return resolved


def _substituted(cfn: dict[str, Any], text: str) -> str:
    """An Fn::Sub of the region, the URL suffix and resource ids (each RESOURCE_ID)."""
    pseudo = {"AWS::Region": REGION, "AWS::URLSuffix": "amazonaws.com"}

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in pseudo or name in cfn["Resources"], name
        return pseudo.get(name, RESOURCE_ID)

    return re.sub(r"\$\{([^}]+)\}", value, text)


_IMPORT_PROBE = """
import importlib, json, sys
module_name, attr = sys.argv[1], sys.argv[2]
module = importlib.import_module(module_name)
handler = getattr(module, attr)
import groupcoord
print(json.dumps({
    "callable": callable(handler),
    "module_file": module.__file__,
    "groupcoord_file": groupcoord.__file__,
}))
"""


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_handler_imports_from_code_uri_with_the_layer(cfn, functions, name, tmp_path):
    props = cfn["Resources"][functions[name]]["Properties"]
    code_dir = ROOT / props["Code"]["S3Key"]
    module_name, _, attr = props["Handler"].rpartition(".")
    module_path = code_dir / (module_name.replace(".", "/") + ".py")
    # A handler the template names but the code lacks is a failure, never a skip.
    assert module_path.is_file(), f"{name}: {module_path.relative_to(ROOT)} is missing"

    env = {
        # Enough of a Lambda environment for an import, with no way to reach AWS.
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(code_dir), str(ROOT / "layers/core")]),
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_LAMBDA_FUNCTION_NAME": f"groupcoord-{name}",
        "POWERTOOLS_TRACE_DISABLED": "1",
        "POWERTOOLS_METRICS_DISABLED": "1",
        "POWERTOOLS_DEV": "0",
        **_resolved_environment(cfn, functions[name]),
    }
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE, module_name, attr],
        cwd=code_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"importing {props['Handler']} failed:\n{result.stderr}"
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    assert probe["callable"], f"{props['Handler']} is not callable"
    assert Path(probe["module_file"]).resolve() == module_path.resolve()
    assert Path(probe["groupcoord_file"]).resolve().is_relative_to(ROOT / "layers/core")


# --- (d) environment variables are settings the code reads ------------------------------------


def test_every_environment_variable_is_a_known_setting(cfn, functions):
    for name, logical_id in functions.items():
        variables = cfn["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        unknown = set(variables) - set(SETTING_VARS) - POWERTOOLS_VARS
        assert not unknown, f"{name}: not settings of groupcoord: {sorted(unknown)}"
        assert set(variables) >= POWERTOOLS_VARS, name
        assert variables["POWERTOOLS_SERVICE_NAME"] == "groupcoord"
        assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "groupcoord"
        # No member metadata, assignments, hosts or offset metadata in X-Ray.
        assert variables["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false", name
        assert variables["POWERTOOLS_TRACER_CAPTURE_ERROR"] == "false", name
        table_var = env_var_name("groupcoord.table.name")
        assert variables[table_var] == {"Ref": _table_logical_id(cfn)}, name


def test_setting_parameters_are_named_after_their_setting(cfn, functions):
    for logical_id in functions.values():
        variables = cfn["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        for var, value in variables.items():
            if (
                var in SETTING_VARS
                and isinstance(value, dict)
                and value.get("Ref") in cfn.get("Parameters", {})
            ):
                words = re.findall(r"[A-Z][a-z0-9]*", value["Ref"])
                assert "_".join(w.upper() for w in words) == var, (value["Ref"], var)


def test_parameter_defaults_are_the_code_defaults(cfn, functions):
    """With every parameter at its default, the functions get exactly Settings()' values, but
    the push channel's URLs (PushChannel Enabled); Disabled, those too."""
    for name, logical_id in functions.items():
        environment = _resolved_environment(cfn, logical_id)
        settings = Settings.from_env(environment)
        pushing = Settings(
            table_name=TABLE_NAME, push_url=PUSH_URL, push_connections_endpoint=PUSH_CONNECTIONS
        )
        assert settings == pushing, name
        environment = _resolved_environment(cfn, logical_id, {"PushChannel": "Disabled"})
        assert Settings.from_env(environment) == Settings(table_name=TABLE_NAME), name


# --- IAM: least privilege ---------------------------------------------------------------------


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_function_roles_are_least_privilege(cfn, functions):
    table_id = _table_logical_id(cfn)
    index_names = {
        gsi["IndexName"] for gsi in schema.table_definition("x")["GlobalSecondaryIndexes"]
    }
    for name, logical_id in functions.items():
        role_ref = cfn["Resources"][logical_id]["Properties"]["Role"]
        role = cfn["Resources"][role_ref["Fn::GetAtt"][0]]["Properties"]
        assert set(role.get("ManagedPolicyArns", [])) <= EXPECTED_MANAGED_POLICIES, name
        statements = [
            s for policy in role["Policies"] for s in policy["PolicyDocument"]["Statement"]
        ]
        # The offsets function's sink writes: only with sink tables, only on them.
        sink_writes = [s for s in statements if s.get("Fn::If", [""])[0] == "HasSinkTables"]
        kinesis = [s for s in statements if s.get("Fn::If", [""])[0] == "HasKinesisStreams"]
        statements = [s for s in statements if "Fn::If" not in s]
        # Kinesis-backed topics' shard syncs: only with streams, only their listing.
        assert kinesis == (
            [
                {
                    "Fn::If": [
                        "HasKinesisStreams",
                        {
                            "Sid": "KinesisShards",
                            "Effect": "Allow",
                            "Action": ["kinesis:ListShards", "kinesis:DescribeStreamSummary"],
                            "Resource": {"Ref": "KinesisStreamArns"},
                        },
                        {"Ref": "AWS::NoValue"},
                    ]
                }
            ]
            if name in KINESIS_SYNCERS
            else []
        ), name
        if name in COMMITTERS:
            assert sink_writes == [
                {
                    "Fn::If": [
                        "HasSinkTables",
                        {
                            "Sid": "SinkWrites",
                            "Effect": "Allow",
                            "Action": [
                                "dynamodb:PutItem",
                                "dynamodb:UpdateItem",
                                "dynamodb:DeleteItem",
                                "dynamodb:ConditionCheckItem",
                            ],
                            "Resource": {"Ref": "SinkTableArns"},
                        },
                        {"Ref": "AWS::NoValue"},
                    ]
                }
            ]
        else:
            assert not sink_writes, name
        assert statements, f"{name} has no DynamoDB permissions"
        indexes_read: set[str] = set()
        for statement in statements:
            assert statement["Effect"] == "Allow", name
            actions = set(_as_list(statement["Action"]))
            assert actions <= ALLOWED_DYNAMODB_ACTIONS, (
                f"{name}: {actions - ALLOWED_DYNAMODB_ACTIONS}"
            )
            for resource in _as_list(statement["Resource"]):
                if resource == {"Fn::GetAtt": [table_id, "Arn"]}:
                    continue
                assert isinstance(resource, dict) and set(resource) == {"Fn::Sub"}, resource
                match = re.fullmatch(
                    r"\$\{" + table_id + r"\.Arn\}/index/([A-Za-z0-9_.*-]+)", resource["Fn::Sub"]
                )
                assert match, f"{name}: resource {resource} is neither the table nor its index"
                assert actions == {"dynamodb:Query"}, f"{name}: only Query on an index"
                index = match.group(1)
                assert index == "*" or index in index_names, f"{name}: no index {index!r}"
                indexes_read.add(index)
        assert indexes_read == INDEX_READERS.get(name, set()), name


def test_no_scan_and_no_wildcard_anywhere(cfn):
    text = json.dumps(cfn)
    assert "dynamodb:*" not in text
    assert "dynamodb:Scan" not in text
    assert '"Action": "*"' not in text


# --- alarms -----------------------------------------------------------------------------------


def _alarm_metrics(alarm: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    props = alarm["Properties"]
    if "MetricName" in props:
        metrics = [(props["Namespace"], props["MetricName"], props["Dimensions"])]
    else:
        metrics = [
            (
                m["MetricStat"]["Metric"]["Namespace"],
                m["MetricStat"]["Metric"]["MetricName"],
                m["MetricStat"]["Metric"]["Dimensions"],
            )
            for m in props["Metrics"]
            if "MetricStat" in m
        ]
    return [(ns, metric, {d["Name"]: d["Value"] for d in dims}) for ns, metric, dims in metrics]


def test_alarms_watch_api_table_and_sweeper(cfn, functions):
    (api_id,) = _http_apis(cfn)
    table_id = _table_logical_id(cfn)
    watched = [
        m for a in _resources(cfn, "AWS::CloudWatch::Alarm").values() for m in _alarm_metrics(a)
    ]

    assert ("AWS/ApiGateway", "5xx", {"ApiId": {"Ref": api_id}, "Stage": "$default"}) in watched
    assert ("AWS/Lambda", "Errors", {"FunctionName": {"Ref": functions["sweeper"]}}) in watched

    throttled = {
        (metric, dims.get("GlobalSecondaryIndexName"))
        for ns, metric, dims in watched
        if ns == "AWS/DynamoDB" and dims.get("TableName") == {"Ref": table_id}
    }
    gsis = {gsi["IndexName"] for gsi in schema.table_definition("x")["GlobalSecondaryIndexes"]}
    for index in [None, *gsis]:
        for metric in ("ReadThrottleEvents", "WriteThrottleEvents"):
            assert (metric, index) in throttled, (metric, index)


def test_alarm_actions_only_with_a_topic(cfn):
    for logical_id, alarm in _resources(cfn, "AWS::CloudWatch::Alarm").items():
        for key in ("AlarmActions", "OKActions"):
            assert alarm["Properties"][key] == {
                "Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopic"}], {"Ref": "AWS::NoValue"}]
            }, (logical_id, key)
    assert cfn["Parameters"]["AlarmTopic"]["Default"] == ""


# --- (d) limits ---------------------------------------------------------------------------------


def test_the_api_stages_are_throttled_by_parameters(cfn):
    """The HTTP API's stage and the push channel's WebSocket stage, by the same parameters."""
    stages = _resources(cfn, "AWS::ApiGatewayV2::Stage").values()
    assert len(stages) == 2
    for stage in stages:
        settings = stage["Properties"]["DefaultRouteSettings"]
        assert settings["ThrottlingRateLimit"] == {"Ref": "ApiThrottlingRateLimit"}
        assert settings["ThrottlingBurstLimit"] == {"Ref": "ApiThrottlingBurstLimit"}
    parameters = cfn["Parameters"]
    assert (
        parameters["ApiThrottlingBurstLimit"]["Default"]
        >= (parameters["ApiThrottlingRateLimit"]["Default"])
    )


def test_each_function_has_a_reserved_concurrency_parameter_the_sweeper_one(cfn, functions):
    for name, logical_id in functions.items():
        parameter = f"{name.capitalize()}ReservedConcurrency"
        reserved = cfn["Resources"][logical_id]["Properties"]["ReservedConcurrentExecutions"]
        condition = f"Reserves{name.capitalize()}"
        # 0 reserves nothing (accounts with no concurrency to spare); any other value reserves
        # that much and caps the function there.
        assert reserved == {"Fn::If": [condition, {"Ref": parameter}, {"Ref": "AWS::NoValue"}]}, (
            name
        )
        assert cfn["Conditions"][condition] == {
            "Fn::Not": [{"Fn::Equals": [{"Ref": parameter}, 0]}]
        }
    assert cfn["Parameters"]["SweeperReservedConcurrency"]["Default"] == 1
    assert cfn["Parameters"]["SweeperReservedConcurrency"]["MaxValue"] == 1


def test_the_table_is_capped_and_protected_by_parameters(cfn):
    props = cfn["Resources"][_table_logical_id(cfn)]["Properties"]
    assert props["DeletionProtectionEnabled"] == {"Ref": "TableDeletionProtection"}
    assert cfn["Parameters"]["TableDeletionProtection"]["Default"] == "true"
    throughput = props["OnDemandThroughput"]
    for key, parameter, condition in (
        ("MaxReadRequestUnits", "TableMaxReadRequestUnits", "CapsReads"),
        ("MaxWriteRequestUnits", "TableMaxWriteRequestUnits", "CapsWrites"),
    ):
        assert throughput[key] == {
            "Fn::If": [condition, {"Ref": parameter}, {"Ref": "AWS::NoValue"}]
        }
        assert cfn["Parameters"][parameter]["Default"] > 0  # capped unless asked otherwise


@pytest.mark.parametrize("front_door", FRONT_DOORS)
def test_alarms_on_throttled_functions_failed_sweeps_and_a_sweeper_that_does_not_run(
    cfn, functions, front_door
):
    cfn = _deployed(cfn, {"FrontDoor": front_door})
    alarms = _resources(cfn, "AWS::CloudWatch::Alarm")
    watched = [m for a in alarms.values() for m in _alarm_metrics(a)]
    deployed = [i for i in functions.values() if i in cfn["Resources"]]
    (throttles,) = [a for a in alarms.values() if "Expression" in str(a) and "Throttles" in str(a)]
    queries = throttles["Properties"]["Metrics"]
    (expression,) = [m["Expression"] for m in queries if "Expression" in m]
    ids = {m["Id"] for m in queries if "MetricStat" in m}
    # The sum adds each deployed function's throttles once, and names no metric left out.
    summed = re.findall(r"FILL\((\w+),0\)", json.dumps(expression))
    assert sorted(summed) == sorted(ids)
    assert len(ids) == len(deployed)
    for logical_id in deployed:
        assert ("AWS/Lambda", "Throttles", {"FunctionName": {"Ref": logical_id}}) in watched
    for metric in ("SweepFailed", "SweepQuarantined", "SweepDeferred"):
        assert ("groupcoord", metric, {"service": "groupcoord"}) in watched, metric
    (not_running,) = [
        a["Properties"]
        for a in alarms.values()
        if a["Properties"].get("MetricName") == "Invocations"
    ]
    assert not_running["Dimensions"] == [
        {"Name": "FunctionName", "Value": {"Ref": functions["sweeper"]}}
    ]
    assert not_running["ComparisonOperator"] == "LessThanThreshold"
    assert not_running["TreatMissingData"] == "breaching"  # no data is no sweep


# --- tracing: off by default, a parameter turns it on (docs/performance.md, "Cold start") -----


@pytest.mark.parametrize("mode", ["Disabled", "Active"])
def test_tracing_parameter(sam_template, functions, mode):
    from groupcoord.observability import tracing_enabled

    assert sam_template["Parameters"]["Tracing"]["Default"] == "Disabled"
    assert set(sam_template["Parameters"]["Tracing"]["AllowedValues"]) == {"Active", "Disabled"}
    cfn = _transform(sam_template, {"Tracing": mode})
    assert cfn["Conditions"]["TracesActively"] == {"Fn::Equals": [{"Ref": "Tracing"}, "Active"]}
    xray_policy = "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"
    for name, logical_id in functions.items():
        props = cfn["Resources"][logical_id]["Properties"]
        role = cfn["Resources"][props["Role"]["Fn::GetAtt"][0]]["Properties"]
        environment = _resolved_environment(cfn, logical_id, {"Tracing": mode})
        # What the function decides at import, in Lambda (LAMBDA_TASK_ROOT is set there).
        traced = tracing_enabled({**environment, "LAMBDA_TASK_ROOT": "/var/task"})
        if mode == "Active":
            assert props["TracingConfig"] == {"Mode": {"Ref": "Tracing"}}, name
            assert xray_policy in role["ManagedPolicyArns"], name
            assert environment["POWERTOOLS_TRACE_DISABLED"] == "false", name
            assert traced, name
        else:
            assert "TracingConfig" not in props, name
            assert xray_policy not in role.get("ManagedPolicyArns", []), name
            assert environment["POWERTOOLS_TRACE_DISABLED"] == "true", name
            assert not traced, name


# --- sink tables (docs/exactly-once.md) -------------------------------------------------------


def test_sink_tables_reach_only_the_functions_that_commit_offsets(cfn, functions):
    arns = (
        "arn:aws:dynamodb:us-east-1:123456789012:table/counts,"
        "arn:aws:dynamodb:us-east-1:123456789012:table/totals"
    )
    parameters = {"SinkTableArns": arns}
    assert cfn["Parameters"]["SinkTableArns"]["Default"] == ""
    assert cfn["Conditions"]["HasSinkTables"] == {
        "Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", {"Ref": "SinkTableArns"}]}, ""]}]
    }
    for name, logical_id in functions.items():
        settings = Settings.from_env(_resolved_environment(cfn, logical_id, parameters))
        expected = {"counts", "totals"} if name in COMMITTERS else set()
        assert settings.sink_table_names == expected, name


def test_kinesis_streams_reach_every_function(cfn, functions):
    arns = (
        "arn:aws:kinesis:us-east-1:123456789012:stream/orders,"
        "arn:aws:kinesis:us-east-1:123456789012:stream/payments"
    )
    assert cfn["Parameters"]["KinesisStreamArns"]["Default"] == ""
    assert cfn["Conditions"]["HasKinesisStreams"] == {
        "Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", {"Ref": "KinesisStreamArns"}]}, ""]}]
    }
    for name, logical_id in functions.items():
        parameters = {"KinesisStreamArns": arns}
        settings = Settings.from_env(_resolved_environment(cfn, logical_id, parameters))
        assert settings.kinesis_stream_arns == set(arns.split(",")), name


# --- the front doors: FrontDoor HttpApi (the default) or FunctionUrl --------------------------


def test_front_door_parameter(cfn):
    parameter = cfn["Parameters"]["FrontDoor"]
    assert parameter["Default"] == "HttpApi"
    assert set(parameter["AllowedValues"]) == set(FRONT_DOORS)


@pytest.mark.parametrize("front_door", FRONT_DOORS)
def test_each_front_door_refers_only_to_what_it_deploys(cfn, front_door):
    """With the conditions evaluated, no resource or output names a resource the stack leaves
    out (CloudFormation would refuse the template)."""
    stack = _deployed(cfn, {"FrontDoor": front_door})
    known = set(stack["Resources"]) | set(stack["Parameters"])
    for section in ("Resources", "Outputs"):
        for name, item in stack[section].items():
            dangling = {r for r in _sub_refs(item) if not r.startswith("AWS::")} - known
            dangling |= set(_as_list(item.get("DependsOn", []))) - known
            assert not dangling, (front_door, name, sorted(dangling))


def test_the_http_api_front_door_routes_to_three_functions_and_has_no_url(cfn, functions):
    stack = _deployed(cfn, {"FrontDoor": "HttpApi"})
    deployed = {name for name, logical_id in functions.items() if logical_id in stack["Resources"]}
    assert deployed == {*FUNCTION_APIS, "sweeper", PUSH}
    assert len(_http_apis(stack)) == 1
    assert not _resources(stack, "AWS::Lambda::Url")


def test_the_function_url_front_door_is_one_iam_url_on_the_router(cfn, functions):
    stack = _deployed(cfn, {"FrontDoor": "FunctionUrl"})
    deployed = {name for name, logical_id in functions.items() if logical_id in stack["Resources"]}
    assert deployed == {ROUTER, "sweeper", PUSH}
    # No API Gateway but the push channel's WebSocket API (test_the_push_channel_*).
    push_api = {k for k, v in stack["Resources"].items() if v["Type"].startswith("AWS::ApiGateway")}
    assert push_api == {k for k in push_api if k.startswith("Push")}
    assert not _http_apis(stack)
    (url,) = _resources(stack, "AWS::Lambda::Url").values()
    assert url["Properties"]["AuthType"] == "AWS_IAM"
    assert url["Properties"]["TargetFunctionArn"] == {"Ref": functions[ROUTER]}
    # No resource policy opens the URL: a caller needs an identity policy of this account.
    router_permissions = [
        p
        for p in _resources(stack, "AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] in ({"Ref": functions[ROUTER]},)
    ]
    assert router_permissions == []
    # The router answers the whole contract, as the HTTP API's routes do.
    from groupcoord.http.apis import serves

    assert [api.name for api in APIS if serves(ROUTER, api)] == [api.name for api in APIS]
    watched = [
        m for a in _resources(stack, "AWS::CloudWatch::Alarm").values() for m in _alarm_metrics(a)
    ]
    assert ("AWS/Lambda", "Url5xxCount", {"FunctionName": {"Ref": functions[ROUTER]}}) in watched
    assert not [m for m in watched if m[0] == "AWS/ApiGateway"]


def _grants(cfn: dict[str, Any], logical_id: str) -> set[tuple[str, str]]:
    """(action, resource) pairs the function's role allows, its Fn::If statements kept."""
    role_ref = cfn["Resources"][logical_id]["Properties"]["Role"]
    role = cfn["Resources"][role_ref["Fn::GetAtt"][0]]["Properties"]
    found = set()
    for policy in role["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            if "Fn::If" in statement:
                statement = statement["Fn::If"][1]
            for action in _as_list(statement["Action"]):
                for resource in _as_list(statement["Resource"]):
                    found.add((action, json.dumps(resource, sort_keys=True)))
    return found


def test_the_routers_role_is_the_union_of_the_api_functions_roles(cfn, functions):
    """One function serves every API, so its role holds what each API function's did and no
    more (docs/deploying.md, "Front door": what a router gives up)."""
    union = set().union(*(_grants(cfn, functions[name]) for name in FUNCTION_APIS))
    assert _grants(cfn, functions[ROUTER]) == union


def test_the_routers_reserved_concurrency_stands_in_for_the_stages_rate_limit(cfn):
    """A function URL has no throttling of its own; Lambda caps a URL's requests per second at
    10 x the function's reserved concurrency, so the default caps it as the stage's rate."""
    parameters = cfn["Parameters"]
    assert (
        10 * parameters["RouterReservedConcurrency"]["Default"]
        == parameters["ApiThrottlingRateLimit"]["Default"]
    )


# --- the push channel (PushChannel; docs/sessions.md, "Push") ---------------------------------


def test_push_channel_parameter(cfn):
    parameter = cfn["Parameters"]["PushChannel"]
    assert parameter["Default"] == "Enabled"
    assert set(parameter["AllowedValues"]) == {"Enabled", "Disabled"}


def _routes(stack: dict[str, Any], api_id: str) -> dict[str, dict[str, Any]]:
    routes = _resources(stack, "AWS::ApiGatewayV2::Route").values()
    return {
        r["Properties"]["RouteKey"]: r["Properties"]
        for r in routes
        if r["Properties"]["ApiId"] == {"Ref": api_id}
    }


@pytest.mark.parametrize("front_door", FRONT_DOORS)
def test_the_push_channel_is_a_websocket_api_iam_authorized_at_connect(cfn, functions, front_door):
    """Whichever the front door: one WebSocket API routing $connect (IAM), $disconnect, ping
    and $default to the push function, keepalive to API Gateway's own one-way answer (a MOCK:
    no function call); a deployed stage `push`, the URLs the functions get."""
    stack = _deployed(cfn, {"FrontDoor": front_door})
    ((api_id, api),) = _push_apis(stack).items()
    assert api["Properties"]["RouteSelectionExpression"] == "$request.body.action"
    integrations = _resources(stack, "AWS::ApiGatewayV2::Integration")
    by_type = {v["Properties"]["IntegrationType"]: k for k, v in integrations.items()}
    assert len(by_type) == len(integrations) == 2 and set(by_type) == {"AWS_PROXY", "MOCK"}
    proxy, mock = by_type["AWS_PROXY"], by_type["MOCK"]
    assert _sub_refs(integrations[proxy]["Properties"]["IntegrationUri"]) >= {functions[PUSH]}
    # The MOCK answers 200 itself: its request template is the status it answers with.
    mock_properties = integrations[mock]["Properties"]
    assert "IntegrationUri" not in mock_properties
    templates = mock_properties["RequestTemplates"]
    selected = mock_properties["TemplateSelectionExpression"].removeprefix("\\")
    assert json.loads(templates[selected]) == {"statusCode": 200}
    routes = _routes(stack, api_id)
    assert set(routes) == {"$connect", "$disconnect", "ping", "keepalive", "$default"}
    for key, route in routes.items():
        # Only $connect can be authorized: a connection is authorized once, at its handshake.
        assert route["AuthorizationType"] == ("AWS_IAM" if key == "$connect" else "NONE"), key
        target = mock if key == "keepalive" else proxy
        assert route["Target"] == {"Fn::Sub": f"integrations/${{{target}}}"}, key
    # ping answers (pong): a two-way route, as is $default's refusal; keepalive is one-way.
    responses = _resources(stack, "AWS::ApiGatewayV2::RouteResponse").values()
    answered = {r["Properties"]["RouteId"]["Ref"] for r in responses}
    two_way = {k for k, v in stack["Resources"].items() if v["Type"] == "AWS::ApiGatewayV2::Route"
               and v["Properties"]["RouteKey"] in ("ping", "$default")}  # fmt: skip
    assert answered == two_way
    assert "RouteResponseSelectionExpression" not in routes["keepalive"]
    # The stage's deployment deploys every route (a deployment made before a route lacks it).
    ((deployment_id, deployment),) = _resources(stack, "AWS::ApiGatewayV2::Deployment").items()
    assert set(_resources(stack, "AWS::ApiGatewayV2::Route")) <= set(deployment["DependsOn"])
    (stage,) = [
        s["Properties"]
        for s in _resources(stack, "AWS::ApiGatewayV2::Stage").values()
        if s["Properties"]["ApiId"] == {"Ref": api_id}
    ]
    assert stage["StageName"] == "push" and stage["DeploymentId"] == {"Ref": deployment_id}
    (permission,) = [
        p["Properties"]
        for p in _resources(stack, "AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Ref": functions[PUSH]}
    ]
    assert permission["Principal"] == "apigateway.amazonaws.com"
    assert _sub_refs(permission["SourceArn"]) - {
        "AWS::Partition",
        "AWS::Region",
        "AWS::AccountId",
    } == {api_id}
    assert stack["Outputs"]["PushUrl"]["Value"] == {
        "Fn::Sub": f"wss://${{{api_id}}}.execute-api.${{AWS::Region}}.${{AWS::URLSuffix}}/push"
    }
    for name, logical_id in functions.items():
        if logical_id in stack["Resources"]:
            settings = Settings.from_env(_resolved_environment(cfn, logical_id))
            assert (settings.push_url, settings.push_connections_endpoint) == (
                PUSH_URL,
                PUSH_CONNECTIONS,
            ), name


def _push_grants(cfn: dict[str, Any], logical_id: str) -> list[dict[str, Any]]:
    """The statements of the function's role that name execute-api, whatever their condition."""
    role_ref = cfn["Resources"][logical_id]["Properties"]["Role"]
    role = cfn["Resources"][role_ref["Fn::GetAtt"][0]]["Properties"]
    statements = [s for policy in role["Policies"] for s in policy["PolicyDocument"]["Statement"]]
    return [s for s in statements if "execute-api" in json.dumps(s)]


def test_only_the_functions_that_notify_may_post_to_connections(cfn, functions):
    """execute-api:ManageConnections, POST to the push stage's @connections alone, only with
    PushChannel Enabled, only for the functions that post notices."""
    (api_id,) = _push_apis(cfn)
    grant = {
        "Fn::If": [
            "PushEnabled",
            {
                "Sid": "PushNotices",
                "Effect": "Allow",
                "Action": "execute-api:ManageConnections",
                "Resource": {
                    "Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:"
                    f"${{AWS::AccountId}}:${{{api_id}}}/push/POST/@connections/*"
                },
            },
            {"Ref": "AWS::NoValue"},
        ]
    }
    for name, logical_id in functions.items():
        assert _push_grants(cfn, logical_id) == ([grant] if name in NOTIFIERS else []), name


@pytest.mark.parametrize("front_door", FRONT_DOORS)
def test_without_the_push_channel_nothing_of_it_is_deployed(cfn, functions, front_door):
    stack = _deployed(cfn, {"FrontDoor": front_door, "PushChannel": "Disabled"})
    assert not _push_apis(stack)
    assert functions[PUSH] not in stack["Resources"]
    assert not [k for k in stack["Resources"] if k.startswith("Push")]
    assert "PushUrl" not in stack["Outputs"]
    for logical_id in functions.values():
        if logical_id in stack["Resources"]:
            environment = _resolved_environment(cfn, logical_id, {"PushChannel": "Disabled"})
            settings = Settings.from_env(environment)
            assert (settings.push_url, settings.push_connections_endpoint) == ("", "")
    # Nothing left names the push channel's resources (CloudFormation would refuse it).
    known = set(stack["Resources"]) | set(stack["Parameters"])
    for section in ("Resources", "Outputs"):
        for name, item in stack[section].items():
            dangling = {r for r in _sub_refs(item) if not r.startswith("AWS::")} - known
            assert not dangling, (name, sorted(dangling))
