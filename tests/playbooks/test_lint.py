"""Every playbook and role stays ansible-lint clean at the production profile (.ansible-lint)."""
import subprocess
import sys
from pathlib import Path

from spillway import REPO


def test_playbooks_pass_ansible_lint_production_profile():
    lint = Path(sys.executable).parent / "ansible-lint"
    proc = subprocess.run([str(lint), "--nocolor", "--offline", "playbooks/"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Profile 'production' was required, and it passed" in proc.stderr + proc.stdout
