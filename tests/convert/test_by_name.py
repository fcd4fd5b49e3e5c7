"""Checkpoints by name: a Hub model id from the Hugging Face cache (offline, the real huggingface_hub
client on a cache laid out as it writes one) and a google-research/bert release zip by URL (a local
HTTP server that cuts its first answer short), by path and as a folder."""

import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
import zipfile

import numpy as np
import pytest

from kbert.convert import google, hf
from fixtures.cli import command_status
from kbert.convert.hub import is_hub_name, split_name
from kbert.model_dir import load_encoder
from fixtures.hf_tiny import COMMIT, NAME, hf_cache_entry, make_hf_folder, same_model
from fixtures.hf_tiny import offline_cache, tiny_hf  # noqa: F401 (fixtures)


def test_names_and_folders_are_told_apart(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert is_hub_name("bert-base-uncased") and is_hub_name("cl-tohoku/bert-base-japanese-v3@main")
    assert split_name("org/name@v1.0") == ("org/name", "v1.0") and split_name("org/name") == ("org/name", None)
    (tmp_path / "org" / "name").mkdir(parents=True)
    assert not is_hub_name("org/name")  # an existing path is a folder, whatever it looks like
    assert not is_hub_name("./x") and not is_hub_name("/abs/path") and not is_hub_name("a/b/c")


@pytest.mark.slow
def test_a_name_converts_from_the_cache_offline_to_the_folders_model(tmp_path, tiny_hf, offline_cache, capsys):
    hf_cache_entry(offline_cache, NAME, tiny_hf, commit=COMMIT)
    from_folder = hf.convert(tiny_hf, tmp_path / "from_folder")
    assert command_status("convert", ["hf", NAME, str(tmp_path / "by_name")]) == 0, capsys.readouterr().err
    same_model(from_folder, tmp_path / "by_name")
    # a revision: the commit itself, read from the cache's snapshots
    assert command_status("convert", ["hf", f"{NAME}@{COMMIT}", str(tmp_path / "by_commit")]) == 0, capsys.readouterr().err
    same_model(from_folder, tmp_path / "by_commit")


def test_a_cached_pytorch_bin_is_the_fallback_loaded_weights_only(tmp_path, offline_cache, capsys):
    folder = make_hf_folder(tmp_path / "pt", safetensors=False, seed=3)
    assert not (folder / "model.safetensors").exists() and (folder / "pytorch_model.bin").exists()
    hf_cache_entry(offline_cache, "kbert-tests/tiny-pt", folder)
    assert command_status("convert", ["hf", "kbert-tests/tiny-pt", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    import torch

    state = torch.load(folder / "pytorch_model.bin", weights_only=True)
    np.testing.assert_array_equal(load_encoder(tmp_path / "out").word_embeddings.numpy(),
                                  state["embeddings.word_embeddings.weight"].numpy())


def test_a_name_missing_from_the_offline_cache_is_one_line(tmp_path, offline_cache, capsys):
    assert command_status("convert", ["hf", "nobody/no-such-bert", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("kbert convert: error: model 'nobody/no-such-bert'"), err
    assert "HF_HUB_OFFLINE=1" in err and "pass a folder" in err
    assert not (tmp_path / "out").exists()
    # a revision the cache does not hold
    hf_cache_entry(offline_cache, NAME, make_hf_folder(tmp_path / "f"), commit=COMMIT)
    assert command_status("convert", ["hf", f"{NAME}@v9", str(tmp_path / "out")]) == 1
    assert f"'{NAME}@v9'" in capsys.readouterr().err


@pytest.mark.slow
def test_a_missing_name_in_a_fresh_process_has_no_traceback(tmp_path):
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    env.pop("HF_HUB_CACHE", None)
    result = subprocess.run([sys.executable, "-m", "kbert.convert", "hf", "x/y", str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"kbert convert: error: model 'x/y' is not in the Hugging Face cache {tmp_path / 'hf_home' / 'hub'} "
        "(HF_HUB_OFFLINE=1) (there is no folder x/y here either): run once online, or pass a folder"]


# -- google-research/bert release zips ---------------------------------------------------------------
RELEASE = "uncased_L-2_H-32_A-2"


@pytest.fixture(scope="module")
def release(tmp_path_factory, tiny_hf):
    """A release zip as google-research/bert publishes them: one folder with bert_config.json,
    vocab.txt and bert_model.ckpt.*; and the model the checkpoint holds."""
    root = tmp_path_factory.mktemp("release")
    model = hf.convert(tiny_hf, root / "model")
    google.to_google(model, root / RELEASE / "bert_model.ckpt")
    archive = root / f"{RELEASE}.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted((root / RELEASE).iterdir()):
            z.write(path, f"{RELEASE}/{path.name}")
    return archive, model


class _Server:
    """Serves one file on 127.0.0.1; the first GET is cut short after half the bytes (the
    connection drops), later GETs honour ``Range``."""

    def __init__(self, data: bytes):
        self.data, self.requests = data, []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.headers.get("Range"))
                rng = self.headers.get("Range")
                if rng:
                    start = int(rng.split("=")[1].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                    self.send_header("Content-Length", str(len(data) - start))
                    self.end_headers()
                    self.wfile.write(data[start:])
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if len(outer.requests) == 1:
                    self.wfile.write(data[: len(data) // 2])
                    self.close_connection = True
                    return
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, name):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/files/{name}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.slow
def test_a_release_zip_by_url_downloads_resumes_checks_and_converts(tmp_path, release, monkeypatch, capsys):
    archive, model = release
    data = archive.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    monkeypatch.setenv("KBERT_CACHE", str(tmp_path / "cache"))
    server = _Server(data)
    try:
        url = server.url(archive.name)
        assert command_status("convert", ["google", url, str(tmp_path / "out"), "--sha256", digest]) == 0, capsys.readouterr().err
        assert server.requests[0] is None and server.requests[1] == f"bytes={len(data) // 2}-"  # resumed
        assert f"sha256: {digest}" in capsys.readouterr().out
        same_model(model, tmp_path / "out", google_rules=True)
        # a wrong checksum is refused (the file is already complete in the cache: no new request)
        n = len(server.requests)
        assert command_status("convert", ["google", url, str(tmp_path / "out2"), "--sha256", "0" * 64]) == 1
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and f"has sha256 {digest}, expected {'0' * 64}" in err
        assert len(server.requests) == n and not (tmp_path / "out2").exists()
    finally:
        server.close()


@pytest.mark.slow
def test_a_release_zip_path_and_its_unpacked_folder_convert_alike(tmp_path, release, capsys):
    archive, model = release
    assert command_status("convert", ["google", str(archive), str(tmp_path / "from_zip")]) == 0, capsys.readouterr().err
    same_model(model, tmp_path / "from_zip", google_rules=True)
    with zipfile.ZipFile(archive) as z:
        z.extractall(tmp_path / "unpacked")
    assert command_status("convert", ["google", str(tmp_path / "unpacked"), str(tmp_path / "from_dir")]) == 0
    same_model(model, tmp_path / "from_dir", google_rules=True)
    # google-research/bert's uncased release asked to convert as cased: refused by name
    assert command_status("convert", ["google", str(archive), str(tmp_path / "cased"), "--cased"]) == 0  # unknown size: allowed
    (tmp_path / "uncased_L-12_H-768_A-12").mkdir()
    with zipfile.ZipFile(archive) as z:
        z.extractall(tmp_path / "uncased_L-12_H-768_A-12")
    assert command_status("convert", ["google", str(tmp_path / "uncased_L-12_H-768_A-12"), str(tmp_path / "c2"), "--cased"]) == 1
    assert "uncased release" in capsys.readouterr().err


# -- the online path, against a stand-in for the Hub on 127.0.0.1 ---------------------------------------
class _Hub:
    """What huggingface_hub asks of the Hub to download a snapshot: the revision's file list
    (``/api/models/REPO/revision/REV``) and each file (``HEAD``/``GET /REPO/resolve/COMMIT/FILE``,
    with the commit and ETag headers); an unknown repository answers 404 ``RepoNotFound``."""

    def __init__(self, repos: dict):
        self.repos, self.fetched = repos, []  # {repo_id: {file name: bytes}}; [(repo_id, file)]
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, body: bytes, status=200, headers=None, send_body=True):
                self.send_response(status)
                for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
                    self.send_header(k, v)
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def _route(self, send_body):
                path = self.path.split("?")[0]
                for repo_id, files in outer.repos.items():
                    api = f"/api/models/{repo_id}/revision/"
                    if path.startswith(api):
                        body = json.dumps({"id": repo_id, "sha": COMMIT,
                                           "siblings": [{"rfilename": f} for f in sorted(files)]}).encode()
                        return self._answer(body, headers={"Content-Type": "application/json"}, send_body=send_body)
                    prefix = f"/{repo_id}/resolve/"
                    if path.startswith(prefix):
                        name = path[len(prefix):].split("/", 1)[1]
                        if name not in files:
                            return self._answer(b"", 404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT})
                        data = files[name]
                        if send_body:
                            outer.fetched.append((repo_id, name))
                        return self._answer(data, headers={"X-Repo-Commit": COMMIT,
                                                           "ETag": f'"{hashlib.sha256(data).hexdigest()}"'},
                                            send_body=send_body)
                self._answer(b'{"error": "Repository not found"}', 404, {"X-Error-Code": "RepoNotFound"})

            def do_GET(self):
                self._route(True)

            def do_HEAD(self):
                self._route(False)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.slow
def test_online_a_name_downloads_safetensors_only_and_a_bin_only_when_there_is_no_safetensors(tmp_path, tiny_hf):
    both = {p.name: p.read_bytes() for p in tiny_hf.iterdir()}
    pt = make_hf_folder(tmp_path / "pt", safetensors=False, seed=3)
    both["pytorch_model.bin"] = (pt / "pytorch_model.bin").read_bytes()  # another model's: must not be read
    both["README.md"] = b"not needed"
    bin_only = {p.name: p.read_bytes() for p in pt.iterdir()}
    hub = _Hub({"org/both": both, "org/bin-only": bin_only})
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "HF_ENDPOINT": hub.endpoint,
           "HF_HUB_DISABLE_TELEMETRY": "1", "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    for key in ("HF_HUB_OFFLINE", "HF_HUB_CACHE", "HF_TOKEN"):
        env.pop(key, None)
    script = ("import sys; from kbert.cli import main; "
              "sys.exit(10 * main(['convert', 'hf', 'org/both', sys.argv[1]]) "
              "+ main(['convert', 'hf', 'org/bin-only', sys.argv[2]]) "
              "+ 100 * (main(['convert', 'hf', 'org/missing', sys.argv[3]]) != 1))")
    try:
        result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "a"), str(tmp_path / "b"),
                                 str(tmp_path / "c")], capture_output=True, text=True, timeout=600, env=env)
    finally:
        hub.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "kbert convert: error: model 'org/missing' is not on the Hugging Face Hub" in result.stderr
    fetched = set(hub.fetched)
    assert ("org/both", "model.safetensors") in fetched and ("org/both", "pytorch_model.bin") not in fetched
    assert ("org/both", "README.md") not in fetched
    assert ("org/bin-only", "pytorch_model.bin") in fetched
    same_model(hf.convert(tiny_hf, tmp_path / "folder_a"), tmp_path / "a")
    same_model(hf.convert(pt, tmp_path / "folder_b"), tmp_path / "b")
    # and the cache is huggingface_hub's: the same names convert offline now
    snapshots = list((tmp_path / "hf_home" / "hub" / "models--org--both" / "snapshots").iterdir())
    assert [s.name for s in snapshots] == [COMMIT] and (snapshots[0] / "model.safetensors").is_symlink()
