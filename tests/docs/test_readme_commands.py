"""Every command in the ```bash blocks of README.md and docs/*.md runs as written, in one scratch
folder, so that the documentation and the code cannot drift apart. The order: README, then the docs
pages in the order docs/README.md (the index) links them, then any other page alphabetically; a page
may use what an earlier one made, so each test first runs the commands before its own (each command
runs once whichever test asks first). Every command writes only under runs/ (and saved_models/, where
exports go by default): test_the_commands_write_only_under_runs checks the folder after all of them.
The folder is conftest.readme_scratch:
a test that checks what a README command makes (tests/commands/test_pretrain_demo_ja.py: the Japanese main job)
may run that command there first; it runs once, and its result is checked here too.

Only two kinds of edits are made, each listed with its reason in tests/fixtures/docs_commands.py:
SKIP (a command that needs something this machine does not have: a server, a cloud, the user's own
corpus) and SUBSTITUTIONS (small data for a command that would take minutes: applied to the command
text before it runs). A new README command runs without any change; a command that cannot run here
needs a SKIP entry, one that is too slow a SUBSTITUTIONS entry. Each entry must still match a README
command (test_readme_has_commands_and_every_skip_and_substitution_is_used), so stale entries are noticed.
"""

import re

import pytest

from fixtures.docs_commands import (COMMANDS, NOISE, SKIP, SUBSTITUTIONS, documentation_pages, prepared,
                                    same_command, skip_reason)

pytestmark = pytest.mark.slow

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
