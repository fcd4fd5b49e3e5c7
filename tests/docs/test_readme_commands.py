"""Every command in the ```bash blocks of README.md and docs/*.md runs as written, in one scratch
folder, so that the documentation and the code cannot drift apart. The order: README, then the docs
pages in the order docs/README.md (the index) links them, then any other page alphabetically; a page
may use what an earlier one made, so each test first runs the commands before its own (each command
runs once whichever test asks first). Every command writes only under runs/ (and saved_models/, where
exports go by default): test_the_commands_write_only_under_runs checks the folder after all of them.
The folder is conftest.readme_scratch:
a test that checks what a README command makes (tests/commands/test_pretrain_demo_ja.py: the Japanese main job)
may run that command there first; it runs once, and its result is checked here too.

Only two kinds of edits are made, each listed below with its reason: SKIP (a command that needs
something this machine does not have: a server, a cloud, the user's own corpus) and SUBSTITUTIONS
(small data for a command that would take minutes: applied to the command text before it runs).
A new README command runs without any change here; a command that cannot run here needs a SKIP
entry, one that is too slow a SUBSTITUTIONS entry. Each entry must still match a README command
(test_every_skip_and_substitution_is_used), so stale entries are noticed.
"""

import re

import pytest

from conftest import REPO, SHARED
from fixtures.readme_scratch import TINY_INIT

pytestmark = pytest.mark.slow

# regex (searched in the command) -> why it is not run here
SKIP = {
    r"^python -m pip install": "installing is the CI job's first step; these tests run inside that install",
    r"^python -m pytest": "the test suite itself",
    r"^bash tests/install-system-deps\.sh": "the CI job's first step (apt-get as root); these tests run after it",
    r"^python -m kbert\.convert google CKPT_PREFIX": "a synopsis with optional arguments; "
                                                     "tests/convert/test_google.py converts Google checkpoints",
    r"--input 'corpus/\*\.txt'": "the at-scale example: corpus/ and vocab.txt are the user's own",
    r"--steps 1000000": "BERT-Base for a million steps (the at-scale example)",
    r"^tensorflow_model_server": "needs TF Serving, which cannot be installed here "
                                "(tests/export/test_task.py reproduces its REST conversion)",
    r"^curl ": "needs a running TF Serving",
}
# (regex, replacement, why): applied in order to every command before it runs
SUBSTITUTIONS = [
    (r"\bHF_DIR\b", "../shared/data/weights/all-MiniLM-L6-v2", "a synopsis placeholder: the MiniLM weights"),
    (r"\bOUT_MODEL_DIR\b", "runs/minilm", "a synopsis placeholder: the quick start's folder, so that the "
     "synopsis is the quick start's conversion again (which runs once)"),
    (r"to-google MODEL_DIR OUT_PREFIX", "to-google runs/minilm runs/google/bert_model.ckpt",
     "synopsis placeholders"),
    (r"\.\./shared/data", str(SHARED), "the shared data beside the checkout (KBERT_SHARED_DATA)"),
    (r"--init runs/minilm ", f"--init {TINY_INIT} ", "MiniLM (6 layers of 384) makes each fine-tuning, "
     "prediction and export of the pages take 20-30 s here: the commands start from BERT-Tiny with MiniLM's "
     "vocabulary instead (readme_scratch.TINY_INIT, made with the scratch folder); the pages' conversion "
     "of MiniLM itself runs as written"),
    (r"^((?:KERAS_BACKEND=\w+ )?(?:python -m kbert\.|kbert )finetune .*)$",
     r"\1 --max-train-examples 32 --max-eval-examples 16", "all of SST-2 takes 13 min"),
    (r"^(python -m kbert\.finetune --task (?:korquad/v1\.0|cmrc2018) .*) --max-train-examples 32 "
     r"--max-eval-examples 16$", r"\1 --max-train-examples 4 --max-eval-examples 4",
     "an English vocabulary cuts a Korean or Chinese question's context into ~12 windows: 32 questions take 2 min"),
    (r"^(python -m kbert\.pretrain --demo ja)$", r"\1 --steps 4", "the Japanese main job's 1,000 steps take minutes"),
    (r"(--model-dir runs/ene-articles-model) --epochs 3 ", r"\1 --epochs 1 ",
     "whole pages in windows: 3 epochs over ~1,000 windows take 2 min"),
    (r"^(.* --model-dir runs/ene-articles-model .*) --max-train-examples 32 --max-eval-examples 16$",
     r"\1 --max-train-examples 8 --max-eval-examples 8",
     "32 whole pages are 1,564 windows of 128 (one page alone 28,968 positions); 8 pages are 271"),
]
# The main job (python -m kbert.pretrain, no arguments) with 4 training steps instead of 1,000.
ENV = {"KBERT_DEMO_STEPS": "4"}
# Lines a user reads as errors although nothing is wrong: none may appear.
NOISE = ("Traceback", "absl::InitializeLog", "cuInit", "oneDNN custom operations", "apitools not found",
         "python-snappy or google-crc32c", "shuffle=True` was passed", "Your input ran out of data",
         "`deterministic` argument has no effect", "missing from font(s)", "triggered tf.function retracing")


def _strip_comment(line: str) -> str:
    """``line`` without a trailing shell comment (a # after a blank, outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def readme_commands(text: str) -> list[str]:
    """The commands of every ```bash block: continuation lines joined, comments dropped,
    ``a && b`` split into two commands."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = _strip_comment(line).strip()
            if line:
                commands += [part.strip() for part in line.split(" && ")]
    return commands


def prepared(command: str) -> str:
    for pattern, replacement, _ in SUBSTITUTIONS:
        command = re.sub(pattern, replacement, command)
    return command


def same_command(command: str) -> str:
    """The key under which a command runs once: ``kbert X`` and ``python -m kbert.X`` are one entry point
    (kbert/cli.py dispatches to the module; tests/top/test_cli.py checks that), so README showing a command
    both ways runs it once."""
    return re.sub(r"^kbert (\w+)", r"python -m kbert.\1", command)


def skip_reason(command: str):
    return next((why for pattern, why in SKIP.items() if re.search(pattern, command)), None)


def documentation_pages() -> list:
    """README.md, then docs/*.md in the index's order (docs/README.md's links), then the rest alphabetically."""
    docs = REPO / "docs"
    pages = sorted(p for p in docs.glob("*.md") if p.name != "README.md")
    index = (docs / "README.md").read_text(encoding="utf-8") if (docs / "README.md").exists() else ""
    linked = []
    for name in re.findall(r"\]\(([\w.-]+\.md)\)", index):
        if (docs / name).exists() and docs / name not in linked:
            linked.append(docs / name)
    return [REPO / "README.md", *linked, *[p for p in pages if p not in linked]]


def documented_commands() -> list:
    return [c for page in documentation_pages() for c in readme_commands(page.read_text(encoding="utf-8"))]


COMMANDS = documented_commands()
# What the commands may leave in the scratch folder: kbert (a link to the checkout, made by the
# fixture), runs/ (every command's output) and saved_models/ (the exports' default home).
ALLOWED_IN_ROOT = {"kbert", "runs", "saved_models"}


def test_readme_has_commands_and_every_skip_and_substitution_is_used():
    assert len(COMMANDS) > 10
    for pattern in SKIP:
        assert any(re.search(pattern, c) for c in COMMANDS), f"SKIP entry {pattern!r} matches no README command"
    commands = list(COMMANDS)
    for pattern, replacement, _ in SUBSTITUTIONS:  # each applies to what the ones before it made
        assert any(re.search(pattern, c) for c in commands), f"substitution {pattern!r} matches no README command"
        commands = [re.sub(pattern, replacement, c) for c in commands]


@pytest.fixture(scope="module")
def scratch(readme_scratch):
    """conftest.readme_scratch (the folder the commands run in, their environment: this checkout's
    kbert on PYTHONPATH, ``kbert`` on PATH, ENV above; a command another test asked for first, the
    Japanese main job, ran there once and is checked here from that run) and {command key: the
    entry that runs it} (run_through)."""
    return readme_scratch, {}


def run_through(index: int, scratch):
    """The result of ``COMMANDS[index]`` (prepared) in the scratch folder, after every command before it
    on the pages, in page order (a command may use what an earlier one made). Each command runs once
    (ReadmeScratch keeps its result), so the tests pass in any order, a shuffled one included. None
    when the command is skipped here or the same command, written another way, came earlier."""
    readme_scratch, claimed = scratch
    result = None
    for command in COMMANDS[:index + 1]:
        result = None
        if skip_reason(command):
            continue
        prepared_command = prepared(command)
        if claimed.setdefault(same_command(prepared_command), command) != command:
            continue
        result = readme_scratch.run(prepared_command)
    return result


def test_the_pages_are_read_in_the_index_order():
    pages = [p.name for p in documentation_pages()]
    assert pages[0] == "README.md" and "README.md" not in pages[1:]
    assert pages.index("getting-started.md") < pages.index("hands-on.md") < pages.index("japanese.md")


@pytest.mark.parametrize("index", range(len(COMMANDS)), ids=[c[:60] for c in COMMANDS])
def test_readme_command_runs_as_written(index, scratch):
    command = COMMANDS[index]
    reason = skip_reason(command)
    if reason:
        pytest.skip(reason)
    result = run_through(index, scratch)
    if result is None:
        pytest.skip("the same command ran above")
    assert result.returncode == 0, f"{prepared(command)}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    noise = [n for n in NOISE if n in result.stderr]
    assert not noise, f"{command}: {noise}\n{result.stderr[-3000:]}"


def test_the_commands_write_only_under_runs(scratch):
    """After every documented command (each runs once: those that ran above are not run again), the
    scratch folder holds nothing new outside runs/ and saved_models/."""
    readme_scratch, _ = scratch
    run_through(len(COMMANDS) - 1, scratch)
    stray = sorted(p.name for p in readme_scratch.work.iterdir() if p.name not in ALLOWED_IN_ROOT)
    assert not stray, f"documented commands wrote outside runs/: {stray}"
