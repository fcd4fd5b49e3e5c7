"""The shared test harness: paths to ../shared/data, and models every test module can reuse."""

import importlib
import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import typing

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _share_the_cpus_between_workers() -> None:
    """Under pytest-xdist, each worker (and every child Python it starts) gets its share of the CPUs
    for TensorFlow's and OpenMP's thread pools instead of pools as large as the machine. Two workers
    on 2 cores, each with pools of 2, spent their time switching threads: eight task and export
    files took 7 min 22 s that way and 6 min 53 s with a thread each (docs/bench/test-suite/README.md).
    Set before any TensorFlow runtime starts here; a value already in the environment wins."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if workers < 2:
        return
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    share = str(max(1, cpus // workers))
    for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(name, share)


_share_the_cpus_between_workers()


def _xla_cpu_compiles_without_llvm_optimization() -> None:
    """XLA's host platform stands in for accelerators in the JAX tests (a user's JAX runs on GPUs and
    TPUs), and the programs they compile run a few steps of tiny models: LLVM's optimization of the
    CPU code costs more than it saves there. ``--xla_backend_optimization_level=0`` (appended to
    XLA_FLAGS, inherited by every child Python) took a JAX fine-tuning command from 47 to 35 s on 2
    cores (docs/bench/test-suite/README.md). The numbers are XLA's either way: the JAX tests compare with
    TensorFlow at their usual tolerances. A level already in XLA_FLAGS wins."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_backend_optimization_level=0".strip()


_xla_cpu_compiles_without_llvm_optimization()

import pytest  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
# CI (.ci/run sets CI=true) installs the test extra and the system packages and lays the shared data
# beside the clone, so there a missing one is a broken install: the run fails naming it. A user's
# checkout without them skips the tests that need them, saying why.
CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require(module: str, reason: str = "") -> typing.Any:
    """``module`` imported, for a test or test module that needs a package of the test extra. Without
    it a user's checkout skips (naming the package); under CI it is a failure naming it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        missing(f"{module} is not importable ({error}); pip install -e '.[test]' installs it"
                + (f" ({reason})" if reason else ""))


def require_installed(*modules: str, reason: str = "") -> None:
    """Like require, for packages a child process imports: found (importlib.util.find_spec), not
    imported here (torch or JAX would cost this process seconds and memory)."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            missing(f"{module} is not installed; pip install -e '.[test]' installs it"
                    + (f" ({reason})" if reason else ""))


def missing(what: str) -> typing.NoReturn:
    """Something a test needs is not there (a package, a program, data): a failure naming it under CI,
    a skip with that reason elsewhere. Works at module level too."""
    if CI:
        pytest.fail(f"CI=true and {what}", pytrace=False)
    pytest.skip(what, allow_module_level=True)


def _shared_data() -> tuple[pathlib.Path, bool, list]:
    """(the data folder, whether it was found, where we looked). KBERT_SHARED_DATA, when set, is the
    only place looked at; otherwise ../shared/data, ./shared/data and, for a clone of a local
    checkout (git clone . /tmp/x/k), the data beside that checkout."""
    env = os.environ.get("KBERT_SHARED_DATA")
    if env:
        candidates = [pathlib.Path(env)]
    else:
        candidates = [REPO.parent / "shared" / "data", REPO / "shared" / "data"]
        origin = _local_origin()
        if origin:
            candidates.append(origin.parent / "shared" / "data")
    for path in candidates:
        if (path / "README.md").exists():
            return path, True, candidates
    return candidates[0], False, candidates


def _local_origin() -> pathlib.Path | None:
    try:
        url = subprocess.run(["git", "-C", str(REPO), "config", "--get", "remote.origin.url"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    path = pathlib.Path(url.removeprefix("file://"))
    return path.resolve() if url and path.is_absolute() and path.is_dir() else None


SHARED, SHARED_FOUND, _LOOKED_IN = _shared_data()
if SHARED_FOUND:
    # The commands the tests run (in-process CLIs and child processes) look for the data with
    # kbert.data.shared, which knows neither this harness's clone rule nor a folder found here.
    os.environ.setdefault("KBERT_SHARED_DATA", str(SHARED))
MINILM_DIR = SHARED / "weights" / "all-MiniLM-L6-v2"
UNCASED_VOCAB = SHARED / "vocab" / "bert-base-uncased" / "vocab.txt"
CHINESE_VOCAB = SHARED / "vocab" / "chinese" / "vocab.txt"
REFERENCE = SHARED / "reference"


# Without the shared data, the tests that need none still run; a test (or a test module) that
# fails on a path inside the missing folder is reported as skipped, naming that path. Under CI the
# run stops at its start instead (pytest_sessionstart), naming where it looked.
def _missing_data(text: str) -> str | None:
    if CI or SHARED_FOUND or str(SHARED) not in text:
        return None
    start = text.index(str(SHARED))
    path = text[start:].split()[0].strip("'\":,)")
    return (f"needs {path}: shared test data not found (looked in "
            f"{', '.join(map(str, _LOOKED_IN))}; set KBERT_SHARED_DATA)")


# The fuzz tier's budget (tests/fuzz): inputs per target at weight 1 (a cheap target makes a multiple).
FUZZ_EXAMPLES = 400


def pytest_addoption(parser):
    parser.addoption("--fuzz-examples", type=int, default=FUZZ_EXAMPLES, metavar="N",
                     help=f"the fuzz tier's inputs per target (tests/fuzz; default {FUZZ_EXAMPLES}, CI's budget)")


# Each fuzz target's count of inputs (its ``fuzz_inputs`` user property, which pytest-xdist carries from
# the workers): summed here, where the xdist controller sees every report (it loads no conftest below tests/).
_FUZZ_COUNTS: dict = {}


def pytest_runtest_logreport(report):
    if report.when == "call":
        for name, value in getattr(report, "user_properties", ()):
            if name == "fuzz_inputs":
                _FUZZ_COUNTS[report.nodeid] = _FUZZ_COUNTS.get(report.nodeid, 0) + int(value)


def pytest_terminal_summary(terminalreporter):
    if _FUZZ_COUNTS:
        for nodeid, n in sorted(_FUZZ_COUNTS.items()):
            terminalreporter.write_line(f"fuzz {nodeid}: {n} inputs")
        terminalreporter.write_line(f"fuzz total: {sum(_FUZZ_COUNTS.values())} inputs")


def pytest_configure(config):
    # Where tests/fixtures/zygote.py keeps this process's zygotes; they leave once it is removed.
    # KBERT_TEST_ZYGOTE=0: none, every child a plain Python (to measure what the zygote buys).
    import tempfile

    if os.environ.get("KBERT_TEST_ZYGOTE", "1") == "0":
        os.environ.pop("KBERT_TEST_ZYGOTE_DIR", None)
        return
    config._kbert_zygotes = tempfile.mkdtemp(prefix="kbert-zygote-")
    os.environ["KBERT_TEST_ZYGOTE_DIR"] = config._kbert_zygotes


def pytest_unconfigure(config):
    import shutil

    if getattr(config, "_kbert_zygotes", None):
        shutil.rmtree(config._kbert_zygotes, ignore_errors=True)


def pytest_sessionstart(session):
    if CI and not SHARED_FOUND:
        pytest.exit(f"CI=true and the shared test data is not found: no README.md in "
                    f"{', '.join(map(str, _LOOKED_IN))} (set KBERT_SHARED_DATA)",
                    returncode=pytest.ExitCode.TESTS_FAILED)


# Fixtures that take ten seconds or more to make (a training run, an export, a conversion, a child
# JAX process): a test that asks for one is in the slow tier whatever its own time, so that the
# fast tier (-m "not slow") never makes them for the one fast test that asked first.
SLOW_FIXTURES = {"task_exports", "tiny_encoder_export", "uncased_preprocessor_export", "pretrain_run",
                 "sst2_finetune_run", "pretraining_records", "small_vocab", "minilm_model_dir", "ja_model_dirs",
                 "readme_scratch", "demo_ja_run", "jax_run"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        reason = _missing_data(f"{call.excinfo.value} {getattr(call.excinfo.value, 'filename', '')}")
        if reason:
            report.outcome, report.longrepr = "skipped", (str(item.path), item.location[1] or 0, reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        reason = _missing_data(str(report.longrepr))
        if reason:
            report.outcome, report.longrepr = "skipped", (str(collector.path), 0, reason)


@pytest.fixture(autouse=True)
def _same_random_state_whatever_ran_before():
    """Every test starts from seed 0 (Python, NumPy and, once imported, Keras/TensorFlow), so a test
    that builds a model before seeding gets the same weights alone, in any order and on any xdist
    worker. TensorFlow is not imported here for a test that does not use it."""
    import random

    import numpy as np

    random.seed(0)
    np.random.seed(0)
    if "keras" in sys.modules:
        sys.modules["keras"].utils.set_random_seed(0)


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    return SHARED


@pytest.fixture(scope="session")
def uncased_tokenizer():
    """kbert's WordPiece tokenizer with the real bert-base-uncased vocabulary."""
    from kbert.text import BertTokenizer

    return BertTokenizer(UNCASED_VOCAB)


@pytest.fixture(scope="session")
def google_oracle():
    """The independent oracle (google-research/bert's rules re-typed) with the same vocabulary."""
    from fixtures.google_bert_oracle import GoogleBertTokenizer, read_vocab

    return GoogleBertTokenizer(read_vocab(UNCASED_VOCAB))


@pytest.fixture(scope="session")
def minilm_model_dir(tmp_path_factory) -> pathlib.Path:
    """all-MiniLM-L6-v2 converted once per session to a kbert model directory."""
    from kbert.convert import hf

    out = tmp_path_factory.mktemp("minilm") / "model"
    hf.convert(MINILM_DIR, out)
    return out


@pytest.fixture(scope="session")
def minilm_reference():
    import numpy as np

    return dict(np.load(REFERENCE / "minilm_encoder.npz"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> pathlib.Path:
    """A randomly initialised BERT-Tiny model directory with the real uncased vocab."""
    import keras

    from kbert import BertConfig, BertEncoder
    from kbert.model_dir import save_model_dir

    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", max_position_embeddings=128)
    encoder = BertEncoder(config)
    out = tmp_path_factory.mktemp("tiny") / "model"
    save_model_dir(out, encoder, vocab_file=UNCASED_VOCAB, do_lower_case=True)
    return out


@pytest.fixture(scope="session")
def tiny_heads_dir(tmp_path_factory) -> pathlib.Path:
    """``kbert.random_model_dir``: a random BERT-Tiny with its MLM and NSP heads, for the commands that read
    or export them (tests/commands/test_explore.py, test_export.py, test_convert.py). Read only: a test that
    changes a model directory writes its own."""
    from kbert import random_model_dir

    return random_model_dir(tmp_path_factory.mktemp("tiny_heads") / "model")


@pytest.fixture(scope="session")
def ja_model_dirs(tmp_path_factory) -> dict:
    """{tokenizer type: model directory} for the two MeCab types: ``mecab-wordpiece`` is
    ../shared/data/weights/ja-tiny-random-bert converted (kbert.convert hf); ``mecab-character`` a
    random BERT-Tiny with the ja-char vocab and MLM + NSP heads (no such checkpoint ships)."""
    import keras

    from kbert import BertConfig, BertEncoder
    from kbert.convert import hf
    from kbert.layers.heads import build_head
    from kbert.model_dir import save_model_dir
    from kbert.text import TokenizerSpec, create_tokenizer

    root = tmp_path_factory.mktemp("ja_models")
    out = {kind: root / kind for kind in ("mecab-wordpiece", "mecab-character")}
    hf.convert(SHARED / "weights" / "ja-tiny-random-bert", out["mecab-wordpiece"])
    tokenizer = create_tokenizer(TokenizerSpec(type="mecab-character", lower_case=False,
                                               vocab_file=str(SHARED / "vocab" / "ja-char" / "vocab.txt")))
    keras.utils.set_random_seed(3)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size, max_position_embeddings=128))
    save_model_dir(out["mecab-character"], encoder, tokenizer=tokenizer, heads={
        "mlm": (build_head("mlm", encoder.config), {"type": "mlm"}),
        "nsp": (build_head("nsp", encoder.config), {"type": "nsp"})})
    return out


@pytest.fixture(scope="session")
def tiny_encoder_export(tmp_path_factory, tiny_model_dir) -> pathlib.Path:
    """``kbert.export.encoder.export_encoder(tiny_model_dir, ...)`` with its defaults (a directory without
    heads), once per test run: export/test_endpoints serves it, test_explore_heads checks it has no head
    signatures."""
    def make(folder):
        from kbert.export.encoder import export_encoder

        return {"path": str(export_encoder(tiny_model_dir, folder / "bert_encoder" / "1"))}

    return pathlib.Path(made_once(tmp_path_factory, "tiny_encoder_export", make)["path"])


@pytest.fixture(scope="session")
def uncased_preprocessor_export(tmp_path_factory) -> pathlib.Path:
    """The bert-base-uncased preprocessor at sequence length 64, exported once through the CLI entry point
    (``python -m kbert.export preprocessor VOCAB OUT --seq-length 64``, in-process): text/test_preprocessor
    loads it in a fresh process and feeds it any input."""
    def make(folder):
        from kbert.commands.export import main

        assert main(["preprocessor", str(UNCASED_VOCAB), str(folder / "preprocessor"), "--seq-length", "64"]) == 0
        return {"path": str(folder / "preprocessor")}

    return pathlib.Path(made_once(tmp_path_factory, "uncased_preprocessor_export", make)["path"])


def run_folder(tmp_path_factory, name: str) -> pathlib.Path:
    """A folder every pytest-xdist worker of this test run sees: beside the workers' own temporary
    folders (their common parent, new for each run); without workers, in this process's."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    root.mkdir(exist_ok=True)
    return root


def made_once(tmp_path_factory, name: str, make: typing.Callable[[pathlib.Path], dict]) -> dict:
    """``make(folder)`` once per test run, whichever worker asks first; a worker that asks meanwhile
    waits for it, and all get the same JSON-ready result. This is pytest-xdist's recipe for a session
    fixture that must run once (a file lock in a folder the workers share): a run or an export that
    takes tens of seconds is made once instead of once per worker. A failure is not kept: the next
    asker tries again in a fresh folder."""
    import json
    import tempfile

    from filelock import FileLock

    root = run_folder(tmp_path_factory, "made-once")
    record = root / f"{name}.json"
    with FileLock(str(root / f"{name}.lock")):
        if record.exists():
            return json.loads(record.read_text(encoding="utf-8"))
        result = make(pathlib.Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root)))
        record.write_text(json.dumps(result), encoding="utf-8")
        return result


def run_fresh_python(code: str, *args: str, timeout: int = 300) -> str:
    """Runs ``python -c code args`` in a fresh interpreter (nothing of kbert imported unless the code
    does so): one that has imported TensorFlow alone (tests/fixtures/zygote.py), as the code does first."""
    from fixtures.zygote import launch

    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH="")
    result = subprocess.run(
        launch("-c", code, *args, fresh=True),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
        env=env,
    )
    if result.returncode != 0:
        raise AssertionError(f"fresh process failed:\n{result.stdout}\n{result.stderr[-4000:]}")
    return result.stdout


@pytest.fixture(scope="session")
def small_vocab(tmp_path_factory) -> pathlib.Path:
    """A ~1.4k-token WordPiece vocab learned from one novel: keeps pre-training tests fast
    (the MLM softmax over 30k tokens dominates a BERT-Tiny step on CPU)."""
    def make(folder):
        from kbert.text.vocab_learning import learn_vocab, write_vocab

        write_vocab(learn_vocab([str(SHARED / "corpus" / "en" / "northangerabbey.txt")], 2000, log=None),
                    folder / "vocab.txt")
        return {"path": str(folder / "vocab.txt")}

    return pathlib.Path(made_once(tmp_path_factory, "small_vocab", make)["path"])


@pytest.fixture(scope="session")
def pretraining_records(tmp_path_factory, small_vocab) -> pathlib.Path:
    """Pre-training TFRecords (train: two Austen novels, eval: a third) written by the Beam pipeline."""
    def make(out):
        from pipelines.pretraining_data import run

        en = SHARED / "corpus" / "en"
        run(["--input", str(en / "northangerabbey.txt"), "--output", str(out / "train"), "--vocab",
             str(small_vocab), "--format", "prose", "--num-shards", "2", "--doc-sentences", "32"])
        run(["--input", str(en / "persuasion.txt"), "--output", str(out / "eval"), "--vocab", str(small_vocab),
             "--format", "prose", "--num-shards", "1", "--doc-sentences", "32"])
        return {"path": str(out)}

    return pathlib.Path(made_once(tmp_path_factory, "pretraining_records", make)["path"])


def read_scalars(log_dir) -> dict:
    """{tag: [(step, value), ...]} of the scalar summaries in the event files of one TensorBoard log
    folder (not its sub-folders'): kbert.explore.curves.read_scalars, which reads them with
    TensorBoard's own reader (tests/explore/test_curves.py checks it against what was written)."""
    from kbert.explore.curves import read_scalars as read_logs

    return {tag: points for (run, tag), points in read_logs(log_dir).items() if run == "."}


# -- runs and exports that several test modules check, each made once per session ----------------
def cli_env() -> dict:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


def user_env() -> dict:
    """The environment of a user's shell: no TF_CPP_MIN_LOG_LEVEL, so a command's own filtering of
    TensorFlow's start-up noise is what keeps its output clean (tests/top/test_cli.py checks that)."""
    return {**{k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}, "PYTHONPATH": str(REPO)}


def pretrain_command(records, vocab, model_dir, *extra) -> list:
    """``python -m kbert.pretrain`` on BERT-Tiny, 16 x 64 batches of ``records``' training files."""
    return [sys.executable, "-m", "kbert.pretrain", "--config", "tiny", "--vocab", str(vocab),
            "--train-data", str(records / "train-*.tfrecord"), "--model-dir", str(model_dir),
            "--seq-length", "64", "--max-predictions", "10", "--batch-size", "16", "--seed", "0", *extra]


class PretrainRun(typing.NamedTuple):
    model_dir: pathlib.Path
    stdout: str
    stderr: str
    command: typing.Callable[[pathlib.Path], list]  # command(model_dir): the same run into another folder


# pretrain_run's length: two checkpoint intervals. 150 steps learn what 250 did (held-out MLM accuracy
# 0.044 either way, loss 5.33 vs 5.30) in 5 s less.
PRETRAIN_RUN_STEPS, PRETRAIN_RUN_EVERY = 150, 75


@pytest.fixture(scope="session")
def pretrain_run(tmp_path_factory, pretraining_records, small_vocab) -> PretrainRun:
    """A short run of the main job's command: PRETRAIN_RUN_STEPS steps (two checkpoint intervals of
    PRETRAIN_RUN_EVERY) with held-out evaluation and fill-mask summaries every interval, in a user's
    environment.
    test_pretrain_cli checks that it learned, tests/explore/test_curves.py its curves,
    test_fill_mask_callback.py its fill-mask summaries, test_heads_model.py the explore CLI on its
    model, test_cli its output and that rerunning it evaluates to the same numbers."""
    def command(model_dir):
        return pretrain_command(
            pretraining_records, small_vocab, model_dir, "--steps", str(PRETRAIN_RUN_STEPS),
            "--checkpoint-every", str(PRETRAIN_RUN_EVERY), "--fill-mask-every", str(PRETRAIN_RUN_EVERY), "--eval-data", str(pretraining_records / "eval-*.tfrecord"),
            "--eval-steps", "10", "--learning-rate", "2e-3", "--warmup-steps", "20")

    def make(folder):
        run = subprocess.run(command(folder / "m"), capture_output=True, text=True, timeout=900, env=user_env(),
                             cwd=REPO)
        assert run.returncode == 0, run.stderr[-3000:]
        return {"model_dir": str(folder / "m"), "stdout": run.stdout, "stderr": run.stderr}

    made = made_once(tmp_path_factory, "pretrain_run", make)
    return PretrainRun(pathlib.Path(made["model_dir"]), made["stdout"], made["stderr"], command)


@pytest.fixture(scope="session")
def sst2_finetune_run(tmp_path_factory, tiny_model_dir):
    """(model directory, stdout) of ``kbert finetune`` (in-process) on 64 SST-2 sentences for 2 epochs,
    40 held out: commands/test_finetune checks its files and model, tests/explore/test_curves.py its curves."""
    def make(folder):
        from fixtures.cli import run_command

        out = folder / "sst2"
        run = run_command(
            "finetune", "--task", "glue/sst2", "--data-dir", SHARED / "glue" / "SST-2", "--init", tiny_model_dir,
            "--model-dir", out, "--max-train-examples", "64", "--max-eval-examples", "40", "--epochs", "2",
            "--batch-size", "8", "--learning-rate", "1e-3", "--seq-length", "32", "--quiet")
        assert run.status == 0, run.err[-3000:]
        return {"model_dir": str(out), "stdout": run.out}

    made = made_once(tmp_path_factory, "sst2_finetune_run", make)
    return pathlib.Path(made["model_dir"]), made["stdout"]


@pytest.fixture(scope="session")
def ja_mecab_dir(tmp_path_factory) -> pathlib.Path:
    """../shared/data/weights/ja-tiny-random-bert (the Tohoku-style checkpoint: mecab-wordpiece,
    L2/H128, random weights) converted by kbert.convert hf (under a second)."""
    from kbert.convert import hf

    out = tmp_path_factory.mktemp("ja") / "mecab-wordpiece"
    hf.convert(SHARED / "weights" / "ja-tiny-random-bert", out)
    return out


@pytest.fixture(scope="session")
def jglue_finetuned(tmp_path_factory):
    """finetuned(task, init) -> (model dir, eval_results.json) of ``kbert finetune --task jglue/TASK``
    on a few dozen rows (task_runs.JGLUE_FLAGS), each (task, init) run once per session: the family
    tests of classification, multiple choice and span QA read the same runs."""
    import json

    from kbert.commands.finetune import main
    from fixtures.task_runs import JGLUE, JGLUE_FLAGS, JGLUE_SEQ

    runs, root = {}, tmp_path_factory.mktemp("jglue")

    def run(task, init):
        if (task, init) not in runs:
            out = root / f"{task}-{init.name}"
            main(["--task", f"jglue/{task}", "--data-dir", str(JGLUE / task), "--init", str(init),
                  "--model-dir", str(out), "--seq-length", JGLUE_SEQ[task], *JGLUE_FLAGS])
            runs[task, init] = out, json.loads((out / "eval_results.json").read_text(encoding="utf-8"))
        return runs[task, init]

    return run


TASK_LABELS = ["negative", "positive"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.fixture(scope="session")
def task_export_paths(tmp_path_factory, tiny_model_dir) -> dict:
    """{name: (model directory, export path)}: BERT-Tiny task models of every type but span QA (random
    heads whose answers differ between inputs), each saved and exported with warm-up requests by
    ``kbert.export.task``, once per test run (made_once: the five exports take ~20 s, and the three
    files that serve them, export/test_task, export/test_endpoints and export/test_serving_load, may run on
    different workers)."""
    def make(folder):
        import keras
        import numpy as np

        from kbert.export.task import export_task
        from kbert.tasks import MultipleChoiceModel, TextClassifier, TextRegressor, TokenTagger

        keras.utils.set_random_seed(0)
        models = {
            "sst2": TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, label_names=TASK_LABELS,
                                                  seq_length=64),
            "mrpc": TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, num_segments=2, seq_length=64),
            "stsb": TextRegressor.from_model_dir(tiny_model_dir, num_segments=2, seq_length=64),
            "ner": TokenTagger.from_model_dir(tiny_model_dir, label_names=TAGS, seq_length=64),
            "swag": MultipleChoiceModel.from_model_dir(tiny_model_dir, seq_length=64),
        }
        out = {}
        for name, model in models.items():
            for w in model.head.weights:
                w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
            model_dir = model.save_model_dir(folder / "dirs" / name)
            out[name] = [str(model_dir), str(export_task(model_dir, folder / "saved_models" / name / "1"))]
        return out

    made = made_once(tmp_path_factory, "task_exports", make)
    return {name: (pathlib.Path(model_dir), pathlib.Path(path)) for name, (model_dir, path) in made.items()}


@pytest.fixture(scope="session")
def task_exports(task_export_paths) -> dict:
    """{name: (Keras task model, export path)}: task_export_paths' models, reloaded from their model
    directories in this worker (what was exported, weight for weight). export/test_task checks the
    exports against them."""
    from kbert.tasks import load_task_model

    return {name: (load_task_model(model_dir), path) for name, (model_dir, path) in task_export_paths.items()}


@pytest.fixture(scope="session")
def csv_classifiers(tmp_path_factory, tiny_model_dir) -> pathlib.Path:
    """A folder holding ``cls``, a single-text classifier (labels negative, positive), and ``multi``, a
    multi-label classifier (art, place): random heads on the tiny encoder, their kbert.json naming the
    csv columns (text; label or labels) that ``kbert predict`` reads."""
    import keras

    from kbert.tasks import MultiLabelClassifier, TextClassifier

    keras.utils.set_random_seed(0)
    root = tmp_path_factory.mktemp("csv_classifiers")
    TextClassifier.from_model_dir(tiny_model_dir, label_names=["negative", "positive"], seq_length=32) \
        .save_model_dir(root / "cls", extra_info={"task_name": "csv", "text_columns": ["text"],
                                                  "label_column": "label"})
    MultiLabelClassifier.from_model_dir(tiny_model_dir, label_names=["art", "place"], seq_length=32) \
        .save_model_dir(root / "multi", extra_info={"task_name": "csv", "text_columns": ["text"],
                                                    "label_column": "labels"})
    return root


@pytest.fixture
def kbert_cli(monkeypatch, capsys):
    """kbert_cli(name, argv) -> (status, stderr lines): ``kbert NAME ARGV`` through kbert.cli_support.run
    in this process (its one-line errors and exit statuses; its stderr filter, which needs a process of
    its own, left out)."""
    import kbert.cli_support as cli_support
    from kbert.cli import load_main

    monkeypatch.setattr(cli_support, "quiet_setup", lambda: None)

    def call(name, argv):
        command_main = load_main(name)
        capsys.readouterr()
        status = cli_support.run(name, command_main, [str(a) for a in argv])
        return status, capsys.readouterr().err.strip().splitlines()

    return call

# -- the README commands' scratch folder ----------------------------------------------------------
@pytest.fixture(scope="session")
def readme_scratch(tmp_path_factory):
    """The folder tests/docs/test_readme_commands.py runs README's commands in, and their results
    (readme_scratch.ReadmeScratch)."""
    from fixtures.readme_scratch import ReadmeScratch
    from fixtures.docs_commands import ENV

    return ReadmeScratch(run_folder(tmp_path_factory, "readme"), ENV)


@pytest.fixture(scope="session")
def demo_ja_run(readme_scratch) -> tuple:
    """(folder it ran in, stdout, steps) of README's Japanese main job, ``python -m kbert.pretrain
    --demo ja`` with the README test's few steps, run in the README scratch folder:
    tests/commands/test_pretrain_demo_ja.py checks its files and exports, tests/docs/test_readme_commands.py its
    exit status and output (one run instead of two: the vocabulary, records and exports take ~50 s)."""
    from fixtures.readme_scratch import readme_command

    command = readme_command("python -m kbert.pretrain --demo ja")
    run = readme_scratch.run(command)
    assert run.returncode == 0, f"{command}\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    steps = re.search(r"--steps (\d+)", command)
    return readme_scratch.work, run.stdout, int(steps.group(1)) if steps else 1000  # the demo's default
