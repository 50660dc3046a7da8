"""The documentation site builds, and its references say what the code says."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

from a2a.core.settings import ENVIRONMENT, Settings
from bus.errors import A2AError

from .snippets import ROOT, pages

DOCS = ROOT / "docs"
README_MAX_LINES = 350
PRODUCT = ("a2a", "bus", "discovery", "transports")


def _hook() -> object:
    """docs/hooks/reference.py, imported as mkdocs imports it (by path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_reference_hook", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_strict_and_the_cli_reference_is_the_parsers_own(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cli = html.unescape((site / "reference" / "cli" / "index.html").read_text())
    hook = _hook()
    names = [name for name, _ in hook.commands()]  # type: ignore[attr-defined]
    assert len(names) > 30 and "a2a session start" in names and "a2a task wait" in names
    for name, parser in hook.commands():  # type: ignore[attr-defined]
        usage = parser.format_usage().split()[1:4]  # "usage: a2a task wait ..." -> its first words
        assert " ".join(usage) in re.sub(r"<[^>]+>", "", cli), f"{name} is missing from the CLI reference"


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; at most {README_MAX_LINES}"


def test_the_source_documents_are_named_for_what_they_specify() -> None:
    """'seed 001' means nothing to a reader: only the pages on where the design comes from
    (and the row-by-row audit against it) may mention the documents by number."""
    jargon = re.compile(r"\bseeds?\s+\d{3}|\bthe seeds\b|\bseed['\u2019]s\b", re.IGNORECASE)
    found = []
    for page in pages():
        if page in (DOCS / "design.md", DOCS / "seed-audit.md"):
            continue
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if jargon.search(line):
                found.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def _table(page: Path, heading: str) -> list[list[str]]:
    """The rows of the first table after ``heading``, as lists of cell texts."""
    text = page.read_text()
    section = text[text.index(heading) :]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("|") and not set(line) <= set("|- "):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[1:]  # the header row


def _code(cell: str) -> str:
    return cell.strip().strip("`")


def test_the_settings_reference_matches_settings() -> None:
    rows = _table(DOCS / "reference" / "settings.md", "## Runtime settings")
    documented = {_code(row[0]): row for row in rows}
    assert set(documented) == set(ENVIRONMENT), (
        f"missing: {sorted(set(ENVIRONMENT) - set(documented))}; "
        f"not settings: {sorted(set(documented) - set(ENVIRONMENT))}"
    )
    assert set(ENVIRONMENT.values()) == set(Settings.__struct_fields__), "a Settings field has no variable"
    defaults = Settings()
    for variable, (_, field, default, meaning) in documented.items():
        assert _code(field) == ENVIRONMENT[variable], f"{variable} sets {ENVIRONMENT[variable]}, not {field}"
        assert meaning, f"{variable} has no meaning"
        expected = getattr(defaults, ENVIRONMENT[variable])
        if default == "none":
            assert expected is None, f"{variable}: the default is {expected!r}, not none"
            continue
        given = getattr(Settings.from_env({variable: _code(default)}), ENVIRONMENT[variable])
        assert given == expected, f"{variable}: the default is {expected!r}, not {default}"


def test_every_variable_the_code_reads_is_documented() -> None:
    text = (DOCS / "reference" / "settings.md").read_text()
    not_variables = {"A2A_JSON_MEDIA_TYPE", "A2A_STORE"}  # a media type and a NATS account name
    read = set()
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            read.update(re.findall(r"\"(A2A_[A-Z_]+)\"", path.read_text()))
    missing = sorted(
        name
        for name in read - not_variables
        if f"`{name}`" not in text and not (name.endswith("_") and f"`{name}<USER>`" in text)
    )
    assert not missing, f"docs/reference/settings.md does not mention {missing}"


def _codes() -> set[str]:
    found, stack = set(), [A2AError]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("bus."):
            found.add(cls.code)
    return found


def test_the_errors_reference_lists_every_code() -> None:
    rows = _table(DOCS / "reference" / "errors.md", "## Codes")
    documented = {_code(row[0]) for row in rows}
    assert len(_codes()) >= 20
    assert documented == _codes(), (
        f"missing: {sorted(_codes() - documented)}; unknown: {sorted(documented - _codes())}"
    )


def test_the_readmes_links_lead_somewhere() -> None:
    """README.md is not part of the site, so the build does not check its links: this does."""
    text = (ROOT / "README.md").read_text()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "#")):
            continue
        path, _, anchor = target.partition("#")
        page = ROOT / path
        if not page.exists():
            broken.append(target)
        elif anchor and page.suffix == ".md":
            headings = re.findall(r"^#+\s+(.+)$", page.read_text(), re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
            if anchor not in slugs:
                broken.append(target)
    assert not broken, f"README.md links to what does not exist: {broken}"
