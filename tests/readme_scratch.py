"""The scratch folder README's ```bash commands run in (tests/test_readme_commands.py, in README
order), shared through conftest.readme_scratch with the tests that check what a README command makes."""

import hashlib
import json
import os
import pathlib
import subprocess
import sys

from conftest import MINILM_DIR, REPO

ZYGOTE = REPO / "tests" / "zygote.py"
# What the pages' fine-tuning commands start from here (test_readme_commands.SUBSTITUTIONS): BERT-Tiny,
# random, with all-MiniLM-L6-v2's (uncased) vocabulary, so that their text is cut into the same pieces.
TINY_INIT = "runs/minilm-tiny"


def make_tiny_init(out: pathlib.Path) -> None:
    import keras

    from kbert import BertConfig, BertEncoder
    from kbert.convert.tokenizer_source import read_hf_tokenizer
    from kbert.model_dir import save_model_dir

    spec, vocab = read_hf_tokenizer(MINILM_DIR)  # the tokenizer `kbert convert hf` gives MiniLM
    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", vocab_size=len(vocab.read_text(encoding="utf-8").splitlines()),
                               max_position_embeddings=512)
    save_model_dir(out, BertEncoder(config), tokenizer_spec=spec, asset_files={spec.vocab_file: vocab})


def user_bin(bin_dir: pathlib.Path) -> pathlib.Path:
    """``bin_dir`` with ``python``, ``python3`` and ``kbert`` as a user's shell finds them after
    installing kbert: small scripts that exec this interpreter (``sys.executable``). Not symlinks: a
    venv's ``python`` is itself a link to the base interpreter, and Python finds its venv from the
    ``pyvenv.cfg`` beside the path it was started as, so a link elsewhere would start the base
    interpreter without kbert's dependencies. They start it through tests/zygote.py, which runs
    ``python -m kbert...`` without importing TensorFlow again (and execs anything else as it is).
    Returns ``bin_dir``, to put first on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    scripts = {"python": '"$@"', "python3": '"$@"', "kbert": '-m kbert "$@"'}
    for name, args in scripts.items():
        script = f'#!/bin/sh\nexec "{sys.executable}" "{ZYGOTE}" {args}\n'
        if not (bin_dir / name).exists() or (bin_dir / name).read_text() != script:  # shared by workers
            (bin_dir / name).write_text(script)
            (bin_dir / name).chmod(0o755)
    return bin_dir


class ReadmeScratch:
    """The folder tests/test_readme_commands.py runs README's ```bash commands in (in README order),
    their environment, and each command's result. A test that checks what a README command makes
    (the Japanese main job's files and exports) asks for that command here: it runs once per test
    run, whichever test comes first, on whichever pytest-xdist worker (``root`` is shared by the
    workers, conftest.run_folder; a command's result is kept on disk under a file lock), and the README
    test checks the same result."""

    def __init__(self, root: pathlib.Path, env_overrides: dict):
        from filelock import FileLock

        self.root = root
        with FileLock(str(root / "setup.lock")):
            bin_dir = user_bin(root / "bin")  # README's ``kbert`` and ``python``, this interpreter's
            self.work = root / "work"
            self.work.mkdir(exist_ok=True)
            if not (self.work / "kbert").is_symlink():  # README's paths into the checkout (kbert/resources/...)
                (self.work / "kbert").symlink_to(REPO / "kbert")
            if not (self.work / TINY_INIT / "kbert.json").exists():
                make_tiny_init(self.work / TINY_INIT)
            (root / "results").mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a user's shell has it
        env.update(env_overrides, PYTHONPATH=str(REPO), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
        self.env = env
        self.results: dict = {}

    def run(self, command: str) -> subprocess.CompletedProcess:
        """``bash -c command`` in the scratch folder; a command that already ran gives its first result."""
        if command not in self.results:
            from filelock import FileLock

            record = self.root / "results" / f"{hashlib.sha256(command.encode()).hexdigest()[:20]}.json"
            with FileLock(f"{record}.lock"):
                if not record.exists():
                    run = subprocess.run(["bash", "-c", command], cwd=self.work, env=self.env, capture_output=True,
                                         text=True, timeout=900)
                    record.write_text(json.dumps([run.returncode, run.stdout, run.stderr]), encoding="utf-8")
                returncode, stdout, stderr = json.loads(record.read_text(encoding="utf-8"))
            self.results[command] = subprocess.CompletedProcess(["bash", "-c", command], returncode, stdout, stderr)
        return self.results[command]


def readme_command(written: str) -> str:
    """The README command ``written`` as tests/test_readme_commands.py runs it (its SUBSTITUTIONS
    applied); README must show it."""
    from test_readme_commands import COMMANDS, prepared

    assert written in COMMANDS, f"README has no command {written!r}"
    return prepared(written)
