"""A real browser looks at report.html (issue 8 item 7).

The report of a small synthetic run (tests/report_fixtures.py) is opened in headless
Chromium (Debian's `chromium`, installed by scripts/deps.sh when root) with a 1400 x 900
window. The test fails on a console message or script error, on an image that does not load,
or on a page wider than the window, and keeps the screenshot under build/report-browser/.

How: a copy of the page with a small check script injected first in <head> (it records
window errors and console calls, then on load writes the page's scrollWidth, the window's
innerWidth and every image's naturalWidth into the DOM as JSON); `chromium --dump-dom` prints
that DOM. Chromium's own console log (--enable-logging=stderr) is checked as well, which
catches messages the page's scripts never see. A broken page (a missing image, an element
wider than the window, a script error) is checked the same way, to show the check fails.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import report_fixtures as fx
from ksync import document

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "build" / "report-browser"
WINDOW = (1400, 900)

CHECK_JS = """
<script>
(function () {
  var log = [];
  window.addEventListener('error', function (e) {
    log.push('error: ' + (e.message || (e.target && (e.target.src || e.target.href)) || e));
  }, true);
  ['error', 'warn', 'log', 'info'].forEach(function (k) {
    var orig = console[k];
    console[k] = function () {
      log.push('console.' + k + ': ' + Array.prototype.join.call(arguments, ' '));
      return orig.apply(console, arguments);
    };
  });
  window.addEventListener('load', function () {
    var imgs = Array.prototype.map.call(document.images, function (i) {
      return {src: i.getAttribute('src'), complete: i.complete, naturalWidth: i.naturalWidth};
    });
    var out = document.createElement('pre');
    out.id = 'ksync-check';
    out.textContent = JSON.stringify({
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth, images: imgs, log: log});
    document.body.appendChild(out);
  });
})();
</script>
"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.geteuid() == 0:
        pytest.fail("chromium is not installed although the tests run as root: "
                    "scripts/deps.sh (run by make test) installs it")
    pytest.skip("chromium is not installed and we are not root to install it "
                "(apt-get install chromium)")


def run_chromium(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
           "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}",
           f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def check_page(browser: str, page: Path, profile: Path) -> tuple[dict, list[str]]:
    """(what the check script saw, Chromium's console lines) for ``page``."""
    html = page.read_text(encoding="utf-8")
    checked = page.with_name("ksync-check-" + page.name)
    checked.write_text(html.replace("<head>", "<head>" + CHECK_JS, 1), encoding="utf-8")
    p = run_chromium(browser, profile, "--dump-dom", checked.as_uri())
    m = re.search(r'<pre id="ksync-check">(.*?)</pre>', p.stdout, re.S)
    assert m, f"no check output from chromium (exit {p.returncode}): {p.stderr[-2000:]}"
    data = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<")
                      .replace("&gt;", ">").replace("&amp;", "&"))
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    return data, console


def problems(data: dict, console: list[str]) -> list[str]:
    out = [f"console: {l}" for l in console] + [f"page: {l}" for l in data["log"]]
    if data["scrollWidth"] > data["innerWidth"]:
        out.append(f"page is {data['scrollWidth']} px wide in a {data['innerWidth']} px window")
    for img in data["images"]:
        if not img["complete"] or img["naturalWidth"] == 0:
            out.append(f"image did not load: {img['src']}")
    return out


@pytest.fixture(scope="module")
def browser():
    return chromium()


def test_report_in_headless_chromium(browser, tmp_path):
    out = tmp_path / "results"
    document.render_results(out, prims=fx.prims_data(fx.LONG_CPU),
                            irq=fx.irq_data(fx.LONG_CPU, only=("spl-pessim", "spl-optim",
                                                               "cli-pessim", "cli-optim")))
    with tempfile.TemporaryDirectory(prefix="ksync-chromium-") as profile:
        data, console = check_page(browser, out / "report.html", Path(profile))
        assert data["innerWidth"] == WINDOW[0]
        assert len(data["images"]) >= 4                 # the figures are on the page
        assert problems(data, console) == []
        SHOTS.mkdir(parents=True, exist_ok=True)
        shot = SHOTS / "report.png"
        if shot.exists():
            shot.unlink()
        run_chromium(browser, Path(profile), f"--screenshot={shot}",
                     (out / "report.html").as_uri())
        assert shot.exists() and shot.stat().st_size > 0, "no screenshot written"


def test_the_check_catches_a_broken_page(browser, tmp_path):
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
                    '<img src="missing.png" alt="x">'
                    '<div style="width: 3000px">wide</div>'
                    '<script>undefined_function();</script></body></html>', encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="ksync-chromium-") as profile:
        data, console = check_page(browser, page, Path(profile))
    found = "\n".join(problems(data, console))
    assert "image did not load: missing.png" in found
    assert "px wide in a 1400 px window" in found
    assert "undefined_function" in found
