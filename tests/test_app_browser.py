"""End to end: `streamlit run app.py` on localhost, driven by headless Chromium through Playwright.

Changes a what-if knob (HBM bandwidth +50%) and checks that the numbers and the chart update,
that the URL carries the scenario and restores it in a fresh page, that a bad URL value is a notice
(never a traceback), and saves screenshots under tests/artifacts/. Uses Debian's Chromium
(/usr/bin/chromium); `.ci/run` installs it when missing.

Every wait is on the app's state, never a fixed sleep: the footer the app writes last on each run
(`.st-key-footer`), Streamlit's running indicator gone, the element a check reads. TIMEOUT_S bounds
each wait generously: on two cores shared with other test workers a first page load can take a minute.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
MARKS = "*†§‡"
TIMEOUT_S = 180
DONE = ".st-key-footer"  # app.py writes it last on every run
IDLE = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
CHART_DRAWN = '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"{CHROMIUM} not installed (Debian package 'chromium'; .ci/run installs it)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """One Streamlit server for the module (started once, stopped at the end)."""
    port = _free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + TIMEOUT_S
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).status == 200:
                break
        except OSError:
            time.sleep(0.3)
        if proc.poll() is not None:
            break
    else:
        proc.kill()
    if proc.poll() is not None:
        log.seek(0)
        pytest.fail(f"streamlit did not start:\n{log.read().decode()[-2000:]}")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    profile = tempfile.mkdtemp(prefix="perfmodel-chromium-")
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=ARGS,
                                                    viewport={"width": 1500, "height": 1100})
        yield ctx
        ctx.close()
    shutil.rmtree(profile, ignore_errors=True)


def _metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _chart_shot(page) -> bytes:
    """Screenshot of the first chart, located afresh on each try (Streamlit re-renders elements, so a
    located element can detach from the DOM between calls); retried until TIMEOUT_S."""
    from playwright.sync_api import Error as PlaywrightError

    deadline = time.time() + TIMEOUT_S
    while True:
        try:
            chart = page.locator('[data-testid="stVegaLiteChart"]').first
            chart.scroll_into_view_if_needed(timeout=10000)
            return chart.screenshot(timeout=10000)
        except PlaywrightError:
            if time.time() > deadline:
                raise
            _next_frame(page)


def _next_frame(page) -> None:
    """Until the browser has painted one more frame (a state change to look for, not a fixed delay)."""
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => done(null)))")


def _number(text: str) -> float:
    return float(text.rstrip(MARKS).replace(",", ""))


def _open(page, url: str, chart: bool = True) -> None:
    """Load `url` and wait until the app's run is done (footer written, not running) and, with
    `chart`, its first chart drawn."""
    page.goto(url)
    page.wait_for_selector(DONE, timeout=TIMEOUT_S * 1000)
    _wait_idle(page)
    if chart:
        page.wait_for_selector(CHART_DRAWN, timeout=TIMEOUT_S * 1000)


def _wait_idle(page) -> None:
    """Until Streamlit has finished the current run (no 'running' status widget)."""
    page.wait_for_function(IDLE, timeout=TIMEOUT_S * 1000)


def _no_traceback(page) -> None:
    assert not page.locator('[data-testid="stException"]').count()
    assert "Traceback" not in page.content()


def test_what_if_knob_updates_numbers_and_chart(server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page()
    _open(page, f"{server}/?page=Roofline&system=trn2-ultraserver&workload=llama-3-70b&phase=decode&batch=64"
          "&context=4096&tp=4&dtype=bf16")
    before = _metric(page, "TPOT (ms)")
    chart_before = _chart_shot(page)
    page.screenshot(path=str(ARTIFACTS / "app_roofline_before.png"), full_page=True)

    knob = page.get_by_label("HBM bandwidth change (%)")
    knob.fill("50")
    t0 = time.time()
    knob.press("Enter")
    page.wait_for_function(
        "(old) => { const m = [...document.querySelectorAll('[data-testid=\"stMetric\"]')]"
        ".find(e => e.innerText.includes('TPOT (ms)'));"
        " return m && !m.innerText.includes(old) && m.innerText.includes('‡'); }",
        arg=before, timeout=TIMEOUT_S * 1000)
    redraw_s = time.time() - t0
    _wait_idle(page)
    after = _metric(page, "TPOT (ms)")
    assert after.endswith("‡")  # figures resting on the override are marked
    assert _number(after) < 0.9 * _number(before)  # HBM-bound decode gets faster
    assert "What-if: spec.hbm_bandwidth=+50%" in page.locator('[data-testid="stAlert"]').first.inner_text()
    deadline = time.time() + TIMEOUT_S  # vega may still be drawing the new points on a loaded machine
    while _chart_shot(page) == chart_before and time.time() < deadline:
        _next_frame(page)
    assert _chart_shot(page) != chart_before  # the roofline points moved
    page.screenshot(path=str(ARTIFACTS / "app_roofline_hbm_plus50.png"), full_page=True)
    (ARTIFACTS / "app_redraw_seconds.txt").write_text(f"{redraw_s:.3f}\n")  # measured; TIMEOUT_S catches a hang

    # the URL carries the scenario: a fresh page restores the knob and the same numbers
    url = page.url
    assert "s.hbm_bandwidth=%2B50%25" in url or "s.hbm_bandwidth=+50%" in url
    shared = browser.new_page()
    _open(shared, url)
    assert _metric(shared, "TPOT (ms)") == after
    assert shared.get_by_label("HBM bandwidth change (%)").input_value() in ("50.00", "50", "50.0")
    shared.screenshot(path=str(ARTIFACTS / "app_shared_url.png"), full_page=True)
    shared.close()
    page.close()


def test_pages_render_in_the_browser(server, browser):
    page = browser.new_page()
    for name, expect in (("Hardware", "Spec sheet"), ("Memory", "Memory per device"),
                         ("Formulas", "Sensitivity of the result"),
                         ("Validation", "Predicted vs measured")):
        _open(page, f"{server}/?page={name}&system=trn3-ultraserver&workload=llama-3-8b&phase=decode&tp=1",
              chart=False)
        assert page.get_by_text(expect).count()
        _no_traceback(page)
        page.screenshot(path=str(ARTIFACTS / f"app_{re.sub(r'[^a-z]', '_', name.lower())}.png"), full_page=True)
    page.close()


def test_validation_scatter_draws_in_the_browser(server, browser):
    page = browser.new_page()
    _open(page, f"{server}/?page=Validation")
    _no_traceback(page)
    assert page.get_by_text("By phase").count() and page.get_by_text("cannot express").count()
    shot = _chart_shot(page)
    assert len(shot) > 5000  # a drawn scatter, not an empty frame
    page.screenshot(path=str(ARTIFACTS / "app_validation.png"), full_page=True)
    page.close()


def test_bad_url_values_are_notices_not_tracebacks(server, browser):
    page = browser.new_page()
    _open(page, f"{server}/?page=Roofline&system=trn9&s.hbm_bandwidth=xabc&batch=-3")
    alerts = page.locator('[data-testid="stAlert"]')
    texts = [alerts.nth(i).inner_text() for i in range(alerts.count())]
    for words in (("system='trn9'", "showing trn2-ultraserver"), ("s.hbm_bandwidth='xabc'", "ignored"),
                  ("batch='-3'", "1 to 65,536")):
        assert sum(all(w in t for w in words) for t in texts) == 1, (words, texts)
    _no_traceback(page)
    assert _number(_metric(page, "TPOT (ms)")) > 0  # the page is the default system's, computed
    assert "system=trn2-ultraserver" in page.url and "xabc" not in page.url
    page.screenshot(path=str(ARTIFACTS / "app_bad_url.png"), full_page=True)
    page.close()


def _input(page, label: str) -> str:
    """The value in the number input labelled `label` (exactly: chart marks carry aria-labels too)."""
    return page.get_by_role("spinbutton", name=label, exact=True).input_value()


def _widget_text(page, testid: str, label: str) -> str:
    """The shown value of a Streamlit selectbox / multiselect with `label`."""
    return page.locator(f'[data-testid="{testid}"]').filter(has_text=label).first.inner_text()


def test_a_shared_link_restores_the_serving_and_planner_inputs(server, browser):
    page = browser.new_page()
    _open(page, f"{server}/?page=Serving&workload=llama-3-8b&srv_systems=trn3-ultraserver&srv_isl=4096&srv_osl=256"
                "&srv_y=chip&srv_grid=quick")
    _no_traceback(page)
    assert _input(page, "Input tokens") == "4096" and _input(page, "Output tokens") == "256"
    systems = _widget_text(page, "stMultiSelect", "Systems")
    assert "trn3-ultraserver" in systems and "trn2-ultraserver" not in systems
    assert page.locator('[aria-label^="Y-axis titled \'Output tokens/s per chip\'"]').count()  # srv_y=chip, drawn
    _open(page, f"{server}/?page=Capacity+planner&workload=llama-3-8b&plan_rps=40&plan_peak=2&plan_isl=2048"
                "&plan_osl=512&plan_tpot=0.05&plan_ttft=3&plan_systems=p5.48xlarge,trn2-ultraserver&plan_grid=quick"
                "&plan_pct=0&plan_modes=aggregated,disaggregated")
    _no_traceback(page)
    for label, value in (("Requests per second", "40.00"), ("Peak / average", "2.00"), ("Input tokens", "2048"),
                         ("Output tokens", "512"), ("SLA: TPOT at most (s)", "0.050"),
                         ("SLA: TTFT at most (s)", "3.00")):
        assert _input(page, label) == value, label
    systems = _widget_text(page, "stMultiSelect", "Systems")
    assert "p5.48xlarge" in systems and "trn2-ultraserver" in systems and "trn3-ultraserver" not in systems
    assert "disaggregated" in _widget_text(page, "stMultiSelect", "Serving modes")
    assert page.get_by_text("is the cheapest way to serve 80 requests/s").count()
    assert "plan_rps=40" in page.url and "plan_modes=aggregated%2Cdisaggregated" in page.url
    page.screenshot(path=str(ARTIFACTS / "app_planner_link.png"), full_page=True)
    page.close()


def test_an_uploaded_config_json_runs_on_the_roofline_page(server, browser, tmp_path):
    config = tmp_path / "config.json"
    config.write_bytes((ROOT / "reference" / "model_configs" / "meta-llama--Meta-Llama-3.1-8B.json").read_bytes())
    page = browser.new_page()
    _open(page, f"{server}/?page=Roofline&system=p5.48xlarge&workload=llama-3.1-8b&batch=8&tp=1")
    catalogue = _number(_metric(page, "TPOT (ms)"))
    # the sidebar's model uploader, by its key (its input is there whether or not the expander is open)
    page.locator('.st-key-byo_model input[type="file"]').set_input_files(str(config))
    page.get_by_text("llama-h4096-l32").first.wait_for(state="attached", timeout=TIMEOUT_S * 1000)
    _wait_idle(page)
    _no_traceback(page)
    page.wait_for_selector(CHART_DRAWN, timeout=TIMEOUT_S * 1000)
    assert "llama-h4096-l32" in page.locator("h3").first.inner_text()
    assert _number(_metric(page, "TPOT (ms)")) == pytest.approx(catalogue, rel=0.02)
    assert "config.json" in page.url
    page.screenshot(path=str(ARTIFACTS / "app_uploaded_model.png"), full_page=True)
    page.close()


def test_two_scenario_files_are_compared_in_the_browser(server, browser, tmp_path):
    """Two scenario files (as `perfmodel roofline --save-scenario` writes them) uploaded on the Compare page: the
    table puts them side by side with the second's change against the first, and the chart draws the changes."""
    from perfmodel.catalog import scenario_files as sf
    from perfmodel.catalog import whatif as wi

    opts = wi.ScenarioOptions(phase="decode", batch=64, context=4096, tp=4)
    files = []
    for name, system in (("trn2", "trn2-ultraserver"), ("trn3", "trn3-ultraserver")):
        path = tmp_path / f"{name}.toml"
        path.write_text(sf.to_toml(sf.Saved(name, system, "llama-3-8b", opts)))
        files.append(str(path))
    page = browser.new_page()
    _open(page, f"{server}/?page=Compare&workload=llama-3-8b", chart=False)
    page.locator('.st-key-cmp_files input[type="file"]').set_input_files(files)
    # the grid draws on a canvas; its accessible table (hidden) carries the text
    page.get_by_text("trn3 vs trn2").first.wait_for(state="attached", timeout=TIMEOUT_S * 1000)
    _wait_idle(page)
    page.wait_for_selector(CHART_DRAWN, timeout=TIMEOUT_S * 1000)
    _no_traceback(page)
    grid = page.locator('[data-testid="stDataFrame"]').first.text_content()
    assert "trn3-ultraserver" in grid and "Tokens/s per chip" in grid
    page.screenshot(path=str(ARTIFACTS / "app_compare.png"), full_page=True)
    page.close()
