"""The measure catalogue, generated from ragnb's measure registry.

Run by mkdocs-gen-files during ``mkdocs build``: it appends the catalogue to ``measures.md``
(the hand-written introduction in ``docs/measures.md`` stays as it is on disk). Run alone,
``python docs/gen_measures.py`` prints the catalogue.

For each registered family: its name as written (``F(alpha=A)@K``), the aliases the registry
reads (other tools' names, the trec_eval-style patterns shown by an example each), the
formula from the family's ``summary`` and the sources from the References section of the
public function that computes it.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragnb.measures import base, parse_measure  # noqa: E402

# sample values standing for the named groups of a trec_eval-style alias pattern
_GROUP_EXAMPLES = {
    "k": "10",
    "rel": "2",
    "recall": "0.5",
    "p": ".95",
    "beta": "0.5",
    "mult": "0.2",
    "T": "1.0",
    "H": "224",
    "L": "1000",
}
_REFERENCES = re.compile(
    r"^References\n-+\n(?P<body>.*?)(?:\n\n[A-Z][A-Za-z ]+\n-+\n|\Z)", re.S | re.M
)


def _example(pattern: str) -> str | None:
    """One name that ``pattern`` (a registry regular expression) matches, or None."""
    text = pattern
    for group, value in _GROUP_EXAMPLES.items():
        text = re.sub(rf"\(\?P<{group}>(?:[^()]|\([^()]*\))*\)", value, text)
    text = re.sub(r"\(\?:\\s\*@\\s\*(\w+|[\d.]+)\)\??", r"@\1", text)  # optional "@K" groups
    text = re.sub(r"\(\?:([^()|]*)\|[^()]*\)", r"\1", text)  # first alternative
    text = re.sub(r"\(\?:([^()]*)\)\??", r"\1", text)
    text = text.replace("\\s*", "").replace("['\\\"]?", "")
    text = re.sub(r"\[([^\]]*)\]", lambda m: "_" if "_" in m[1] else m[1][0], text)  # a class
    text = text.replace("\\(", "(").replace("\\)", ")").replace("\\.", ".")
    return text if re.fullmatch(pattern, text) else None


def _form(family: base.MeasureFamily) -> str:
    """How a name of the family is written: required parameters and the cutoff."""
    required = [p.name for p in family.params if p.default is None]
    head = family.name + (f"({','.join(f'{n}=…' for n in required)})" if required else "")
    return head + {"required": "@K", "optional": "[@K]", "none": ""}[family.cutoff]


def _params(family: base.MeasureFamily) -> str:
    parts = []
    for p in family.params:
        bounds = ""
        if p.low is not None and p.high is not None:
            bounds = f" in [{_number(p.low)}, {_number(p.high)}]"
        elif p.low is not None:
            bounds = f", >= {_number(p.low)}"
        elif p.high is not None:
            bounds = f", <= {_number(p.high)}"
        default = "required" if p.default is None else f"default {_number(p.default)}"
        parts.append(f"`{p.name}` ({default}{bounds})")
    return "<br>".join(parts)


def _aliases(family: base.MeasureFamily) -> list[str]:
    out = []
    for alias, (target, implied) in base._HEAD_ALIASES.items():
        if target == family.name:
            shown = ", ".join(f"{k}={v}" for k, v in implied.items())
            out.append(f"`{alias}`" + (f" ({shown})" if shown else ""))
    for pattern, target, _ in base._TREC_ALIASES:
        if target != family.name:
            continue
        example = _example(pattern.pattern)
        if example is not None and parse_measure(example).family == family.name:
            out.append(f"`{example}`")
        else:
            out.append(f"pattern `{pattern.pattern}`")
    return out


def _source(family: base.MeasureFamily) -> str:
    """The References of the public function computing the family (else of its module)."""
    module = importlib.import_module(family.kernel.__module__)
    measure = rf"Measure\(\s*[\"']{re.escape(family.name)}[\"']"
    computes = re.compile(rf"mean_of\(\s*{measure}")  # the function returning the mean
    mentions = re.compile(measure)
    first, then = [], []
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if inspect.isfunction(obj):
            source = inspect.getsource(obj)
            if computes.search(source):
                first.append(inspect.getdoc(obj) or "")
            elif mentions.search(source):
                then.append(inspect.getdoc(obj) or "")
    docs = [*first, *then, inspect.getdoc(module) or ""]
    for doc in docs:
        m = _REFERENCES.search(doc)
        if m:
            refs = re.split(r"\n(?=\.\. \[)", m["body"].strip())
            return "<br>".join(_reference(r) for r in refs)
    return ""


def _reference(text: str) -> str:
    text = " ".join(line.strip() for line in text.splitlines())
    text = re.sub(r"^\.\. \[(\w+)\]\s*", r"\\[\1\\] ", text)
    return text.replace("|", "\\|")


def _cell(text: str) -> str:
    """Plain text for a table cell: no HTML, emphasis or links read into a formula."""
    text = html.escape(" ".join(text.split()), quote=False)
    return re.sub(r"([\\*_\[\]|`])", r"\\\1", text)


def _number(value: float) -> str:
    return f"{value:g}"


def catalogue() -> str:
    """The catalogue as Markdown: one table per measure module, in registry order."""
    by_module: dict[str, list[base.MeasureFamily]] = defaultdict(list)
    for family in base.families().values():
        by_module[family.kernel.__module__].append(family)
    lines = [
        f"{len(base.families())} families are registered. *Name* is how a measure is written "
        "(`…` a parameter value, `@K` a cutoff, `[@K]` an optional one); *Aliases* are the other "
        "tools' names that `parse_measure` reads.",
        "",
    ]
    for module_name in sorted(by_module):
        module = importlib.import_module(module_name)
        title = (inspect.getdoc(module) or module_name).splitlines()[0].rstrip(".")
        lines += [
            f"## {title}",
            "",
            f"Module `{module_name}`.",
            "",
            "| Name | Definition | Aliases | Source |",
            "|---|---|---|---|",
        ]
        for family in by_module[module_name]:
            definition = _cell(family.summary)
            if family.aggregate == "sum":
                definition += " Aggregated by sum over the queries."
            name = f"`{_form(family)}`"
            if family.params:
                name += "<br>" + _params(family)
            lines.append(
                f"| {name} | {definition} | {'<br>'.join(_aliases(family))} | {_source(family)} |"
            )
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(catalogue())
elif __name__ == "<run_path>":  # run by mkdocs-gen-files (runpy.run_path); an import does nothing
    import mkdocs_gen_files

    with mkdocs_gen_files.open("measures.md", "a") as out:
        out.write("\n" + catalogue())
