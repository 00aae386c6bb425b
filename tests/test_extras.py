"""Dependencies by use (core/extras.py): the core runs with no extra installed; a command that needs a missing one
says which extra installs it, in one line; the app without Streamlit says the same."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXTRA_MODULES = ("streamlit", "altair", "vl_convert", "plotext", "openpyxl", "dask", "distributed")
# every extra module made unimportable, as in an environment that installed `pip install -e .` alone
BLOCK = "import sys\nfor m in %r:\n    sys.modules[m] = None\n" % (EXTRA_MODULES,)


def _cli(*argv: str) -> subprocess.CompletedProcess:
    code = BLOCK + "from perfmodel.cli.parser import main\nsys.exit(main(%r))\n" % (list(argv),)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_the_core_runs_with_no_extra_installed():
    r = _cli("roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "-f", "csv")
    assert r.returncode == 0 and "time_s" in r.stdout.splitlines()[0], r.stderr[-500:]


@pytest.mark.parametrize("argv, extra", [
    (["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "-f", "xlsx", "--out", "{tmp}/r.xlsx"],
     "xlsx"),
    (["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--plot"], "charts"),
    (["serve", "--hardware", "p5.48xlarge", "--workload", "llama-3.1-8b", "--chart", "{tmp}/c.svg", "--no-progress"],
     "charts"),
])
def test_a_missing_extra_is_named_in_one_line(tmp_path, argv, extra):
    r = _cli(*[a.replace("{tmp}", str(tmp_path)) for a in argv])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 1 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-500:]
    assert f"'{extra}' extra: pip install -e '.[{extra}]'" in lines[0]
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_app_without_streamlit_names_the_app_extra():
    code = BLOCK + f"sys.argv = ['app.py']\nimport runpy\nrunpy.run_path({str(ROOT / 'app.py')!r})\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 1 and "'app' extra" in r.stderr and "Traceback" not in r.stderr, r.stderr[-500:]
