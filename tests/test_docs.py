"""The documentation: README, the site's sources and what they are generated from.

`make docs` builds the site with ``mkdocs build --strict`` (broken links and broken docstring
references fail there); these tests check what a build does not: the README's size and links,
a user-guide page and a gallery picture per notebook, the measure catalogue and the parameter
tables against their sources, and that no page speaks of how the project was developed.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
_LINK = re.compile(r"\]\((?!https?://|#)([^)\s]+)\)")


def _load(name: str) -> ModuleType:
    """A script of docs/ imported as a module (not run as mkdocs-gen-files runs it)."""
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)  # imported, the scripts write no page
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_readme_is_short_and_its_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert "docs/img/" in text  # a picture of a report
    for target in _LINK.findall(text):
        path = target.split("#", 1)[0]
        assert (ROOT / path).exists(), f"README.md links to a missing file: {target}"


def test_doc_pages_link_to_files_that_exist():
    generated = {"benchmarks.md"}  # written by docs/gen_pages.py at build time
    for page in DOCS.rglob("*.md"):
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            path = target.split("#", 1)[0]
            resolved = (page.parent / path).resolve()
            assert resolved.exists() or resolved.name in generated, f"{page}: {target}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_has_a_guide_page_and_a_gallery_picture(notebook):
    assert (DOCS / "guide" / f"{notebook.stem}.md").exists()
    mkdocs_yml = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert f"guide/{notebook.stem}.md" in mkdocs_yml
    picture = DOCS / "img" / f"{notebook.stem}.png"
    assert picture.exists(), "run docs/screenshots.py after make reports"
    assert picture.stat().st_size < 300_000
    assert f"img/{notebook.stem}.png" in (DOCS / "gallery.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameter_tables_read_what_papermill_reads(notebook):
    papermill = pytest.importorskip("papermill")
    ours = {
        name: (kind, default) for name, kind, default, _ in _load("gen_pages").parameters(notebook)
    }
    theirs = papermill.inspect_notebook(str(notebook))
    assert list(ours) == list(theirs)
    for name, spec in theirs.items():
        assert ours[name] == (spec["inferred_type_name"], spec["default"])


def test_measure_catalogue_names_every_family_with_a_source():
    from ragnb.measures import base

    gen = _load("gen_measures")
    catalogue = gen.catalogue()
    for family in base.families().values():
        rows = [
            line for line in catalogue.splitlines() if line.startswith(f"| `{gen._form(family)}`")
        ]
        assert len(rows) == 1, family.name
        assert rows[0].rstrip(" |").rsplit("|", 1)[1].strip(), f"{family.name}: no source"


def test_trec_alias_examples_parse_to_their_family():
    from ragnb.measures import base, parse_measure

    gen = _load("gen_measures")
    for pattern, family, _ in base._TREC_ALIASES:
        example = gen._example(pattern.pattern)
        assert example is not None, pattern.pattern
        assert parse_measure(example).family == family


def test_no_word_of_how_the_project_was_developed():
    words = re.compile(r"session [0-9]|the seed\b|issue #[0-9]", re.IGNORECASE)
    files = [ROOT / "README.md", *DOCS.rglob("*.md"), *NOTEBOOKS]
    files += [p for p in (ROOT / "ragnb").rglob("*.py")]
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if words.search(line)
    ]
    assert not found, "\n".join(found)
