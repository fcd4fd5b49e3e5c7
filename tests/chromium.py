"""Headless Chromium (Debian's ``chromium``) driven over the DevTools protocol, for page tests:
open a file, evaluate JavaScript, move the mouse, take a screenshot. Needs ``websocket-client``
(the test extra); tests skip when Chromium is not installed."""

from __future__ import annotations

import base64
import json
import pathlib
import shutil
import subprocess
import tempfile
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-port=0", "--remote-allow-origins=*"]


class Page:
    def __init__(self, path, width=1200, height=900, timeout=60):
        import websocket

        self._profile = tempfile.TemporaryDirectory()
        self._process = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self._profile.name}", f"--window-size={width},{height}",
             pathlib.Path(path).resolve().as_uri()],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port_file = pathlib.Path(self._profile.name) / "DevToolsActivePort"
            deadline = time.monotonic() + timeout
            while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
                if time.monotonic() > deadline or self._process.poll() is not None:
                    raise RuntimeError("chromium did not open its DevTools port")
                time.sleep(0.1)
            port = int(port_file.read_text().splitlines()[0])
            page_url = None
            while page_url is None:
                import urllib.request

                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=10) as r:
                    targets = [t for t in json.load(r) if t.get("type") == "page"]
                page_url = targets[0]["webSocketDebuggerUrl"] if targets else None
                if page_url is None:
                    time.sleep(0.1)
            self._ws = websocket.create_connection(page_url, timeout=timeout)
            self._id = 0
            url = pathlib.Path(path).resolve().as_uri()
            while self.evaluate("document.URL") != url or self.evaluate("document.readyState") != "complete":
                if time.monotonic() > deadline:
                    raise RuntimeError(f"chromium did not load {url}")
                time.sleep(0.1)
        except BaseException:
            self.close()
            raise

    def send(self, method, **params):
        self._id += 1
        self._ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def hover(self, x, y):
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    def screenshot(self, path) -> pathlib.Path:
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path = pathlib.Path(path)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self):
        if getattr(self, "_ws", None) is not None:
            self._ws.close()
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._profile.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
