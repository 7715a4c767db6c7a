"""The shipped deployment files run as written: the systemd unit's ExecStart
with deploy/systemd/watch.toml, and the DaemonSet's container args with its
ConfigMap, each for one sample. A file that drifts from the flags or the TOML
schema fails here, not on a fleet."""
from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import yaml

from conftest import HEADROOM, REPO, in_namespace
from watch_helpers import free_port

DEPLOY = REPO / "deploy"


def test_systemd_unit_runs_with_its_config_and_names_the_host_in_alert_lines(scratch: Path):
    unit = (DEPLOY / "systemd" / "headroom-watch.service").read_text()
    exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
    argv = shlex.split(exec_start)
    assert argv[0] == "/usr/local/bin/headroom" and "--config" in argv
    assert re.search(r"^ExecReload=/bin/kill -HUP \$MAINPID$", unit, re.M)
    assert "ReadWritePaths=/var/log/headroom /var/lib/headroom" in unit  # jsonl, state_file
    assert "StateDirectory=headroom" in unit
    config = DEPLOY / "systemd" / "watch.toml"
    argv = [HEADROOM] + argv[1:]
    argv[argv.index("--config") + 1] = str(config)
    # The shipped config writes alerts to /var/log/headroom: a private tmpfs there.
    # Its dirs (/data/checkpoints, /data/logs) do not exist here: reported, not fatal.
    result = in_namespace(f'''
        mount -t tmpfs tmpfs /var/log && mkdir /var/log/headroom
        mount -t tmpfs tmpfs /var/lib && mkdir /var/lib/headroom  # StateDirectory
        rc=0
        {shlex.join(argv)} --once --json --listen 127.0.0.1:{free_port()} >"$OUT/sample.json" || rc=$?
        echo "rc=$rc" >"$OUT/rc"
        cat /var/log/headroom/alerts.jsonl
    ''', env={"OUT": str(scratch)})
    assert result.returncode == 0, result.stderr
    assert (scratch / "rc").read_text().strip() == "rc=1", result.stderr  # 1: an alert is firing
    sample = json.loads((scratch / "sample.json").read_text())
    missing = {f["path"] for f in sample["filesystems"] if not f["ok"]}
    assert {"/data/checkpoints", "/data/logs"} <= missing, sample["filesystems"]
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert {e["rule"] for e in events} >= {"path_missing"}, events
    assert all(e["host"] == os.uname().nodename for e in events), events
    assert "headroom: FIRING warn path_missing /data/checkpoints:" in result.stderr
    assert "cannot save" not in result.stderr, result.stderr


def test_daemonset_args_and_configmap_run_and_name_the_node(scratch: Path):
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "daemonset.yaml").read_text()))
    configmap = next(d for d in docs if d["kind"] == "ConfigMap")
    daemonset = next(d for d in docs if d["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["hostPID"] is True  # stale /dev/shm needs the node's processes
    container = pod["containers"][0]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for path in ("/host/proc", "/host/sys", "/host/dev/shm"):
        assert mounts[path]["readOnly"] is True, mounts
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    # Kubernetes expands $(NODE_NAME) in args from the container's env.
    args = [a.replace("$(NODE_NAME)", "gpu-node-7") for a in container["args"]]
    assert args[:2] == ["--root", "/host"] and "--host" in args
    config = scratch / "watch.toml"
    config.write_text(configmap["data"]["watch.toml"])
    args[args.index("--config") + 1] = str(config)
    # The host's own /proc and /sys stand in for the node's under --root /.
    args[args.index("--root") + 1] = "/"
    port = free_port()
    text = configmap["data"]["watch.toml"]
    assert 'oom_scope = "system"' in text  # a node agent: the jobs are in other cgroups
    assert 'listen = "0.0.0.0:9840"' in text  # the pod IP; the test overrides it with loopback
    # The pod's volumes for the state and pid files: private tmpfs mounts here.
    assert 'state_file = "/var/lib/headroom/alerts.json"' in text
    assert 'pid_file = "/run/headroom/watch.pid"' in text
    volumes = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/var/lib/headroom", "/run/headroom"} <= volumes, volumes
    result = in_namespace(f'''
        for dir in /var/lib /run; do mount -t tmpfs tmpfs $dir && mkdir $dir/headroom; done
        {shlex.join([HEADROOM] + args)} --once --json --listen 127.0.0.1:{port} --jsonl "$OUT/alerts.jsonl"
    ''', env={"OUT": str(scratch)})
    assert result.returncode == 1, result.stderr  # /data/checkpoints is missing here: an alert
    sample = json.loads(result.stdout)
    assert [f for f in sample["filesystems"] if f["path"] == "/data/checkpoints" and not f["ok"]]
    assert not [f for f in sample["filesystems"] if f["role"] == "tmp"]  # temp_dir = false
    events = [json.loads(line) for line in (scratch / "alerts.jsonl").read_text().splitlines()]
    assert events and all(e["host"] == "gpu-node-7" for e in events), events
