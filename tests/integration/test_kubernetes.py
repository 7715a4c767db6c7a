"""The Kubernetes manifests in deploy/kubernetes, offline: every field they use exists in
the Kubernetes API with the right type (the API schema that Debian's python3-kubernetes
carries: its models list each object's fields and their types), every required field is
there, and the training Job's init container gates on the pod's real /dev/shm: its args,
run as written against a tmpfs of the emptyDir's sizeLimit, pass, and against the
runtime's default 64 MiB /dev/shm, refuse the pod. Not verified here: a real API server's
admission (defaults, pod security), a kubelet, and the image (docs/kubernetes.md)."""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import HEADROOM, REPO, in_namespace

MANIFESTS = sorted((REPO / "deploy" / "kubernetes").glob("*.yaml"))
MODELS = {("v1", "ConfigMap"): "V1ConfigMap", ("v1", "Pod"): "V1Pod",
          ("apps/v1", "DaemonSet"): "V1DaemonSet", ("batch/v1", "Job"): "V1Job",
          ("scheduling.k8s.io/v1", "PriorityClass"): "V1PriorityClass"}


def kubernetes_client():
    try:
        from kubernetes import client  # Debian's python3-kubernetes (scripts/install-deps)
    except ImportError:
        pytest.fail("python3-kubernetes is missing: run scripts/install-deps")
    return client


def schema_errors(value, type_name: str, path: str, client) -> list[str]:
    """Every key of `value` must be a field of `type_name` (a model of the client, or
    str/int/bool/object, dict(str, T), list[T]) with a value of its type."""
    if type_name.startswith("list["):
        if not isinstance(value, list):
            return [f"{path}: a list expected, got {value!r}"]
        return [e for i, item in enumerate(value)
                for e in schema_errors(item, type_name[5:-1], f"{path}[{i}]", client)]
    if type_name.startswith("dict("):
        inner = re.fullmatch(r"dict\(str, (.*)\)", type_name).group(1)
        if not isinstance(value, dict):
            return [f"{path}: a map expected, got {value!r}"]
        return [e for k, v in value.items() for e in schema_errors(v, inner, f"{path}.{k}", client)]
    if type_name == "str":
        return [] if isinstance(value, str) else [f"{path}: a string expected, got {value!r}"]
    if type_name == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{path}: an integer expected, got {value!r}"]
    if type_name == "bool":
        return [] if isinstance(value, bool) else [f"{path}: true/false expected, got {value!r}"]
    if type_name == "object":  # IntOrString, quantities, raw JSON
        return []
    model = getattr(client, type_name)
    if not isinstance(value, dict):
        return [f"{path}: an object ({type_name}) expected, got {value!r}"]
    fields = {json_name: model.openapi_types[attribute]
              for attribute, json_name in model.attribute_map.items()}
    errors = []
    for key, item in value.items():
        if key not in fields:
            errors.append(f"{path}.{key}: no such field in {type_name}")
        else:
            errors += schema_errors(item, fields[key], f"{path}.{key}", client)
    return errors


def documents() -> list[tuple[str, dict]]:
    return [(f"{path.name}#{i}", doc) for path in MANIFESTS
            for i, doc in enumerate(yaml.safe_load_all(path.read_text())) if doc]


@pytest.mark.parametrize("name,doc", documents(), ids=lambda v: v if isinstance(v, str) else "")
def test_manifest_fields_exist_in_the_kubernetes_api_with_their_types(name: str, doc: dict):
    client = kubernetes_client()
    model = MODELS.get((doc.get("apiVersion"), doc.get("kind")))
    assert model, f"{name}: no schema for {doc.get('apiVersion')} {doc.get('kind')}"
    assert schema_errors(doc, model, doc["kind"], client) == []
    # The client's models refuse a missing required field (a container without a
    # name or image, a volume without a name) when they are built.
    client.ApiClient()._ApiClient__deserialize(doc, model)


def test_schema_check_catches_a_misspelt_or_mistyped_field():
    # The check itself: without this the test above could pass on anything.
    client = kubernetes_client()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "volumeMount": []}],
                    "hostPID": "yes"}}
    errors = schema_errors(pod, "V1Pod", "Pod", client)
    assert "Pod.spec.containers[0].volumeMount: no such field in V1Container" in errors
    assert "Pod.spec.hostPID: true/false expected, got 'yes'" in errors
    with pytest.raises(ValueError, match="image|name"):
        client.ApiClient()._ApiClient__deserialize(
            {"spec": {"containers": [{"image": "i"}]}}, "V1Pod")


def training_pod() -> dict:
    docs = yaml.safe_load_all((REPO / "deploy" / "kubernetes" / "training-job.yaml").read_text())
    job = next(d for d in docs if d["kind"] == "Job")
    return job["spec"]["template"]["spec"]


def quantity_mib(text: str) -> int:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", text).groups()
    return int(number) * (1024 if unit == "Gi" else 1)


def only_documented_flags(argv: list[str], command: list[str]) -> None:
    help_text = subprocess.run([HEADROOM, *command, "--help"], capture_output=True, text=True,
                               check=True).stdout
    for word in argv:
        if word.startswith("--"):
            assert re.search(rf"^\s+(-\w,)?{re.escape(word)}\b", help_text, re.M), \
                f"{word} is not in `headroom {' '.join(command)} --help`"


def test_daemonset_and_init_container_use_only_documented_flags():
    only_documented_flags(training_pod()["initContainers"][0]["args"][1:], ["check"])
    docs = yaml.safe_load_all((REPO / "deploy" / "kubernetes" / "daemonset.yaml").read_text())
    args = next(d for d in docs if d["kind"] == "DaemonSet")["spec"]["template"]["spec"][
        "containers"][0]["args"]
    only_documented_flags(args[:args.index("watch")], [])
    only_documented_flags(args[args.index("watch") + 1:], ["watch"])


def test_init_container_checks_the_pods_memory_backed_shm_and_refuses_a_small_one(tmp_path: Path):
    pod = training_pod()
    gate = pod["initContainers"][0]
    train = pod["containers"][0]
    volumes = {v["name"]: v for v in pod["volumes"]}
    shm_mounts = {c["name"]: next(m["name"] for m in c["volumeMounts"] if m["mountPath"] == "/dev/shm")
                  for c in (gate, train)}
    assert shm_mounts[gate["name"]] == shm_mounts[train["name"]], shm_mounts  # the same tmpfs
    shm = volumes[shm_mounts[gate["name"]]]["emptyDir"]
    assert shm["medium"] == "Memory"
    assert gate["args"][:3] == ["check", "--fail-on", "critical"]
    assert gate["resources"] == train["resources"]  # memory.cgroup judges the trainer's limit
    # The init container as written, against a tmpfs of sizeLimit at /dev/shm (what the
    # kubelet mounts) and then against the 64 MiB a pod gets without the emptyDir.
    # The checkpoint volume is a tmpfs in the test's own dir (mkdir /ckpt would be the host's).
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    argv = [HEADROOM] + [str(ckpt) if arg == "/ckpt" else arg for arg in gate["args"]]
    assert str(ckpt) in argv
    results = {}
    for label, size_mib in (("fits", quantity_mib(shm["sizeLimit"])), ("default", 64)):
        results[label] = in_namespace(f'''
            mount -t tmpfs -o size={size_mib}m,mode=1777 tmpfs /dev/shm
            mount -t tmpfs -o size=16g tmpfs {shlex.quote(str(ckpt))}
            {shlex.join(argv)}
        ''', env={"NO_COLOR": "1"})
    fits, default = results["fits"], results["default"]
    assert fits.returncode == 0, fits.stdout + fits.stderr
    assert re.search(r"^ok\s+shm\.capacity\s+/dev/shm has 1\.0 GiB free of 1\.0 GiB", fits.stdout, re.M)
    assert default.returncode == 1, default.stdout + default.stderr
    line = re.search(r"^critical shm\.capacity .*", default.stdout, re.M)
    assert line and "/dev/shm has 64.0 MiB free of 64.0 MiB but the job needs 576.2 MiB" in line.group(0)
