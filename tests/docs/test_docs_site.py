"""The documentation site: ``mkdocs build --strict`` (MkDocs Material over docs/, the API reference
generated from the docstrings by mkdocstrings) succeeds, so no page has a broken link or an unresolved
reference; the API reference lists every public object; and every relative link of README.md and
docs/*.md names a file of the repository, as GitHub shows them. The Python code of docs/python-api.md
(the README's tour with ``import kbert`` alone) runs as written, in a scratch folder with the shared data
at ``../shared/data`` as beside a checkout."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

from kbert.api_export import PUBLIC

ROOT = pathlib.Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        pytest.fail("the docs site needs MkDocs and mkdocstrings: pip install -e '.[docs]'")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), NO_MKDOCS_2_WARNING="1"))
    assert result.returncode == 0, result.stderr[-6000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "kbert.BertEncoder" in api and "input_word_ids" in api  # a docstring rendered
    assert (tmp_path / "site" / "overview" / "index.html").exists()  # the README as a page


def test_the_api_reference_lists_every_public_object():
    listed = set(re.findall(r"^::: (\S+)$", (ROOT / "docs" / "api.md").read_text(encoding="utf-8"), re.M))
    wanted = {f"{module}.{name.rpartition('.')[2]}" for name, module in PUBLIC.items()}
    assert sorted(wanted - listed) == [], "public objects missing from docs/api.md"
    assert sorted(listed - wanted) == [], "docs/api.md lists objects that are not public"


def _relative_links(path: pathlib.Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)  # not in code
    return [link for link in LINK.findall(text) if not re.match(r"[a-z]+:", link) and not link.startswith("#")]


def test_every_relative_link_names_a_file_of_the_repository():
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for link in _relative_links(page):
            target = (page.parent / link.partition("#")[0]).resolve()
            if not target.exists() or ROOT not in (target, *target.parents):
                broken.append(f"{page.relative_to(ROOT)}: {link}")
    assert not broken, "links that GitHub cannot follow:\n" + "\n".join(broken)


def test_the_link_check_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[a](missing.md) [b](https://example.com) [c](#top)\n```text\n[d](ignored.md)\n```\n")
    assert _relative_links(page) == ["missing.md"]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


@pytest.mark.slow
def test_the_python_api_page_runs_as_written(tmp_path):
    from conftest import SHARED

    from fixtures.readme_scratch import TINY_INIT, make_tiny_init

    code = "\n".join(python_blocks((ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")))
    assert "import kbert\n" in code and "kbert.finetune(" in code
    scratch = tmp_path / "checkout"
    scratch.mkdir()
    # As the docs-commands test does (its SUBSTITUTIONS): the fine-tuning starts from a random BERT-Tiny
    # with MiniLM's tokenizer, not MiniLM (whose prediction of the dev set and export take ~30 s here);
    # the page's conversion and loading of MiniLM run as written.
    assert code.count("init=str(minilm)") == 1
    code = code.replace("init=str(minilm)", f"init={TINY_INIT!r}")
    make_tiny_init(scratch / TINY_INIT)
    (tmp_path / "shared").symlink_to(SHARED.resolve().parent)  # ../shared/data, as beside a checkout
    result = subprocess.run([sys.executable, "-c", code], cwd=scratch, capture_output=True, text=True, timeout=1500,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 0, result.stderr[-6000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "6 384"  # all-MiniLM-L6-v2's config.json
    dev_rows = len((SHARED / "glue" / "SST-2" / "dev.tsv").read_text(encoding="utf-8").splitlines()) - 1
    assert any(line.startswith(f"{dev_rows} {{") for line in lines), lines  # every dev row predicted
    assert (scratch / "saved_models" / "sst2" / "1" / "saved_model.pb").exists()
    assert sorted(p.name for p in scratch.iterdir()) == ["runs", "saved_models"]  # it writes nowhere else


def test_the_python_block_reader():
    page = "text\n```python\nimport kbert\n```\n```bash\nkbert --help\n```\n```python\nx = 1\n```\n"
    assert python_blocks(page) == ["import kbert\n", "x = 1\n"]

