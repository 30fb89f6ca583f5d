#!/usr/bin/python3
"""console_browser — drives lapse-console's pages in headless Chromium
(Debian's chromium + chromium-driver, python3-selenium), for test 0961.

Environment (set by the test): RO_URL, RW_URL (a read-only console and one
with writes on, both of the test's namespace), TOKEN (a valid token of the
writable one), AXE (axe.min.js), PRODUCER (the lapse-producer command line,
as one shell string, reading lines on stdin), MOVER (an ID that moves in the
split under way), TIMED (an ID written with recovery on that times out while
the pages watch), SHOTS (a directory: screenshots of each page go there; unset:
none). Prints one "ok ..." line per check; on the first failure prints
"FAIL: ..." and exits 1. A missing tool is a failure, never a skip.
"""
import json
import os
import shutil
import subprocess
import sys
import time


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def ok(msg):
    print("ok " + msg, flush=True)


for tool in ("chromium", "chromedriver"):
    if not shutil.which(tool):
        fail(f"{tool} is missing: apt-get install chromium chromium-driver (scripts/install-deps)")
try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as e:
    fail(f"python3-selenium is missing ({e}): apt-get install python3-selenium (scripts/install-deps)")

RO, RW, TOKEN = os.environ["RO_URL"], os.environ["RW_URL"], os.environ["TOKEN"]
AXE = open(os.environ["AXE"], encoding="utf-8").read()
SHOTS = os.environ.get("SHOTS", "")

opts = webdriver.ChromeOptions()
opts.binary_location = shutil.which("chromium")
for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
          "--window-size=1200,900", "--disable-extensions", "--no-first-run"):
    opts.add_argument(a)
opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
try:
    drv = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
except Exception as e:  # (the driver's own message says what is wrong)
    fail(f"chromium did not start under chromedriver: {str(e).splitlines()[0]}")
drv.set_page_load_timeout(20)


def wait(what, cond, timeout=15):
    try:
        return WebDriverWait(drv, timeout, poll_frequency=0.2).until(lambda d: cond())
    except TimeoutException:
        fail(f"{what} (within {timeout} s); page: {text('main')[:600]!r}")


def text(css):
    # (read in one script call: the live pages redraw every second, and an
    # element found in one call may be gone by the next)
    return drv.execute_script("const e = document.querySelector(arguments[0]); "
                              "return e ? e.innerText : '';", css)


def go(url):
    drv.get(url)
    wait("the page's script ran", lambda: "Loading" not in text("main") and text("main") != "")


def no_errors(page):
    # (the console's script must not throw, nor the CSP block anything)
    bad = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
    if bad:
        fail(f"{page}: browser errors: {bad[:3]}")


def axe_check(page):
    drv.execute_script(AXE)
    res = drv.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(JSON.stringify(r.violations)))"
        ".catch(e => done(JSON.stringify([{id: 'axe-error', impact: 'critical', help: String(e)}])));")
    bad = [v for v in json.loads(res) if v.get("impact") in ("serious", "critical")]
    if bad:
        fail(f"{page}: accessibility violations (serious or critical): " +
             "; ".join(f"{v['id']}: {v.get('help')} ({len(v.get('nodes', []))} nodes)" for v in bad))
    ok(f"{page}: axe-core finds no serious or critical violation")


def shot(name):
    if SHOTS:
        drv.save_screenshot(os.path.join(SHOTS, f"console-{name}.png"))


drv.execute_script("")  # (a session that answers)

# ---------------------------------------------------------------- each page loads
go(RO + "/#/status")
wait("the namespace page shows its shards", lambda: "shards, state" in text("#summary"))
nshards = int(text("#summary").split()[0])
rows = drv.execute_script("return document.querySelector('main table').tBodies[0].rows.length")
if rows != nshards:
    fail(f"namespace page: {rows} shard rows, {nshards} shards")
ok(f"namespace page: {nshards} shards, a row each")
wait("the split in progress shown with what is left to move",
     lambda: "Split in progress" in text("#change") and "left to move" in text("#change"))
ok("namespace page: " + text("#change"))
wait("the freshness line", lambda: "Read from Redis" in text("#fresh"))
no_errors("namespace page")
axe_check("namespace page")
shot("status")

go(RO + "/#/due")
wait("the due-time chart", lambda: "pending" in text("#due-total"))
label = drv.execute_script("return document.querySelector('svg.chart').getAttribute('aria-label')")
if "later" not in label and ">1d" not in label:
    fail(f"due page: the chart's label says no range: {label}")
ok("due page: chart and totals (" + text("#due-total")[:80] + ")")
no_errors("due page")
axe_check("due page")
shot("due")

# ---------------------------------------------------------------- a timeout, then recovered
timed = os.environ["TIMED"]
go(RO + "/#/offline")
wait(f"{timed} offline (its timeout fired)", lambda: timed in text("#offline-list"), timeout=30)
ok(f"offline page: {timed} shows up once its timeout fired")
no_errors("offline page")
axe_check("offline page")
shot("offline")
go(RO + "/#/id/" + timed)
wait("the ID page's watch state", lambda: "Offline since" in text("#id-watch"))
ok(f"ID page: {timed}: " + text("#id-watch")[:60])
subprocess.run(os.environ["PRODUCER"], shell=True, input=f"watch {timed} +600000\n", text=True,
               check=True, stderr=subprocess.DEVNULL)
go(RO + "/#/offline")
wait(f"{timed} gone from the offline list (recovered)", lambda: "offline" in text("#offline-count").lower()
     and timed not in text("#offline-list"), timeout=20)
go(RO + "/#/id/" + timed)
wait("the ID page says it is not offline", lambda: text("#id-watch").startswith("Not offline"))
ok(f"after a write {timed} has recovered: " + text("#id-watch")[:40])

# ---------------------------------------------------------------- one ID, found
go(RO + "/#/status")
box = drv.find_element(By.ID, "find-id")
box.clear()
box.send_keys("a-1")
drv.find_element(By.CSS_SELECTOR, "#find button").click()
wait("the ID page of a-1", lambda: "a-1" in text("#id-title") and "Shard" in text("#id-where"))
wait("a-1's time remaining", lambda: text(".remaining").startswith("in "))
first = text(".remaining")
wait("the time remaining ticks", lambda: text(".remaining") != first, timeout=5)
if "hello" not in text("main dl"):
    fail("a-1's payload is not shown: " + text("main dl")[:300])
ok("ID page: a-1 found, " + text(".remaining") + " remaining, payload shown")
no_errors("ID page")
axe_check("ID page")
shot("id")
mover = os.environ["MOVER"]
go(RO + "/#/id/" + mover)
wait("the twin of an ID that moves in the split", lambda: "old shard" in text("main") and text("#id-twin"))
ok(f"ID page: {mover}'s twin: " + text("#id-twin")[:60])

# ---------------------------------------------------------------- actions
def press_twice(btn):
    drv.find_element(By.ID, btn).click()
    wait("the action asks to confirm", lambda: "again to confirm" in text("#action-result"))
    drv.find_element(By.ID, btn).click()


go(RO + "/#/id/c-1")
wait("c-1's page", lambda: "c-1" in text("#id-title"))
drv.find_element(By.ID, "token").send_keys(TOKEN)
press_twice("cancel-btn")
wait("the read-only console refuses the cancel", lambda: "Refused (HTTP 405)" in text("#action-result"))
ok("read-only console: " + text("#action-result"))
go(RW + "/#/id/c-1")
wait("c-1's page (writes on)", lambda: "c-1" in text("#id-title") and text(".remaining"))
tok = drv.find_element(By.ID, "token")
tok.clear()
tok.send_keys("not-the-token-0123456789")
press_twice("cancel-btn")
wait("a wrong token refused", lambda: "Refused (HTTP 403)" in text("#action-result"))
ok("writable console, wrong token: " + text("#action-result"))
tok = drv.find_element(By.ID, "token")
tok.clear()
tok.send_keys(TOKEN)
press_twice("cancel-btn")
wait("the cancel confirmed", lambda: text("#action-result").startswith("Done: cancelled c-1"))
ok("writable console, the token: " + text("#action-result"))
wait("the page read again: nothing held", lambda: "holds nothing" in text("#id-where"))
go(RW + "/#/id/a-1")
wait("a-1's page (writes on)", lambda: text(".remaining"))
secs = drv.find_element(By.ID, "deadline-in")
secs.clear()
secs.send_keys("3600")
press_twice("deadline-btn")
wait("the new deadline confirmed", lambda: text("#action-result").startswith("Done: deadline of a-1"))
wait("a-1's new time remaining", lambda: text(".remaining").startswith("in 59 min") or text(".remaining").startswith("in 1 h"))
ok("writable console: deadline set, " + text(".remaining") + " remaining")
axe_check("ID page with actions")

# ---------------------------------------------------------------- 360 px wide
drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                    {"width": 360, "height": 740, "deviceScaleFactor": 1, "mobile": True})
for page, ready in (("status", "#summary"), ("due", "#due-total"), ("offline", "#offline-count"),
                    ("id/a-1", ".remaining")):
    go(RO + "/#/" + page)
    wait(f"{page} at 360 px", lambda: text(ready))
    w = drv.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    if w[0] > 360:
        fail(f"{page} at 360 px: the page is {w[0]} px wide (innerWidth {w[1]})")
    ok(f"{page} at 360 px: scrollWidth {w[0]}")
    if page == "status":
        shot("status-360")
drv.quit()
print("browser: all checks passed", flush=True)
