"""headroom run as scripts and batch systems use it: `--json` (one document, the
last line of headroom's stderr, never on the job's stdout), `--no-preflight`,
and a preflight that reports this job's OOM history, not other tenants'."""
from __future__ import annotations

import json
import subprocess

from conftest import PYTHON, MemoryCgroup, require_root

MiB = 1024 * 1024


def run(headroom: str, *argv: str, wrap=None, timeout: float = 60) -> subprocess.CompletedProcess:
    full = [headroom, *argv]
    return subprocess.run(wrap(full) if wrap else full, capture_output=True, text=True,
                          timeout=timeout, cwd="/")


def document(result: subprocess.CompletedProcess) -> dict:
    """The last line of stderr, which --json makes the run's JSON document."""
    lines = result.stderr.splitlines()
    assert lines, result
    return json.loads(lines[-1])


def test_json_keeps_the_jobs_stdout_and_ends_stderr_with_one_document(headroom):
    job = "import sys; print('out 1'); sys.stderr.write('err 1\\n'); print('out 2'); sys.exit(3)"
    result = run(headroom, "--json", "run", "--", PYTHON, "-c", job)
    assert result.returncode == 3
    assert result.stdout == "out 1\nout 2\n"  # the job's, byte for byte
    lines = result.stderr.splitlines()
    assert lines[:-1] == ["err 1"], result.stderr  # no human line of headroom's
    doc = json.loads(lines[-1])
    assert doc["started"] is True and doc["exit_code"] == 3 and doc["failed"] is True
    assert doc["command"] == [PYTHON, "-c", job]
    assert doc["verdict"]["cause"] == "unknown"
    assert isinstance(doc["preflight"], list) and isinstance(doc["alerts"], list)
    assert {"exits", "evidence", "remedy", "samples", "could_not_see"} <= doc.keys()
    # `headroom run --json` (after the command name) is the same flag.
    again = run(headroom, "run", "--json", "--", "sh", "-c", "exit 0")
    assert again.returncode == 0 and again.stdout == ""
    ok = json.loads(again.stderr)
    assert ok["started"] is True and ok["failed"] is False and ok["verdict"]["cause"] is None


def test_json_document_starts_on_its_own_line_after_an_open_line_of_the_job(headroom):
    result = run(headroom, "--json", "run", "--no-preflight", "--", "sh", "-c",
                 "printf 'no newline' >&2; exit 1")
    assert result.stderr.startswith("no newline\n{"), result.stderr
    assert document(result)["exit_code"] == 1


def test_json_refusal_and_exec_failure_are_documents_too(headroom, tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    refused = run(headroom, "--json", "run", "--no-preflight", "--log", str(tmp_path / "link"),
                  "--", "true")
    assert refused.returncode == 125 and refused.stdout == ""
    doc = json.loads(refused.stderr)
    assert doc["started"] is False and doc["exit_code"] == 125
    assert doc["error"].startswith("--log: ") and "symbolic link" in doc["error"], doc
    missing = run(headroom, "--json", "run", "--", "/nonexistent/train")
    assert missing.returncode == 127
    doc = json.loads(missing.stderr)
    assert doc["started"] is False and doc["exit_code"] == 127
    assert "/nonexistent/train" in doc["error"] and isinstance(doc["preflight"], list)


def test_no_preflight_starts_the_job_without_a_word(headroom):
    result = run(headroom, "run", "--no-preflight", "--", "sh", "-c", "echo ran")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ran\n" and result.stderr == ""
    both = run(headroom, "run", "--no-preflight", "--strict", "--", "true")
    assert both.returncode == 2 and "--strict needs the preflight" in both.stderr


def oom_kill(cgroup: MemoryCgroup, *prefix: str) -> int:
    """A real OOM kill in `cgroup` (a process that touches 256 MiB); its pid."""
    hog = subprocess.Popen(cgroup.wrap([*prefix, PYTHON, "-c", "b = bytearray(256 * 1024 * 1024)"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert hog.wait(timeout=60) == -9
    return hog.pid


def test_preflight_reports_this_jobs_oom_kills_not_other_tenants(headroom):
    # Three real kills: root's in another cgroup, uid 65534's in the job's own cgroup
    # (other tenants, as a shared host has them: not news for this job), and one of the
    # job's user in its cgroup (news). `check` keeps reporting every kill on the host.
    require_root()
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    with MemoryCgroup(48 * MiB) as other, MemoryCgroup(48 * MiB) as job:
        other_tenant = oom_kill(other)
        other_user = oom_kill(job, *nobody)
        quiet = run(headroom, "run", "--", "true", wrap=job.wrap)
        assert quiet.returncode == 0, quiet.stderr
        assert f"pid {other_tenant}" not in quiet.stderr and f"pid {other_user}" not in quiet.stderr
        assert "preflight: warn     kernel.oom" not in quiet.stderr, quiet.stderr
        # The same history in the JSON document: an ok kernel.oom that counts the rest.
        doc = document(run(headroom, "--json", "run", "--", "true", wrap=job.wrap))
        oom = next(f for f in doc["preflight"] if f["id"] == "kernel.oom")
        assert oom["severity"] == "ok", oom
        evidence = {e["name"]: e["value"] for e in oom["evidence"]}
        assert evidence["oom_kills_24h_elsewhere"] >= 2 and evidence["oom_kills_24h"] == 0, oom
        assert evidence["scope"].startswith("uid 0 in memory cgroup /"), oom

        host = subprocess.run([headroom, "check", "--json", "--only", "kernel.oom", "--fail-on",
                               "never"], capture_output=True, text=True, timeout=60)
        kills = next(e["value"] for e in json.loads(host.stdout)["findings"][0]["evidence"]
                     if e["name"] == "kills")
        assert f"pid {other_tenant}" in kills and f"pid {other_user}" in kills, kills

        own = oom_kill(job)
        loud = run(headroom, "run", "--", "true", wrap=job.wrap)
        assert "headroom: preflight: warn     kernel.oom" in loud.stderr, loud.stderr
        assert f"python3 (pid {own})" in loud.stderr, loud.stderr
