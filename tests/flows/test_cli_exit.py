"""The ``equisa`` console script's exit (``cli.main.run``): main's code, every exit handler run,
the output complete; only the interpreter's teardown is skipped."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from equisa_core.errors import RepositoryNotFoundError, exit_code_for

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})


def test_the_exit_code_is_mains_and_the_handlers_registered_later_still_run(tmp_path: Path):
    done = _python(f"""
        import atexit, sys
        from cli import main as cli
        def main():
            atexit.register(lambda: open({str(tmp_path / "late")!r}, "w").write("ran"))
            print("x" * 100_000, end="")  # more than a pipe's buffer: flushed at the exit
            return 21

        class Teardown:
            def __del__(self):
                print("torn down", end="")

        kept = Teardown()  # a module global: destroyed only in the interpreter's teardown
        cli.main = main
        sys.exit(cli.run())
    """, tmp_path)
    assert done.returncode == 21, done.stderr
    assert done.stdout == "x" * 100_000, "the output is complete, and the teardown did not run"
    assert (tmp_path / "late").read_text() == "ran", "a handler registered during the command ran"


def test_a_bad_repository_path_exits_with_its_own_code_and_says_why(tmp_path: Path):
    missing = tmp_path / "no-such-repository"
    done = subprocess.run([sys.executable, "-m", "cli.main", "repair", str(missing)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert done.returncode == exit_code_for(RepositoryNotFoundError("x")) != 0
    assert "does not exist" in done.stderr


def test_argparses_exit_keeps_its_code_and_skips_the_teardown_too(tmp_path: Path):
    for raised, code, said in (("SystemExit(2)", 2, ""), ("SystemExit()", 0, ""),
                               ("SystemExit('no such option')", 1, "no such option")):
        done = _python(f"""
            import sys
            from cli import main as cli
            def main():
                print("usage", end="")
                raise {raised}

            class Teardown:
                def __del__(self):
                    print("torn down", end="")

            kept = Teardown()
            cli.main = main
            sys.exit(cli.run())
        """, tmp_path)
        assert done.returncode == code, done.stderr
        assert done.stdout == "usage", "the output is complete, and the teardown did not run"
        assert said in done.stderr
