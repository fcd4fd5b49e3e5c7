"""MkDocs hooks of kbert's docs site (mkdocs.yml): the top-level README as a page of the site.

The Markdown pages under docs/ link to ``../README.md`` (right on GitHub, where the README is the
repository's front page); the site has no file outside docs/. So the README is added as the
generated page ``overview.md`` (its ``docs/...`` links made relative to docs/), and the pages'
``../README.md`` links point to it. Any other link that leaves docs/ stays a broken link, which
``mkdocs build --strict`` refuses (tests/docs/test_docs_site.py).
"""

from __future__ import annotations

import pathlib
import re

from mkdocs.structure.files import File

ROOT = pathlib.Path(__file__).resolve().parent
README_PAGE = "overview.md"


BENCH_INDEX = "bench/index.md"


def on_files(files, config):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    text = re.sub(r"\]\(docs/", "](", text)
    files.append(File.generated(config, README_PAGE, content=text))
    # docs/bench/ is a folder of measurement runs, each with its README: on GitHub a link to the folder
    # lists them; on the site a generated page does.
    runs = sorted(p.parent.name for p in (ROOT / "docs" / "bench").glob("*/README.md"))
    listing = "# Measurement runs\n\n" + "".join(f"- [{run}]({run}/README.md)\n" for run in runs)
    files.append(File.generated(config, BENCH_INDEX, content=listing))
    return files


def on_page_markdown(markdown, page, config, files):
    markdown = re.sub(r"\]\(\.\./README\.md", f"]({README_PAGE}", markdown)
    # a link to the bench/ folder, from the docs/ pages or the README page (both at the site's root)
    return re.sub(r"\]\(bench/\)", f"]({BENCH_INDEX})", markdown)
