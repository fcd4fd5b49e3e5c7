"""Checkpoints by name: the Hugging Face Hub (``ORG/NAME[@REVISION]``) through ``huggingface_hub``.

The files are fetched with ``huggingface_hub.snapshot_download`` into its cache, so everything that
library reads applies: ``HF_HOME`` / ``HF_HUB_CACHE`` (where the cache is), ``HF_TOKEN`` (private and
gated models), ``HF_HUB_OFFLINE=1`` (use the cache only), ``HF_ENDPOINT`` (a mirror), and its
progress bars while downloading. Only what conversion reads is fetched: the config, the tokenizer's
files and the weights, ``model.safetensors`` by preference; ``pytorch_model.bin`` only when a model
has no safetensors file (``kbert.convert.hf`` loads it with ``weights_only=True``).
"""

from __future__ import annotations

import os
import pathlib
import re

from kbert.convert.names import ConversionError

CONFIG_AND_TOKENIZER = [
    "config.json", "tokenizer_config.json", "tokenizer.json", "special_tokens_map.json", "vocab.txt",
    "spm.model", "spiece.model", "sentencepiece.model",
]
SAFETENSORS = "model.safetensors"
PYTORCH = "pytorch_model.bin"

# A Hub model id (``name`` or ``org/name``), optionally ``@revision`` (branch, tag or commit).
_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?(@[\w./-]+)?")


def is_hub_name(source: str) -> bool:
    """True when ``source`` names a Hub model rather than a folder: a path that exists is always a
    folder; otherwise ``ORG/NAME`` or ``NAME``, with an optional ``@REVISION``."""
    if os.path.lexists(source):
        return False
    return bool(_NAME.fullmatch(source)) and not source.endswith((".json", ".txt", ".zip"))


def split_name(source: str) -> tuple[str, str | None]:
    """``(repo_id, revision)`` of ``ORG/NAME[@REVISION]``."""
    repo_id, _, revision = source.partition("@")
    return repo_id, revision or None


def hub_snapshot(source: str) -> pathlib.Path:
    """The local folder (a snapshot in the Hugging Face cache) holding ``source``'s files: fetched
    if needed, from the cache alone when ``HF_HUB_OFFLINE=1``. Every failure is a ``ConversionError``
    of one line that names the model and what to do."""
    try:
        from huggingface_hub import constants, snapshot_download
        from huggingface_hub.errors import (
            GatedRepoError, HfHubHTTPError, HFValidationError, LocalEntryNotFoundError, RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:
        raise ConversionError(f"converting {source!r} by name needs the huggingface_hub package, which kbert "
                              "lists as a dependency: pip install huggingface_hub") from None
    repo_id, revision = split_name(source)
    offline = bool(constants.HF_HUB_OFFLINE)
    cache = constants.HF_HUB_CACHE

    def fetch(patterns) -> pathlib.Path:
        return pathlib.Path(snapshot_download(repo_id, revision=revision, allow_patterns=patterns,
                                              local_files_only=offline))

    here = f" (there is no folder {source} here either)" if "/" in source else ""
    try:
        folder = fetch(CONFIG_AND_TOKENIZER + [SAFETENSORS])
        if not (folder / SAFETENSORS).exists() and not offline:
            folder = fetch([PYTORCH])
    except GatedRepoError:
        raise ConversionError(f"model {source!r} is gated on the Hugging Face Hub: accept its terms on its page "
                              "and set HF_TOKEN (or run `hf auth login`)") from None
    except RevisionNotFoundError:
        raise ConversionError(f"model {repo_id!r} has no revision {revision!r} on the Hugging Face Hub") from None
    except RepositoryNotFoundError:
        raise ConversionError(f"model {source!r} is not on the Hugging Face Hub{here} (a private model needs "
                              "HF_TOKEN); check the name") from None
    except HFValidationError as e:
        raise ConversionError(f"{source!r} is neither a folder nor a Hugging Face model name: "
                              f"{str(e).splitlines()[0]}") from None
    except LocalEntryNotFoundError:
        if offline:
            raise ConversionError(f"model {source!r} is not in the Hugging Face cache {cache} "
                                  f"(HF_HUB_OFFLINE=1){here}: run once online, or pass a folder") from None
        raise ConversionError(f"model {source!r} could not be fetched from the Hugging Face Hub and is not in the "
                              f"cache {cache}{here}: check the connection (HF_ENDPOINT, proxies), or pass a "
                              "folder") from None
    except HfHubHTTPError as e:
        raise ConversionError(f"model {source!r}: the Hugging Face Hub answered "
                              f"{str(e).splitlines()[0]}") from None
    except OSError as e:  # a cache that cannot be written, a full disk
        raise ConversionError(f"model {source!r}: {e}") from None
    return folder
