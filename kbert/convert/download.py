"""Downloading a release file (a google-research/bert zip) with a progress bar, resume and a checksum.

A file is downloaded to ``NAME.part`` in the cache folder and renamed to ``NAME`` when complete; an
interrupted download (a dropped connection, Ctrl-C) resumes from the bytes already there with an
HTTP ``Range`` request. The SHA-256 of the finished file is returned so that the caller can print
it, and checked against ``sha256`` when one is given.

Written on the standard library's ``urllib`` because the release zips are plain HTTPS files:
``huggingface_hub`` (used for Hub names) downloads only from a Hub, and no dependency of kbert offers
a resumable download of an arbitrary URL.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import pathlib
import urllib.error
import urllib.parse
import urllib.request

from kbert.convert.names import ConversionError

CHUNK = 1 << 20
RETRIES = 5
TIMEOUT_S = 60


def cache_dir() -> pathlib.Path:
    """``$KBERT_CACHE``, else ``$XDG_CACHE_HOME/kbert``, else ``~/.cache/kbert``."""
    if os.environ.get("KBERT_CACHE"):
        return pathlib.Path(os.environ["KBERT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "kbert"


def is_url(source: str) -> bool:
    return urllib.parse.urlparse(str(source)).scheme in ("http", "https")


def sha256_of(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def download(url: str, folder=None, sha256: str | None = None, progress: bool = True) -> tuple[pathlib.Path, str]:
    """``(file, its sha256)``: ``url`` saved under ``folder`` (default ``cache_dir()/downloads``);
    an already complete file is reused. A ``sha256`` that differs is a ``ConversionError``."""
    name = pathlib.PurePosixPath(urllib.parse.urlparse(url).path).name
    if not name:
        raise ConversionError(f"{url} names no file")
    folder = pathlib.Path(folder) if folder is not None else cache_dir() / "downloads"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if not path.exists():
        _fetch(url, path, progress)
    digest = sha256_of(path)
    if sha256 is not None and digest != sha256.lower():
        raise ConversionError(f"{path} (from {url}) has sha256 {digest}, expected {sha256.lower()}: the download is "
                              "damaged or is another file; delete it to download again")
    return path, digest


def _fetch(url: str, path: pathlib.Path, progress: bool) -> None:
    part = path.with_name(path.name + ".part")
    total = None
    for _ in range(RETRIES):
        have = part.stat().st_size if part.exists() else 0
        request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                if have and response.status == 206:
                    mode = "ab"
                    total = _total_from_range(response.headers.get("Content-Range")) or total
                else:  # the server ignored the range: start again
                    have, mode = 0, "wb"
                    length = response.headers.get("Content-Length")
                    total = int(length) if length and length.isdigit() else None
                with open(part, mode) as out, _bar(progress, total, have, path.name) as bar:
                    while True:
                        try:
                            block = response.read(CHUNK)
                        except (OSError, http.client.HTTPException, ValueError):
                            break  # a dropped connection: resume from what is on disk
                        if not block:
                            break
                        out.write(block)
                        bar.update(len(block))
        except urllib.error.HTTPError as e:
            if e.code == 416 and have:  # the range starts at the end: the file is complete (the checksum tells)
                total = have
            else:
                raise ConversionError(f"downloading {url}: HTTP {e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ConversionError(f"downloading {url}: {reason} (a partial download in {part} resumes on the "
                                  "next try)") from None
        size = part.stat().st_size
        if total is None or size == total:
            os.replace(part, path)
            return
        if size > total:
            part.unlink()
            raise ConversionError(f"downloading {url}: got {size} bytes, more than the {total} announced")
    raise ConversionError(f"downloading {url}: the connection kept breaking ({part.stat().st_size} of {total} bytes "
                          f"in {part}); run again to resume")


def _total_from_range(content_range: str | None) -> int | None:
    # "bytes 100-999/1000"
    if content_range and "/" in content_range:
        total = content_range.rsplit("/", 1)[1].strip()
        return int(total) if total.isdigit() else None
    return None


def _bar(enabled: bool, total, initial: int, name: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, unit_divisor=1024, desc=name,
                disable=not enabled, leave=False)
