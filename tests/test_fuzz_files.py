"""Input files as they come (issue 47): a device, a FIFO or an endless stream is refused at once (never read
forever or waited on), a UTF-8 byte-order mark is accepted in every TOML, JSON and CSV input, another encoding is
refused naming it, a runaway line and a TOML nested past the parser's depth name the file; and the outputs of a
command never replace its inputs, a catalogue file, each other, or what is not a regular file."""

import codecs
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from perfmodel.catalog.files import catalog_root
from perfmodel.cli.parser import main
from perfmodel.core import input_files

FAST = 2.0  # seconds: a refusal comes at once
RF = ["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b"]
SIM = ["simulate", "--hardware", "p5.48xlarge", "--workload", "llama-3.1-8b", "--no-progress"]
TRACE = "arrival_s,input_tokens,output_tokens\n0,100,10\n0.5,200,20\n"
DEMAND = ('[demand]\nworkload = "llama-3-8b"\nrequests_per_s = 5.0\npeak_to_average = 1.0\ninput_tokens = 512\n'
          'output_tokens = 128\nttft_s = 2.0\ntpot_s = 0.05\n')


def _run(capsys, argv) -> tuple[int, str, str, float]:
    """main(argv) under a 20 s alarm (a regression that reads forever fails instead of hanging the suite)."""
    def stop(*_):
        raise TimeoutError("the command did not return")
    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    t0 = time.perf_counter()
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out, err = capsys.readouterr()
    return rc, out, err, time.perf_counter() - t0


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module", autouse=True)
def warm():
    """Imports and graphs built once, untimed: a case is timed on its refusal."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main([*RF, "-f", "json"])
        main(["validate", "--cases", "no-such.csv"])
        main(["plan"])
    yield


def _inputs(tmp_path):
    """Every input option a command reads a file through, as (name, argv builder)."""
    return {
        "--cases": lambda p: ["validate", "--cases", p],
        "--trace (simulate)": lambda p: [*SIM, "--trace", p],
        "--trace (plan)": lambda p: ["plan", "--systems", "p5.48xlarge", "--workload", "llama-3.1-8b", "--trace", p,
                                     "--no-progress"],
        "--demand": lambda p: ["plan", "--demand", p, "--systems", "p5.48xlarge", "--no-progress"],
        "--scenario": lambda p: ["roofline", "--scenario", p],
        "--calibration": lambda p: ["--calibration", p, *RF],
        "workloads import": lambda p: ["workloads", "import", p, "--name", "x"],
    }


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "folder"])
def test_a_device_a_fifo_or_a_folder_is_refused_at_once_by_every_input_option(capsys, tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    elif kind == "folder":
        path = tmp_path
    else:
        path = Path(kind)
    words = {"/dev/zero": "character device", "fifo": "FIFO", "folder": "folder"}[kind]
    for name, argv in _inputs(tmp_path).items():
        rc, _, err, took = _run(capsys, argv(str(path)))
        line = _one_line(err)
        assert rc not in (0, None) and str(path) in line and (words in line or "directory" in line.lower()), \
            (name, line)
        assert took < FAST, (name, took)


def _files(tmp_path, capsys) -> dict[str, tuple[str, str]]:
    """(text, input option) of a valid file of each kind."""
    sc = tmp_path / "made.toml"
    assert main([*RF, "--save-scenario", str(sc), "-f", "json"]) == 0
    capsys.readouterr()
    cases = catalog_root() / "reference" / "public_serving_dev.csv"
    hf = Path(__file__).parent / "fixtures" / "hf" / "llama-3-8b.json"
    return {"--trace (simulate)": (TRACE, "csv"), "--demand": (DEMAND, "toml"), "--scenario": (sc.read_text(), "toml"),
            "--cases": ("\n".join(cases.read_text().splitlines()[:4]) + "\n", "csv"),
            "workloads import": (hf.read_text(), "json")}


def test_a_utf8_byte_order_mark_is_read_in_every_kind_of_input(capsys, tmp_path):
    builders = _inputs(tmp_path)
    for name, (text, suffix) in _files(tmp_path, capsys).items():
        plain, marked = tmp_path / "plain" / f"f.{suffix}", tmp_path / "bom" / f"f.{suffix}"  # one stem: one name
        plain.parent.mkdir(exist_ok=True)
        marked.parent.mkdir(exist_ok=True)
        plain.write_text(text, encoding="utf-8")
        marked.write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
        a = _run(capsys, builders[name](str(plain)) + (["-f", "json"] if name != "workloads import" else []))
        b = _run(capsys, builders[name](str(marked)) + (["-f", "json"] if name != "workloads import" else []))
        assert a[0] == b[0] == 0, (name, a[2][-300:], b[2][-300:])
        if name in ("--demand", "--scenario", "workloads import"):  # deterministic outputs: the same answer
            assert a[1].replace(str(plain), "F") == b[1].replace(str(marked), "F"), name


@pytest.mark.parametrize("encoding, word", [("utf-16", "UTF-16"), ("utf-32", "UTF-32"), ("cp1252", "not UTF-8")])
def test_another_encoding_is_refused_naming_it(capsys, tmp_path, encoding, word):
    builders = _inputs(tmp_path)
    for name, (text, suffix) in _files(tmp_path, capsys).items():
        path = tmp_path / f"enc.{suffix}"
        path.write_bytes((text + "# café\n" if suffix == "toml" else text).encode(encoding)
                         if encoding != "cp1252" else (text.replace("llama", "llamé") + "é").encode(encoding))
        rc, _, err, _ = _run(capsys, builders[name](str(path)))
        line = _one_line(err)
        assert rc not in (0, None) and str(path) in line and word in line, (name, line)


def test_a_runaway_line_and_a_toml_nested_past_the_parser_name_the_file(capsys, tmp_path):
    builders = _inputs(tmp_path)
    long = tmp_path / "long.csv"
    long.write_text("arrival_s,input_tokens,output_tokens\n" + "1" * (input_files.MAX_LINE_CHARS + 10) + "\n")
    line = _one_line(_run(capsys, builders["--trace (simulate)"](str(long)))[2])
    assert str(long) in line and "line 2" in line
    for name in ("--demand", "--scenario", "--calibration"):
        deep = tmp_path / "deep.toml"
        deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
        line = _one_line(_run(capsys, builders[name](str(deep)))[2])
        assert str(deep) in line and "nested too deeply" in line and "recursion" not in line, (name, line)


# ---------------------------------------------------------------- outputs


@pytest.fixture()
def catalogue(tmp_path, monkeypatch):
    """A copy of the catalogue (a regression must not clobber the repository's files)."""
    root = tmp_path / "catalogue"
    for folder in ("hardware_specs", "workloads"):
        shutil.copytree(catalog_root() / folder, root / folder)
    monkeypatch.setenv("PERFMODEL_CATALOG", str(root))
    return root


@pytest.mark.parametrize("rel", ["hardware_specs/trn2-ultraserver.toml", "hardware_specs/chips/trainium2.toml",
                                 "hardware_specs/calibration/neuron.toml", "hardware_specs/serving/engines.toml",
                                 "hardware_specs/stacks/neuron.toml", "workloads/llama-3-8b.toml",
                                 "hardware_specs/p5.48xlarge.toml"])
def test_force_never_replaces_a_catalogue_file(capsys, catalogue, rel):
    target = catalogue / rel
    before = target.read_bytes()
    rc, _, err, _ = _run(capsys, ["--catalog", str(catalogue), *RF, "-f", "json", "--out", str(target), "--force"])
    line = _one_line(err)
    assert rc == 1 and str(target) in line and ("input this command read" in line or "catalogue file" in line)
    assert target.read_bytes() == before


def test_calibrate_may_write_its_own_fitted_folder(capsys, catalogue):
    out = catalogue / "hardware_specs" / "calibration" / "fitted" / "mine.toml"
    out.parent.mkdir(exist_ok=True)
    out.write_text("# an old set\n")
    rc, _, err, _ = _run(capsys, ["--catalog", str(catalogue), *RF, "-f", "json", "--out", str(out), "--force"])
    assert rc == 0, err and out.read_text().startswith("{")


def test_an_output_never_replaces_a_file_the_command_read(capsys, tmp_path):
    sc = tmp_path / "a.toml"
    assert main([*RF, "--save-scenario", str(sc), "-f", "json"]) == 0
    capsys.readouterr()
    before = sc.read_bytes()
    for argv in (["roofline", "--scenario", sc, "-f", "json", "--out", sc, "--force"],
                 ["roofline", "--scenario", sc, "--tp", "2", "--save-scenario", sc, "--force"]):
        rc, _, err, _ = _run(capsys, argv)
        line = _one_line(err)
        assert rc not in (0, None) and ("input this command read" in line or "this command reads" in line), line
        assert sc.read_bytes() == before


def test_what_is_not_a_regular_file_is_never_renamed_over(capsys, tmp_path):
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    for target in (pipe, link):
        rc, _, err, _ = _run(capsys, [*RF, "-f", "json", "--out", target, "--force"])
        assert rc == 1 and "not a regular file" in _one_line(err)
    assert pipe.is_fifo() and link.is_symlink()


@pytest.mark.parametrize("argv", [[*SIM, "--rate", "2", "--requests", "50", "--requests-out", "{x}", "--out", "{x}"],
                                  [*SIM, "--rate", "2", "--requests", "50", "--timeline-out", "{x}", "--out", "{x}"],
                                  ["serve", "--hardware", "p5.48xlarge", "--workload", "llama-3.1-8b", "--chart", "{x}",
                                   "--out", "{x}"],
                                  [*RF, "--save-scenario", "{x}", "--out", "{x}"]])
def test_two_outputs_of_one_command_to_one_path_are_refused_before_any_work(capsys, tmp_path, argv):
    x = tmp_path / "x.html"
    rc, _, err, took = _run(capsys, [str(x) if a == "{x}" else a for a in argv])
    assert rc == 2 and "give each output its own path" in _one_line(err) and not x.exists() and took < FAST


def test_an_unknown_draft_is_named_first(capsys):
    rc, _, err, took = _run(capsys, ["serve", "--hardware", "p5.48xlarge", "--workload", "llama-3.1-8b", "--draft",
                                     "eagle3-llama-3.1-8", "--acceptance", "0.8"])
    line = _one_line(err)
    assert rc == 1 and "--draft 'eagle3-llama-3.1-8': no such draft" in line and "eagle3-llama-3.1-8b" in line


def test_compare_refuses_an_invalid_plan_and_banners_a_misfit(capsys, tmp_path):
    """As roofline and memory: tp = 3 on 32 heads is no answer (never a TPOT change with exit 0); a scenario over
    the chip's memory is refused unless --allow-oversubscribed, then shown under its banner."""
    good, bad, big = tmp_path / "good.toml", tmp_path / "bad.toml", tmp_path / "big.toml"
    assert main([*RF, "--tp", "4", "--save-scenario", str(good), "-f", "json"]) == 0
    capsys.readouterr()
    text = good.read_text()
    bad.write_text(text.replace("tp = 4", "tp = 3").replace('name = "good"', 'name = "bad"'))
    big.write_text(text.replace('name = "good"', 'name = "big"').replace("batch = 1\n", "batch = 100000\n"))
    rc, out, err, _ = _run(capsys, ["compare", good, bad])
    line = _one_line(err)
    assert rc == 1 and not out and str(bad) in line and "invalid plan: tp_heads" in line
    rc, out, err, _ = _run(capsys, ["compare", good, big])
    assert rc == 1 and "exceeds the chip's HBM" in _one_line(err) and "--allow-oversubscribed" in err
    rc, out, err, _ = _run(capsys, ["compare", good, big, "--allow-oversubscribed", "-f", "csv"])
    assert rc == 0 and "NOT A VALID ANSWER" in err and "big" in out


# ---------------------------------------------------------------- no impossible answer through the side doors

def test_a_request_past_the_models_positions_is_refused_naming_row_and_value(capsys, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,100,10\n0.5,131000,100\n")  # llama-3.1-8b: 131,072
    for argv in ([*SIM, "--trace", trace], ["plan", "--systems", "p5.48xlarge", "--workload", "llama-3.1-8b",
                                              "--trace", trace, "--no-progress"]):
        rc, _, err, _ = _run(capsys, argv)
        line = _one_line(err)
        assert rc == 1 and "row 3" in line and "131100 tokens" in line and "131072 positions" in line, line
    rc, _, err, _ = _run(capsys, ["plan", "--systems", "p5.48xlarge", "--workload", "llama-3.1-8b", "--rps", "1",
                                  "--input", "200000", "--output", "10", "--ttft", "100", "--tpot", "1"])
    assert rc == 1 and "past the 131072 positions of llama-3.1-8b" in _one_line(err)


def test_shares_of_requests_must_sum_to_one(capsys):
    rc, _, err, _ = _run(capsys, ["plan", "--systems", "p5.48xlarge", "--workload", "llama-3.1-8b", "--rps", "1",
                                  "--input", "512:0.5,1024:0.6", "--output", "10", "--ttft", "2", "--tpot", "0.1"])
    assert rc == 1 and "must sum to 1, got 1.1" in _one_line(err)


@pytest.mark.parametrize("option", ["--max-running", "--token-budget", "--kv-blocks"])
def test_zero_is_never_a_silent_default(capsys, option):
    rc, _, err, _ = _run(capsys, [*SIM, "--requests", "20", option, "0"])
    assert rc == 2 and "(or auto), got 0" in err
    rc, out, err, _ = _run(capsys, [*SIM, "--requests", "20", option, "auto", "-f", "json"])
    assert rc == 0, err


def test_a_fleet_no_one_could_buy_is_no_answer(capsys):
    rc, out, err, _ = _run(capsys, ["plan", "--systems", "p5.48xlarge", "--workload", "llama-3.1-8b", "--rps", "1e9",
                                    "--input", "512", "--output", "128", "--ttft", "2", "--tpot", "0.1",
                                    "--no-progress", "-f", "json"])
    import json

    row = json.loads(out)["results"]["table"][0]
    assert rc == 0 and row["feasible"] is False and row["chips"] > 2_000_000 and "no fleet" in row["note"]
    assert row.get("usd_per_month") is None  # never priced


# ---------------------------------------------------------------- bounded work, said before it starts

@pytest.mark.parametrize("argv, words", [
    ([*SIM, "--requests", "10000000"], "10,000,000 requests over 1 worker: about 28 min"),
    ([*SIM, "--mode", "disaggregated", "--prefill-workers", "100000", "--decode-workers", "100000", "--requests",
      "10000"], "over 200,000 workers: about 12 min"),
    (["sweep", "--hardware", "trn2-ultraserver", "--workload", "llama-3-70b", "--phase", "decode", "--grid",
      "batch=1:100000:+1", "--grid", "context=1024:32768:x2", "--grid", "tp=1,2,4,8,16", "--out", "{tmp}/big.csv"],
     "3,000,000 configurations: about 2 min and 1.8 GB written"),
])
def test_long_work_off_a_terminal_needs_yes(capsys, tmp_path, argv, words):
    rc, _, err, took = _run(capsys, [a.replace("{tmp}", str(tmp_path)) for a in argv])
    line = _one_line(err)
    assert rc == 1 and words in line and "--yes" in line and took < 10, (line, took)
    assert not (tmp_path / "big.csv").exists()


def test_on_a_terminal_long_work_is_said_then_run(capsys, monkeypatch):
    from perfmodel.cli import work_gate

    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    work_gate.gate("simulate", "10 requests", 3600.0)  # no exception: said, then run
    assert "about 60 min (estimate); running" in capsys.readouterr().err
    work_gate.gate("simulate", "10 requests", 3600.0, yes=True)
    work_gate.gate("simulate", "10 requests", 30.0, written_bytes=1e6)
    assert not capsys.readouterr().err
    assert work_gate.calibrate_seconds(12, 190, 8) == pytest.approx(40 + 13 * 12)


def test_training_chips_come_in_whole_instances(capsys):
    rc, _, err, _ = _run(capsys, ["plan", "--train", "--tokens", "1e12", "--workload", "llama-3-8b", "--hardware",
                                  "p5.48xlarge", "--chips", "12", "--no-progress"])
    assert rc == 1 and "instances of 8 chips; give a multiple of 8 (8 or 16)" in _one_line(err)
