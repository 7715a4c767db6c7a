"""tmp.exec against a real noexec tmpfs at /tmp, in a private mount namespace:
check warns that compiled kernels cannot load from /tmp/torchinductor_<user>,
and a shared object built there really fails to load ("failed to map segment
from shared object", what torch.compile's inductor and Triton hit when they
dlopen their kernels); explain names the temp dir and confirms it on the host.
With TORCHINDUCTOR_CACHE_DIR on an exec mount, check is ok and the load works.
"""
import json

from conftest import evidence, finding, in_namespace
from test_check_tmp import KEEP_CHECKOUT, NS_SCRATCH

KERNEL = "int kernel(void) { return 42; }\n"

SCRIPT = KEEP_CHECKOUT + """
mount -t tmpfs -o size=16m,mode=1777,$TMP_OPTIONS tmpfs /tmp
export USER=trainer HOME="$SCRATCH/home"
mkdir -p "$HOME"
cd "$SCRATCH"
rc=0; "$HEADROOM" check --json --only tmp > "$SCRATCH/report.json" || rc=$?
echo $rc > "$SCRATCH/check.rc"
# What inductor does with a kernel: compile it into its cache dir, then dlopen it.
cache="${TORCHINDUCTOR_CACHE_DIR:-/tmp/torchinductor_$USER}"
mkdir -p "$cache"
printf '%s' "$KERNEL" > "$cache/kernel.c"
gcc -shared -fPIC -o "$cache/kernel.so" "$cache/kernel.c"
rc=0; "$PY" -c "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).kernel())" "$cache/kernel.so" \
    > "$SCRATCH/load.log" 2>&1 || rc=$?
echo $rc > "$SCRATCH/load.rc"
rc=0; "$HEADROOM" explain --json "$SCRATCH/load.log" > "$SCRATCH/explain.json" || rc=$?
"""


def run(scratch, tmp_options: str, extra_env: dict | None = None):
    env = {"SCRATCH": str(scratch), "TMP_OPTIONS": tmp_options, "KERNEL": KERNEL}
    env.update(extra_env or {})
    result = in_namespace(SCRIPT, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads((scratch / "report.json").read_text())
    return (report, int((scratch / "check.rc").read_text()),
            (scratch / "load.log").read_text(), int((scratch / "load.rc").read_text()))


def test_noexec_tmp_warns_and_a_kernel_built_there_does_not_load(headroom, scratch):
    report, rc, load_log, load_rc = run(scratch, "noexec")
    exec_finding = finding(report, "tmp.exec")
    assert exec_finding["severity"] == "warn", exec_finding
    assert exec_finding["subject"] == "/tmp/torchinductor_trainer"
    assert exec_finding["summary"].startswith(
        "/tmp is mounted noexec: torch.compile (inductor) writes its compiled kernels to "
        "/tmp/torchinductor_trainer and cannot load them"), exec_finding["summary"]
    assert evidence(exec_finding, "triton_cache_dir") == f"{NS_SCRATCH}/home/.triton/cache"
    assert evidence(exec_finding, "triton_cache_noexec") is False
    assert exec_finding["remedy"][0].endswith(
        f"export TORCHINDUCTOR_CACHE_DIR={NS_SCRATCH}/.cache/torchinductor"), exec_finding["remedy"]
    assert rc == 0  # a warning does not reach --fail-on critical
    # What check predicted, for real:
    assert load_rc != 0, load_log
    assert "kernel.so: failed to map segment from shared object" in load_log, load_log

    explained = json.loads((scratch / "explain.json").read_text())
    assert explained["verdict"]["cause"] == "tmp_full", explained["verdict"]
    facts = [fact for fact in explained["host"]["facts"] if fact["check"] == "tmp.exec"]
    assert [fact["verdict"] for fact in facts] == ["confirms"], explained["host"]["facts"]
    assert any("TORCHINDUCTOR_CACHE_DIR" in line for line in explained["remedy"])


def test_a_cache_dir_on_an_exec_mount_is_ok_and_loads(headroom, scratch):
    cache = f"{NS_SCRATCH}/cache/inductor"
    report, rc, load_log, load_rc = run(scratch, "noexec", {"TORCHINDUCTOR_CACHE_DIR": cache})
    exec_finding = finding(report, "tmp.exec")
    assert exec_finding["severity"] == "ok", exec_finding
    assert evidence(exec_finding, "inductor_cache_dir") == cache
    assert evidence(exec_finding, "inductor_cache_origin") == "TORCHINDUCTOR_CACHE_DIR"
    assert rc == 0
    assert load_rc == 0, load_log
    assert load_log.strip() == "42"


def test_an_exec_tmp_is_ok_and_loads(headroom, scratch):
    report, _, load_log, load_rc = run(scratch, "exec")
    assert finding(report, "tmp.exec")["severity"] == "ok"
    assert load_rc == 0, load_log
