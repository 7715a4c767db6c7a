"""What the HTTP sinks put on the wire: each dialect's body (generic JSON,
Slack, WeCom, Feishu) naming the host, a failed delivery retried with
exponential backoff until it lands, and a sink that cannot keep up dropping
(and counting) what does not fit its queue."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import in_namespace
from watch_helpers import HangingServer, WebhookReceiver, free_port


# An 8 MiB tmpfs 97% full: the usage alerts (warn and critical) fire at the
# first sample. /metrics is read while watch still runs.
SCRIPT = r'''
mount -t tmpfs -o size=8m headroom-watch "$MNT"
head -c 7950k /dev/zero >"$MNT/big"
printf 'host = "gpu-07"\n[delivery]\nbackoff = "200ms"\nretries = 3\n' >"$OUT/watch.toml"
"$HEADROOM" watch --config "$OUT/watch.toml" --interval 200ms --window 5s --dir "$MNT" \
    --no-shm-stale --listen "127.0.0.1:$PORT" --repeat 0 "$@" \
    >"$OUT/watch.out" 2>"$OUT/watch.err" &
pid=$!
sleep "$RUN_FOR"
"$PY" -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
    "http://127.0.0.1:$PORT/metrics" >"$OUT/metrics.txt"
kill -TERM $pid
wait $pid
'''


def _run(scratch: Path, args: list[str], run_for: float) -> tuple[str, str, str]:
    mnt = scratch / "mnt"
    mnt.mkdir()
    script = SCRIPT.replace('"$@"', " ".join(f"'{a}'" for a in args))
    result = in_namespace(script, timeout=60, env={
        "MNT": str(mnt), "OUT": str(scratch), "PORT": str(free_port()), "RUN_FOR": str(run_for)})
    err = (scratch / "watch.err").read_text()
    assert result.returncode == 0, result.stderr + err
    return str(mnt), (scratch / "metrics.txt").read_text(), err


def _metric(metrics: str, name: str, sink: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(name + "{") and f'sink="{sink}"' in line:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} for {sink} in:\n{metrics}")


def test_each_dialect_names_the_host_and_a_failed_post_is_retried_with_backoff(scratch: Path):
    with WebhookReceiver(fail_first={"/flaky": 2}) as hook:
        urls = {name: f"{hook.base}/{name}" for name in
                ("generic", "slack", "wecom", "feishu", "flaky")}
        mnt, metrics, err = _run(scratch, [
            "--webhook", urls["generic"], "--slack", urls["slack"], "--wecom", urls["wecom"],
            "--feishu", urls["feishu"], "--webhook", urls["flaky"]], run_for=2.5)
        generic = [json.loads(body) for body, _, _ in hook.on("/generic")]
        slack = [json.loads(body) for body, _, _ in hook.on("/slack")]
        wecom = [json.loads(body) for body, _, _ in hook.on("/wecom")]
        feishu = [json.loads(body) for body, _, _ in hook.on("/feishu")]
        flaky = hook.on("/flaky")

    # The generic webhook gets the event as JSON, with the host's name.
    critical = [e for e in generic if e["rule"] == "filesystem_usage"
                and e["severity"] == "critical"]
    assert len(critical) == 1, generic
    assert critical[0]["kind"] == "firing" and critical[0]["subject"] == mnt
    assert critical[0]["host"] == "gpu-07" and critical[0]["value"] >= 95
    assert all(kind == "application/json" for _, _, kind in hook.on("/generic"))

    # Chat dialects get one text line that says which machine it is about.
    line = f"headroom on gpu-07: FIRING critical filesystem_usage {mnt}: {mnt} is "
    assert [m["text"] for m in slack if m["text"].startswith(line)], slack
    assert all(set(m) == {"text"} for m in slack), slack
    assert [m for m in wecom if m["msgtype"] == "text"
            and m["text"]["content"].startswith(line)], wecom
    assert [m for m in feishu if m["msg_type"] == "text"
            and m["content"]["text"].startswith(line)], feishu
    # This host's own stderr does not need its name.
    assert f"headroom: FIRING critical filesystem_usage {mnt}:" in err, err

    # /flaky answered 503 twice: the first event went out three times, the same
    # body each time, 200 ms then 400 ms apart (backoff doubling), and counts as
    # sent, not failed.
    assert len(flaky) >= 3, flaky
    assert flaky[0][0] == flaky[1][0] == flaky[2][0]
    first_gap, second_gap = flaky[1][1] - flaky[0][1], flaky[2][1] - flaky[1][1]
    assert 0.18 <= first_gap < 0.5, (first_gap, second_gap)
    assert 0.38 <= second_gap < 1.0 and second_gap - first_gap >= 0.15, (first_gap, second_gap)
    events = len(generic)
    # Sinks are labelled by kind and place: the second --webhook is webhook#2.
    assert _metric(metrics, "headroom_alert_sink_sent_total", "webhook#2") == events
    assert _metric(metrics, "headroom_alert_sink_failed_total", "webhook#2") == 0
    assert _metric(metrics, "headroom_alert_sink_sent_total", "slack#1") == events


def test_a_sink_that_cannot_keep_up_drops_and_counts_what_does_not_fit(scratch: Path):
    # A hanging webhook holds the first event for the whole run; its queue holds
    # two more; every later event (two repeats each second) is dropped and counted.
    # The queue is per sink: stderr, with the same --queue 2, keeps up.
    with HangingServer() as hanging:
        _, metrics, err = _run(scratch, [
            "--webhook", hanging.url, "--webhook-timeout", "20s", "--queue", "2",
            "--repeat", "1s"], run_for=4.5)
        assert hanging.held, "headroom never connected to the hanging webhook"
    sink = "webhook#1"
    assert _metric(metrics, "headroom_alert_sink_sent_total", sink) == 0
    dropped = _metric(metrics, "headroom_alert_sink_dropped_total", sink)
    # 2 firing events at start (warn, critical), then 2 repeats a second for 4 s:
    # 1 in flight and 2 queued, the rest (about 7) dropped.
    assert dropped >= 5, metrics
    # Stderr, another sink, got every event meanwhile.
    assert err.count("FIRING critical filesystem_usage") == 1, err
    assert err.count("REPEAT critical filesystem_usage") >= 3, err


def test_sink_credentials_never_reach_metrics_or_logs(scratch: Path):
    # Secrets in a Slack path, in user info and in a query string; both webhooks
    # refuse (a closed port), so every delivery failure is logged.
    port = free_port()
    slack = f"http://127.0.0.1:{port}/services/T0001/B0001/s3cr3t"
    webhook = f"http://user:pa55word@127.0.0.1:{port}/h?token=abc123"
    exec_command = "exit 3 # Authorization: Bearer t0ken"
    _, metrics, err = _run(scratch, ["--slack", slack, "--webhook", webhook, "--exec", exec_command,
                                     "--webhook-retries", "0"], run_for=2.0)
    for secret in ("s3cr3t", "T0001", "pa55word", "user:", "token", "abc123", "t0ken", "/h?"):
        assert secret not in metrics, (secret, metrics)
        assert secret not in err, (secret, err)
    base = f"http://127.0.0.1:{port}"
    assert f'headroom_alert_sink_failed_total{{sink="slack#1",target="{base}"}}' in metrics
    assert f'headroom_alert_sink_failed_total{{sink="webhook#1",target="{base}"}}' in metrics
    assert 'headroom_alert_sink_failed_total{sink="exec#1",target="a shell command"}' in metrics
    # The failure names the sink once, then why.
    failures = [line for line in err.splitlines() if "alert delivery failed" in line]
    assert failures, err
    assert any(line.startswith(f"headroom watch: alert delivery failed: slack#1 ({base}): ")
               for line in failures), failures
    assert all(line.count(base) <= 1 for line in failures), failures
