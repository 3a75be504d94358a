#!/usr/bin/env python3
"""CTest: the web page of `parley serve` in headless Chromium (Debian `chromium`).

  serve_page_test.py PARLEY WRITE_TEST_EMBEDDING_MODEL WORK_DIR   (PARLEY_SHARED_DIR)

Uploads ../shared/eval/pyannote-sample/sample.wav through the page's file input (DevTools
protocol over --remote-debugging-pipe, no extra packages), waits for the job, checks that the
timeline shows one lane per speaker and one bar per turn of what the API reports, and saves a
screenshot as WORK_DIR/page.png; the RTTM download is named after the recording, and the
speed-twin warning shows (the tiny model is marked as one, with python3-onnx). Then the Live
panel streams Chromium's fake microphone, fed from the same recording
(--use-file-for-fake-audio-capture), over /v1/stream: turns appear while it streams, and Stop
ends the stream with its result drawn (screenshot WORK_DIR/live.png). Last, against a server
with a token: a wrong token is named in the live panel, the right one streams. Exits 77
(skipped) without chromium or the shared folder."""
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import onnx

from serve_test_support import prepare_models

parley, write_model, work = sys.argv[1:4]
shared = os.environ.get("PARLEY_SHARED_DIR", "")
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("skipping: chromium is not installed (scripts/install-deps installs it)")
    sys.exit(77)
if not os.path.isdir(shared):
    print(f"skipping: shared folder '{shared}' not found (set PARLEY_SHARED_DIR)")
    sys.exit(77)
# Chromium wants a plain absolute path for the file input (no "..", as ../shared gives).
sample = os.path.realpath(f"{shared}/eval/pyannote-sample/sample.wav")
if not os.path.exists(sample):
    sys.exit(f"FAILED: {sample} not found")


def check(condition, what):
    if not condition:
        sys.exit(f"FAILED: {what}")


engine = prepare_models(work, shared, write_model)
# The tiny embedding model marked as a speed twin (random weights, as it is): the page says so.
tiny = engine[engine.index("--embedding-model") + 1]
marked = onnx.load(tiny)
marked.metadata_props.add(key="parley.speed_twin", value="true")
onnx.save(marked, tiny)
log_path = f"{work}/server.log"
log = open(log_path, "w")
server = subprocess.Popen(
    [parley, "serve", "--state-dir", f"{work}/state", "--port", "0", *engine],
    stdout=log, stderr=log)


class Browser:
    """Chromium's DevTools protocol over a pipe: NUL-terminated JSON both ways."""

    def __init__(self):
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()
        os.set_inheritable(to_browser_read, True)
        os.set_inheritable(from_browser_write, True)
        # Chromium reads commands from fd 3 and writes answers to fd 4.
        self.process = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             f"--user-data-dir={work}/profile", "--window-size=1200,900",
             # The Live panel's microphone: the recording, played in real time, no prompt.
             "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
             f"--use-file-for-fake-audio-capture={sample}", "--autoplay-policy=no-user-gesture-required",
             "about:blank"],
            # (close_fds would close 3 and 4 again after preexec_fn moved the pipes there)
            close_fds=False,
            preexec_fn=lambda: (os.dup2(to_browser_read, 100), os.dup2(from_browser_write, 101),
                                os.dup2(100, 3), os.dup2(101, 4)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0
        self.session = None

    def call(self, method, params=None, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_browser, 1 << 20)
                check(chunk, f"chromium closed the pipe during {method}")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self.next_id:
                check("error" not in answer, f"{method}: {answer.get('error')}")
                return answer["result"]

    def evaluate(self, expression):
        return self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                              "awaitPromise": True})["result"].get("value")


# The classes of the live timeline's turn bars ("turn final", "turn open", ...).
LIVE_BARS = ("(() => [...document.querySelectorAll('#live_timeline rect.turn')]"
             ".map(r => r.getAttribute('class')))()")


def live_turns(browser, seconds=60):
    """The live timeline's turn bars once one is final or open, or as they are after `seconds`."""
    deadline = time.time() + seconds
    bars = []
    while time.time() < deadline:
        bars = browser.evaluate(LIVE_BARS) or []
        if any("final" in bar or "open" in bar for bar in bars):
            break
        time.sleep(0.3)
    return bars


def wait_for_url(process, path):
    deadline = time.time() + 60
    while time.time() < deadline:
        found = re.findall(r"serving on (http://127\.0\.0\.1:\d+)/", open(path).read())
        if found:
            return found[-1]
        check(process.poll() is None, f"server exited: {open(path).read()}")
        time.sleep(0.1)
    sys.exit("FAILED: the server did not start in 60 s")


try:
    url = wait_for_url(server, log_path)

    browser = Browser()
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"}, session=False)
        browser.session = browser.call("Target.attachToTarget",
                                       {"targetId": target["targetId"], "flatten": True},
                                       session=False)["sessionId"]
        browser.call("Page.enable")
        browser.call("Page.navigate", {"url": url + "/"})
        deadline = time.time() + 30
        while browser.evaluate("document.readyState") != "complete" and time.time() < deadline:
            time.sleep(0.1)
        document = browser.call("DOM.getDocument")["root"]["nodeId"]
        file_input = browser.call("DOM.querySelector",
                                  {"nodeId": document, "selector": "#file"})["nodeId"]
        check(file_input, "the page has a file input")
        browser.call("DOM.setFileInputFiles", {"nodeId": file_input, "files": [sample]})

        # The page polls the queue and draws the result when the job is done.
        deadline = time.time() + 120
        drawn = None
        while time.time() < deadline:
            drawn = browser.evaluate(
                "(() => { const r = document.getElementById('result');"
                " if (r.classList.contains('hidden')) return null;"
                " return {id: r.dataset.id,"
                " lanes: [...document.querySelectorAll('#timeline g.lane')].map(g => g.dataset.speaker),"
                " bars: document.querySelectorAll('#timeline rect.turn').length,"
                " rows: document.querySelectorAll('#turns tr').length}; })()")
            if drawn:
                break
            time.sleep(0.3)
        check(drawn, f"the page showed a result: {browser.evaluate('document.body.innerText')}")
        with urllib.request.urlopen(f"{url}/v1/jobs/{drawn['id']}/result?format=json") as response:
            api = json.loads(response.read())["diarization"]
        speakers = sorted({turn["speaker"] for turn in api})
        check(drawn["lanes"] == speakers, f"lanes {drawn['lanes']} vs the API's {speakers}")
        check(drawn["bars"] == len(api) and drawn["rows"] == len(api),
              f"{drawn['bars']} bars, {drawn['rows']} rows vs the API's {len(api)} turns")
        check(len(api) > 0, "some turns")
        warning = browser.evaluate("document.getElementById('warning').textContent")
        check("speed twin" in (warning or "") and not browser.evaluate(
            "document.getElementById('warning').classList.contains('hidden')"),
            f"the page warns of the speed twin: {warning!r}")
        # A download is named after the recording, not the job id.
        downloads = f"{work}/downloads"
        os.makedirs(downloads, exist_ok=True)
        browser.call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads},
                     session=False)
        browser.evaluate("document.querySelector('button[data-format=rttm]').click()")
        deadline = time.time() + 30
        while "sample.rttm" not in os.listdir(downloads) and time.time() < deadline:
            time.sleep(0.2)
        check(os.listdir(downloads) == ["sample.rttm"], f"downloaded {os.listdir(downloads)}")
        time.sleep(0.3)  # let the page settle before the picture
        shot = browser.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(f"{work}/page.png", "wb") as picture:
            picture.write(base64.b64decode(shot))
        print(f"page shows {len(speakers)} speakers and {len(api)} turns; screenshot {work}/page.png")

        # Live: the fake microphone streams; turns show before Stop, the result after it.
        browser.evaluate("document.getElementById('live_start').click()")
        bars = live_turns(browser)
        live_status = browser.evaluate("document.getElementById('live_status').textContent")
        live_error = browser.evaluate("document.getElementById('error').textContent")
        check(any("final" in bar or "open" in bar for bar in bars),
              f"live turns while streaming: {bars}; status {live_status!r}, error {live_error!r}")
        lanes = browser.evaluate("document.querySelectorAll('#live_timeline g.lane').length")
        check(lanes >= 1, f"live speaker rows: {lanes}")
        browser.evaluate("document.getElementById('live_stop').click()")
        deadline = time.time() + 60
        status = ""
        while time.time() < deadline:
            status = browser.evaluate("document.getElementById('live_status').textContent")
            if status.startswith("done"):
                break
            time.sleep(0.3)
        check(status.startswith("done"), f"the live stream's result: {status!r}")
        final = browser.evaluate(LIVE_BARS)
        check(final and all("final" in bar for bar in final), f"the result's turns drawn: {final}")
        shot = browser.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(f"{work}/live.png", "wb") as picture:
            picture.write(base64.b64decode(shot))
        print(f"live panel: {status}; screenshot {work}/live.png")

        # A server with a token: a wrong one is named as the problem in the live panel (not a
        # bare close code), and the right one streams.
        with open(f"{work}/token", "w") as token_file:
            token_file.write("page-secret\n")
        token_log_path = f"{work}/token-server.log"
        token_log = open(token_log_path, "w")
        token_server = subprocess.Popen(
            [parley, "serve", "--state-dir", f"{work}/token-state", "--port", "0",
             "--token-file", f"{work}/token", *engine], stdout=token_log, stderr=token_log)
        try:
            token_url = wait_for_url(token_server, token_log_path)
            browser.call("Page.navigate", {"url": token_url + "/"})
            deadline = time.time() + 30
            while browser.evaluate("document.readyState") != "complete" and time.time() < deadline:
                time.sleep(0.1)
            set_token = ("(() => { const t = document.getElementById('token'); t.value = %s;"
                         " t.dispatchEvent(new Event('change')); })()")
            browser.evaluate(set_token % json.dumps("wrong-token"))
            browser.evaluate("document.getElementById('live_start').click()")
            deadline = time.time() + 30
            status = ""
            while time.time() < deadline and "token" not in status:
                status = browser.evaluate("document.getElementById('live_status').textContent")
                time.sleep(0.2)
            check("token" in status and browser.evaluate(
                "document.getElementById('live_status').classList.contains('failed')"),
                f"a wrong token is named in the live panel: {status!r}")
            check(not browser.evaluate("document.getElementById('live_start').disabled"),
                  "after a wrong token the stream can be started again")
            browser.evaluate(set_token % json.dumps("page-secret"))
            browser.evaluate("document.getElementById('live_start').click()")
            bars = live_turns(browser)
            live_status = browser.evaluate("document.getElementById('live_status').textContent")
            check(any("final" in bar or "open" in bar for bar in bars),
                  f"live turns with the token: {bars}; status {live_status!r}")
            browser.evaluate("document.getElementById('live_stop').click()")
            deadline = time.time() + 60
            while time.time() < deadline and not status.startswith("done"):
                status = browser.evaluate("document.getElementById('live_status').textContent")
                time.sleep(0.3)
            check(status.startswith("done"), f"the token stream's result: {status!r}")
            print(f"with a token: a wrong one named, the right one streams ({status})")
        finally:
            token_server.send_signal(signal.SIGTERM)
            token_server.wait(timeout=60)
            token_log.close()
    finally:
        browser.process.kill()
        browser.process.wait()
finally:
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)
print("serve page test passed")
