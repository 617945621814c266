#!/usr/bin/python3
"""The classroom page in headless Chromium (Debian's chromium and
chromium-driver, driven by Debian's python3-selenium): it loads offline
from file://, and each widget gives the bits `fplab sum` / `fplab round`
give for the same input.

usage: test_page.py PAGE FPLAB A4_NPY
"""
import json
import pathlib
import subprocess
import sys
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def fplab_json(fplab, command, *args):
    out = subprocess.run([fplab, command, "--json", *args], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


def page_totals(driver):
    rows = driver.find_elements(By.CSS_SELECTOR, "#totals tbody tr")
    return {r.get_attribute("data-strategy"): r.find_element(By.CSS_SELECTOR, ".hex").text
            for r in rows}


def cli_totals(fplab, numbers, dtype, strategies):
    args = ["sum", "--dtype", dtype]
    for s in strategies:
        args += ["-s", s]
    j = fplab_json(fplab, *args, "--", *numbers)
    return {s["name"]: s["total"]["hex"] for s in j["strategies"]}, j["exact"]["hex"]


def main():
    page, fplab, a4 = sys.argv[1:4]
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"):
        options.add_argument(flag)
    profile = tempfile.TemporaryDirectory()
    options.add_argument(f"--user-data-dir={profile.name}")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(pathlib.Path(page).resolve().as_uri())
        WebDriverWait(driver, 120).until(
            lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
        check(True, "the page loads offline and its WebAssembly module starts")

        # Widget 1: the teacher's example, then float32 numbers reordered.
        strategies = list(page_totals(driver))
        check(len(strategies) >= 6, f"widget 1 shows {len(strategies)} strategies")
        ours, exact = cli_totals(fplab, ["0.1", "1e20", "-1e20"], "float64", strategies)
        check(page_totals(driver) == ours, "widget 1: 0.1 1e20 -1e20, every total = fplab sum's")
        check(exact in driver.find_element(By.ID, "exact").text, "widget 1: exact = fplab sum's")
        numbers = ["1e8", "1", "-1e8", "0.5", "3", "-0.25", "7e-3"]
        driver.execute_script("document.getElementById('numbers').value = arguments[0];"
                              "document.getElementById('dtype').value = 'float32';",
                              " ".join(numbers))
        driver.find_element(By.ID, "reverse").click()
        ours, exact = cli_totals(fplab, list(reversed(numbers)), "float32", strategies)
        check(page_totals(driver) == ours, "widget 1: float32, reversed, every total = fplab sum's")
        distinct = len(set(ours.values()))
        check(distinct > 1, f"widget 1: the orders disagree ({distinct} distinct totals)")

        # Widget 2: the A4 data in K chunks.
        for k in (1, 4, 16):
            driver.execute_script("const s = document.getElementById('k'); s.value = arguments[0];"
                                  "s.dispatchEvent(new Event('input'));", str(k))
            shown = driver.find_element(By.ID, "chunk-total").get_attribute("data-hex")
            strategy = "numpy" if k == 1 else f"chunked({k},numpy,sequential)"
            j = fplab_json(fplab, "sum", "--file", a4, "-s", strategy)
            check(shown == j["strategies"][0]["total"]["hex"],
                  f"widget 2: K = {k}: {shown} = fplab sum -s {strategy}")
        check(driver.find_element(By.ID, "chunk-total").text.startswith("998.570678711"),
              "widget 2: K = 16 prints the claim's 998.570678711")

        # Widget 3: logits rounded to bf16; the argmax flips by a tie.
        values = driver.find_element(By.ID, "logit-values").get_attribute("value").split()
        rounded = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#rounded .hex")]
        for v, shown in zip(values, rounded):
            j = fplab_json(fplab, "round", v, "--format", "bf16")
            theirs = j["values"][0]["formats"][0]["rounded"]["hex"]
            check(shown == theirs, f"widget 3: {v} in bf16 = {shown}, fplab round says {theirs}")
        argmax = driver.find_element(By.ID, "argmax")
        check(argmax.get_attribute("data-argmax") != argmax.get_attribute("data-argmax-rounded"),
              "widget 3: the default logits flip the argmax in bf16")
        driver.execute_script("document.getElementById('format').value = 'fp32';"
                              "document.getElementById('format').dispatchEvent(new Event('change'));")
        check(argmax.get_attribute("data-argmax") == argmax.get_attribute("data-argmax-rounded"),
              "widget 3: and not in fp32 (the negative control)")

        # Bad input is a message on the page, not a broken page.
        driver.execute_script("document.getElementById('numbers').value = '0.1 abc';")
        driver.find_element(By.ID, "sum").click()
        check("not a number" in driver.find_element(By.ID, "exact").text,
              "bad input: a one-line error on the page")
    finally:
        driver.quit()
    print(f"{len(failures)} failed" if failures else "all classroom checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
