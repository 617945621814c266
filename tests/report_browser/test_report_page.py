#!/usr/bin/python3
"""report.html in headless Chromium (Debian's chromium and chromium-driver,
driven by Debian's python3-selenium, set up as tests/classroom/test_page.py
does): at 1400 x 900 and at 390 x 844 (a phone), the page has no
horizontal overflow (document.documentElement.scrollWidth <=
window.innerWidth: wide tables scroll inside their own box) and every
figure is an <img> that decoded (naturalWidth > 0). Every in-page link
lands on an element of the page.

Negative controls: the same checks fail on copies of the page with a wide
table outside its scroll box, and with a figure whose SVG is broken.

usage: test_report_page.py FPLAB WORKDIR
  runs `FPLAB run EXPERIMENTS --quick --out WORKDIR/run` first (a few
  experiments with the widest tables and the figures the report leads with).
"""
import base64
import pathlib
import subprocess
import sys
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

EXPERIMENTS = ["permutations", "chunked", "batch-variance", "batch-answers", "top2-gaps",
               "precision-flips", "flip-prediction", "nucleus"]
SCREENS = [(1400, 900, False), (390, 844, True)]
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def start_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(flag)
    profile = tempfile.TemporaryDirectory()
    options.add_argument(f"--user-data-dir={profile.name}")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    return driver, profile


def load(driver, page, width, height, mobile):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1,
                            "mobile": mobile})
    driver.get(pathlib.Path(page).resolve().as_uri())
    driver.execute_script("return document.readyState")
    # Images decode asynchronously: wait for every one to settle.
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Promise.all([...document.images].map(i => i.decode().catch(() => null)))"
        ".then(() => done(true));")


def overflow(driver):
    """(scrollWidth, innerWidth) of the page."""
    return driver.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth];")


def figures(driver):
    """(figures, images, images that decoded with a width)."""
    return driver.execute_script(
        "const imgs = [...document.images];"
        "return [document.querySelectorAll('figure').length, imgs.length,"
        "        imgs.filter(i => i.complete && i.naturalWidth > 0).length];")


def dangling_links(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('a[href^=\"#\"]')]"
        "  .map(a => a.getAttribute('href').slice(1))"
        "  .filter(id => !document.getElementById(id));")


def main():
    fplab, work = sys.argv[1:3]
    out = pathlib.Path(work) / "run"
    subprocess.run([fplab, "run", *EXPERIMENTS, "--quick", "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    page = out / "report.html"
    html = page.read_text()
    svgs = sorted((out / "figures").glob("*.svg"))
    check(len(svgs) >= 5, f"gnuplot drew {len(svgs)} figures")
    check('name="viewport"' in html, "the page has a viewport meta tag")

    # Negative controls: a wide table outside any scroll box; a broken figure.
    wide = pathlib.Path(work) / "wide.html"
    wide.write_text(html.replace(
        "<body>", "<body>\n<table><tr><td style=\"white-space:nowrap\">" + "1,2," * 2000 +
        "</td></tr></table>", 1))
    broken = pathlib.Path(work) / "broken.html"
    bad_svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg' width='10'").decode()
    broken.write_text(html.replace("<body>", "<body>\n<figure><img src=\"data:image/svg+xml;base64,"
                                   + bad_svg + "\"></figure>", 1))

    driver, profile = start_browser()
    try:
        for width, height, mobile in SCREENS:
            load(driver, page, width, height, mobile)
            scroll, inner = overflow(driver)
            check(inner == width, f"{width}x{height}: the window is {inner} px wide")
            check(scroll <= inner,
                  f"{width}x{height}: no horizontal overflow (scrollWidth {scroll} <= {inner})")
            n_fig, n_img, decoded = figures(driver)
            check(n_img == n_fig and n_img >= len(svgs) and decoded == n_img,
                  f"{width}x{height}: {decoded} of {n_img} images decoded, {n_fig} figures, "
                  f"{len(svgs)} SVG files")
            missing = dangling_links(driver)
            check(not missing, f"{width}x{height}: every in-page link has a target {missing[:5]}")

            load(driver, wide, width, height, mobile)
            scroll, inner = overflow(driver)
            check(scroll > inner, f"{width}x{height}: negative control, an unwrapped wide table "
                  f"overflows (scrollWidth {scroll} > {inner})")
            load(driver, broken, width, height, mobile)
            n_fig, n_img, decoded = figures(driver)
            check(decoded < n_img, f"{width}x{height}: negative control, the broken figure is "
                  f"seen ({decoded} of {n_img} decoded)")
    finally:
        driver.quit()
        profile.cleanup()
    print(f"{len(failures)} failed" if failures else "all report page checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
