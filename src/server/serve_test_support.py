"""What the serve tests share: a fresh work folder with the real segmentation model and the tiny
test embedding model (labels are noise; every stage runs), and the flags that select them."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid


def prepare_models(work, shared, write_model):
    """Empties `work`, puts the models in work/models, returns the engine flags for them."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(f"{work}/models")
    for name in ("segmentation-3.0-fp16.onnx", "plda"):
        os.symlink(f"{shared}/models/{name}", f"{work}/models/{name}")
    subprocess.run([write_model, f"{work}/models/tiny-embedding.onnx"], check=True,
                   stdout=subprocess.DEVNULL)
    return ["--models", f"{work}/models", "--embedding-model",
            f"{work}/models/tiny-embedding.onnx", "--clustering", "ahc"]


def shared_folder_or_skip():
    """PARLEY_SHARED_DIR, or exit 77 (skipped) when it is not a folder."""
    shared = os.environ.get("PARLEY_SHARED_DIR", "")
    if not os.path.isdir(shared):
        print(f"skipping: shared folder '{shared}' not found (set PARLEY_SHARED_DIR)")
        sys.exit(77)
    return shared


def check(condition, what):
    if not condition:
        sys.exit(f"FAILED: {what}")


class ServerProcess:
    """`parley serve` on a free loopback port, its log in STATE.log; start() again after stop()."""

    def __init__(self, parley, engine, state, *flags, preexec_fn=None):
        self.command = [parley, "serve", "--state-dir", state, "--port", "0", *engine, *flags]
        self.preexec_fn = preexec_fn
        self.state = state
        self.log_path = f"{state}.log"
        self.start()

    def start(self, expect_exit=False):
        self.log = open(self.log_path, "a")
        logged_before = self.log.tell()
        self.process = subprocess.Popen(self.command, stderr=self.log, stdout=self.log,
                                        preexec_fn=self.preexec_fn)
        deadline = time.time() + 60
        while time.time() < deadline:
            with open(self.log_path) as log:
                log.seek(logged_before)
                text = log.read()
                match = re.findall(r"serving on (http://127\.0\.0\.1:(\d+))/", text)
            if match:
                self.url, port = match[-1]
                self.port = int(port)
                return None
            if self.process.poll() is not None:
                self.log.close()
                check(expect_exit, f"server exited: {text}")
                return text
            time.sleep(0.1)
        sys.exit("FAILED: the server did not start in 60 s")

    def stop(self, sig=signal.SIGTERM):
        self.process.send_signal(sig)
        status = self.process.wait(timeout=60)
        self.log.close()
        return status


def request(server, path, method="GET", body=None, headers=None, token=None, timeout=120):
    """(status, headers, body bytes); errors are answers too."""
    headers = dict(headers or {})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(server.url + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def form(fields):
    """multipart/form-data: fields maps a name to a str or to (filename, bytes)."""
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        if isinstance(value, tuple):
            filename, content = value
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                         f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                         .encode() + content + b"\r\n")
        else:
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                         f"{value}\r\n".encode())
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}


def error_of(status_headers_body):
    status, _, body = status_headers_body
    error = json.loads(body)["error"]
    check(error["code"] and error["message"], f"error body {body!r}")
    return status, error


def wait_done(server, job_id, token=None, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, _, body = request(server, f"/v1/jobs/{job_id}", token=token)
        check(status == 200, f"GET job {job_id}: {status}")
        job = json.loads(body)
        check(0.0 <= job["progress"] <= 1.0, f"progress {job['progress']}")
        if job["state"] not in ("queued", "running"):
            return job
        time.sleep(0.2)
    sys.exit(f"FAILED: job {job_id} not finished in {timeout} s")


def result(server, job_id, fmt="rttm", token=None):
    status, _, body = request(server, f"/v1/jobs/{job_id}/result?format={fmt}", token=token)
    check(status == 200, f"result {job_id} {fmt}: {status} {body[:200]!r}")
    return body.decode()
