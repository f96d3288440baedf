"""LocalStack's host runtime as a child process on a loopback port, for DynamoDB and Kinesis,
with no Docker and nothing downloaded at run time beyond the package registries.

LocalStack's runtime (`localstack-core`, pinned exactly in PINS with what its unpinned
dependencies need today) runs on Python 3.13 only, so it gets a virtual environment of its own
in a cache folder (~/.cache/groupcoord/localstack/venv), made on first use with pip (said on
stderr). Python 3.13 is GROUPCOORD_LOCALSTACK_PYTHON, else `python3.13` on PATH (if it runs: a
pyenv shim may not), else pyenv's own 3.13 (`pyenv root`/versions).

LocalStack would download DynamoDB Local, a Java and kinesis-mock on first use; instead each
run gets a filesystem root of its own whose install folders already hold the project's pinned
engines (found as `groupcoord dynamodb-local` and `kinesis-local` find them): DynamoDB Local's
jar, the machine's Java (17 or later) as LocalStack's `java/21`, kinesis-local at its pinned
version, and a stand-in for the agent jar LocalStack always loads into DynamoDB Local (an
agent that does nothing: a table keeps DynamoDB Local's own GSI limit). Standard library only.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from .dynamodb_local import find_jar, find_java
from .kinesis_local import NPM_PACKAGE as KINESIS_LOCAL_PACKAGE
from .kinesis_local import find_main
from .loopback_child import LOOPBACK, LoopbackChild
from .npm_engines import Missing

# cbor2 6 lacks cbor2._decoder; pyOpenSSL 25 lacks X509.add_extensions (the gateway's
# certificate); localstack-twisted 26.4 imports service_identity, which 26.x would upgrade
# cryptography past what pyOpenSSL 24 takes.
PINS = (
    "localstack-core[runtime]==2026.3.0",
    "cbor2<6",
    "pyopenssl<25",
    "service-identity==24.2.0",
)
PYTHON_VERSION = "3.13"
PYTHON_ENV = "GROUPCOORD_LOCALSTACK_PYTHON"
PYTHON_INSTALL = "`pyenv install 3.13`, or your system's python3.13 package"
KINESIS_MOCK_VERSION = KINESIS_LOCAL_PACKAGE.rpartition("@")[2]
DEFAULT_PORT = 4566
# LocalStack starts an engine (DynamoDB Local's JVM, kinesis-mock) at its service's first
# request: it is asked once per service before the URL is given out, so a first test's
# request does not wait on a JVM's start (a 10 s read timeout, seen missed in CI).
WARM_DEADLINE_S = 180.0
_WARM_REQUESTS = (
    ("dynamodb", "DynamoDB_20120810.ListTables", "application/x-amz-json-1.0"),
    ("kinesis", "Kinesis_20131202.ListStreams", "application/x-amz-json-1.1"),
)
# LocalStack reads the region and the service from the credential scope; it checks no signature.
_AUTHORIZATION = (
    "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/{service}/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=0"
)
# LocalStack's install folders (under FILESYSTEM_ROOT) it finds an engine in before it
# downloads one.
_LIBS = "var/lib/localstack/lib"


def cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "groupcoord" / "localstack"


def _is_python_313(command: str) -> bool:
    try:
        probe = subprocess.run(
            [command, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except OSError:
        return False
    return probe.returncode == 0 and probe.stdout.strip() == PYTHON_VERSION


def _pyenv_pythons() -> list[str]:
    """pyenv's installed 3.13s, newest first (its shims answer only where 3.13 is chosen)."""
    root = os.environ.get("PYENV_ROOT")
    pyenv = shutil.which("pyenv")
    if not root and pyenv:
        found = subprocess.run([pyenv, "root"], capture_output=True, text=True, timeout=30)
        root = found.stdout.strip() if found.returncode == 0 else None
    if not root:
        return []
    versions = sorted(Path(root).glob(f"versions/{PYTHON_VERSION}.*/bin/python{PYTHON_VERSION}"))
    return [str(path) for path in reversed(versions)]


def find_python() -> str:
    """A Python 3.13 that runs, or Missing naming what to install."""
    named = os.environ.get(PYTHON_ENV)
    if named:
        if not _is_python_313(named):
            raise Missing(f"{PYTHON_ENV}={named} is not a Python {PYTHON_VERSION} that runs")
        return named
    on_path = shutil.which(f"python{PYTHON_VERSION}")
    for candidate in ([on_path] if on_path else []) + _pyenv_pythons():
        if _is_python_313(candidate):
            return candidate
    raise Missing(
        f"LocalStack's runtime needs Python {PYTHON_VERSION} and none was found (python"
        f"{PYTHON_VERSION} on PATH, pyenv's versions, {PYTHON_ENV}): install it, e.g. "
        f"{PYTHON_INSTALL}"
    )


def _pip_install(python: str, venv: Path) -> None:
    shutil.rmtree(venv, ignore_errors=True)
    for step in (
        [python, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *PINS],
    ):
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(step)} failed: {(done.stdout + done.stderr)[-2000:]}")


def runtime_python(cache: Path | None = None) -> Path:
    """The Python of LocalStack's own virtual environment, made (and PINS installed) on first
    use or when PINS changed; one process installs at a time."""
    cache = cache or cache_home()
    venv = cache / "venv"
    marker = venv / "groupcoord-pins.txt"
    wanted = "\n".join(PINS) + "\n"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (marker.is_file() and marker.read_text() == wanted):
            python = find_python()
            print(
                f"groupcoord localstack: installing LocalStack's runtime ({' '.join(PINS)}) "
                f"into {venv} with {python}, once (about 2 minutes)",
                file=sys.stderr,
                flush=True,
            )
            partial = cache / "venv.partial"
            _pip_install(python, partial)
            (partial / marker.name).write_text(wanted)
            shutil.rmtree(venv, ignore_errors=True)
            partial.rename(venv)  # `python -m` finds its venv by pyvenv.cfg: a rename is fine
    return venv / "bin" / "python"


def _class_file() -> bytes:
    """`public class Agent { public static void premain(String args) {} }`, compiled by hand
    (Java 8's class format, needing no verifier frames): a Java runtime has no compiler."""
    utf8 = [b"Agent", b"java/lang/Object", b"premain", b"(Ljava/lang/String;)V", b"Code"]
    pool = b"".join(
        [
            b"\x01" + len(utf8[0]).to_bytes(2) + utf8[0],  # 1
            b"\x07\x00\x01",  # 2: class Agent
            b"\x01" + len(utf8[1]).to_bytes(2) + utf8[1],  # 3
            b"\x07\x00\x03",  # 4: class Object
            *(b"\x01" + len(text).to_bytes(2) + text for text in utf8[2:]),  # 5, 6, 7
        ]
    )
    code = b"\x00\x07" + (13).to_bytes(4) + b"\x00\x00\x00\x01" + (1).to_bytes(4) + b"\xb1"
    code += b"\x00\x00\x00\x00"  # no exception table, no attributes
    method = b"\x00\x09\x00\x05\x00\x06\x00\x01" + code  # public static premain, one attribute
    return (
        b"\xca\xfe\xba\xbe\x00\x00\x00\x34"  # magic, version 52.0
        + (8).to_bytes(2)  # constant pool count: 7 entries + 1
        + pool
        + b"\x00\x21\x00\x02\x00\x04\x00\x00\x00\x00"  # public super, this, super, no fields
        + b"\x00\x01"
        + method
        + b"\x00\x00"  # no class attributes
    )


def write_agent_jar(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr(
            "META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nPremain-Class: Agent\r\n\r\n"
        )
        jar.writestr("Agent.class", _class_file())


def prepare_root(root: Path) -> None:
    """LocalStack's install folders under `root`, filled with the project's engines."""
    libs = root / _LIBS
    dynamodb = libs / "dynamodb-local" / "2"
    dynamodb.mkdir(parents=True)
    jar = find_jar()
    (dynamodb / "DynamoDBLocal.jar").symlink_to(jar)
    (dynamodb / "DynamoDBLocal_lib").symlink_to(jar.parent / "DynamoDBLocal_lib")
    write_agent_jar(dynamodb / "ddb-local-loader-0.1.jar")
    (libs / "java").mkdir()
    (libs / "java" / "21").symlink_to(Path(os.path.realpath(find_java())).parent.parent)
    kinesis = libs / "kinesis-local" / KINESIS_MOCK_VERSION
    kinesis.mkdir(parents=True)
    (kinesis / "node_modules").symlink_to(find_main().parent.parent)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _new_root(roots: Path) -> Path:
    """A filesystem root for this run, named for this process; those of runs whose process is
    gone (killed: no `stop`) are removed first."""
    roots.mkdir(parents=True, exist_ok=True)
    for old in roots.iterdir():
        pid = old.name.partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=roots))


class LocalStack(LoopbackChild):
    """LocalStack's runtime on a loopback port (0: a free one), serving DynamoDB and Kinesis
    from a filesystem root of its own, removed when it stops."""

    name = "LocalStack"
    port_taken = "Address already in use"
    # SIGTERM, not SIGKILL, when the command dies: LocalStack then stops its own children
    # (DynamoDB Local, kinesis-local), which would outlive a SIGKILL.
    death_signal = signal.SIGTERM

    def __init__(self, port: int = DEFAULT_PORT) -> None:
        self.python = runtime_python()
        self.root = _new_root(cache_home() / "roots")
        try:
            prepare_root(self.root)
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        super().__init__(port)

    def cwd(self) -> Path:
        return self.root

    def command(self) -> list[str]:
        return [str(self.python), "-m", "localstack.runtime.main"]

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            # /.dockerenv may exist on a CI machine: LocalStack would think it is in its own
            # container (bind 0.0.0.0, write /var/lib/localstack).
            "OVERRIDE_IN_DOCKER": "0",
            "FILESYSTEM_ROOT": str(self.root),
            "GATEWAY_LISTEN": f"{LOOPBACK}:{self.port}",
            "SERVICES": "dynamodb,kinesis",
            # No calls out: DNS server, analytics, the gateway certificate's download.
            "DNS_ADDRESS": "0",
            "DISABLE_EVENTS": "1",
            "SKIP_SSL_CERT_DOWNLOAD": "1",
            "KINESIS_MOCK_VERSION": KINESIS_MOCK_VERSION,
            "KINESIS_LATENCY": "100",  # ms, as kinesis-local runs for the tests
            "KINESIS_SHARD_LIMIT": "20000",
        }

    def start(self) -> LocalStack:
        try:
            super().start()
            self._warm_engines()
            return self
        except BaseException:
            self.stop()
            raise

    def _warm_engines(self) -> None:
        """Ask each service once, until it answers, so its engine is up."""
        deadline = time.monotonic() + WARM_DEADLINE_S
        for service, target, content_type in _WARM_REQUESTS:
            request = urllib.request.Request(
                self.url,
                data=b"{}",
                method="POST",
                headers={
                    "X-Amz-Target": target,
                    "Content-Type": content_type,
                    "X-Amz-Date": "20260101T000000Z",
                    "Authorization": _AUTHORIZATION.format(service=service),
                },
            )
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(
                        f"{self.name}'s {service} did not answer within "
                        f"{WARM_DEADLINE_S:.0f} s: {self._output()}"
                    )
                try:
                    with urllib.request.urlopen(request, timeout=left) as answer:
                        answer.read()
                    break
                except urllib.error.HTTPError:
                    break  # the service answered (an error is an answer: its engine is up)
                except (urllib.error.URLError, OSError):
                    time.sleep(0.5)

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.root, ignore_errors=True)
