"""The CLI's contract: bad input gets one clear line and exit 2."""
import subprocess

import pytest

from conftest import HEADROOM


@pytest.mark.parametrize("args, message", [
    (["check", "--batch-bytes", "12XB"], "invalid size '12XB'"),
    (["check", "--workers", "-3"], "--workers must not be negative"),
    (["check", "--dir", "/nonexistent/headroom"], "--dir /nonexistent/headroom: No such file"),
    (["check", "--warn-percent", "120"], "--warn-percent"),
    (["frobnicate"], "frobnicate"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = subprocess.run([HEADROOM, *args], capture_output=True, text=True)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
