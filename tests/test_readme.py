"""The README as a newcomer reads it: its links lead somewhere, its set-up is two command lines of which CI runs the
second, and (with ``SHARE_NER_README_TEST=1``, as ``.ci/run`` sets it) its set-up command, run literally in a fresh
venv on a copy of the repository, gives every file and line its tour and Python example show.

The walkthrough installs share-ner and its dependencies from PyPI (pip's cache may serve them) and takes a minute or
more, so the ordinary test run skips it; it skips too when PyPI cannot be reached.

The README's conventions this test reads: the set-up is the one ``sh`` block of ``## Set-up``; a ``console`` block
is a session, ``$ command`` lines each followed by the lines of standard output it shows, where a line ``...``
stands for any number of lines and ``...`` inside a line for any text in it; a code-spanned path under the set-up
command's ``--out`` folder in the tour names a file the set-up command writes (``<note>``: every example note).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# Read before the test session points XDG_CACHE_HOME at a temporary folder: the fresh venv's pip keeps the user's
# own pip cache.
_PIP_ENV = {k: os.environ[k] for k in ("XDG_CACHE_HOME", "PIP_CACHE_DIR") if k in os.environ}
WALKTHROUGH = os.environ.get("SHARE_NER_README_TEST") == "1"


def section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of ``text`` (up to the next ``## ``)."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"README.md has no '## {heading}' section"
    return match.group(1)


def fenced(text: str, lang: str) -> list[str]:
    """The bodies of the ``lang`` fenced blocks of ``text``."""
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def setup_commands(text: str) -> list[str]:
    blocks = fenced(section(text, "Set-up"), "sh")
    assert len(blocks) == 1, "the set-up section holds one sh block"
    return [line for line in blocks[0].splitlines() if line.strip()]


def sessions(text: str) -> list[tuple[str, list[str]]]:
    """Each ``$ command`` of the ``console`` blocks of ``text`` with the output lines it shows."""
    out: list[tuple[str, list[str]]] = []
    for block in fenced(text, "console"):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            else:
                assert out, f"output before any command in a console block: {line!r}"
                out[-1][1].append(line)
    return out


def shows(shown: list[str], actual: str) -> bool:
    """True when ``actual`` (a command's standard output) is what ``shown`` shows, ``...`` read as above."""
    parts = []
    for line in shown:
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(re.escape(line).replace(re.escape("..."), r"[^\n]*?") + r"\n")
    return re.fullmatch("".join(parts), actual if actual.endswith("\n") or not actual else actual + "\n") is not None


def python_example(text: str) -> tuple[str, list[str]]:
    """The README's Python example and the lines it says it prints (the indented block after "prints")."""
    match = re.search(r"^```python\n(.*?)^```\n\nprints\n\n((?:    [^\n]*\n)+)", text, re.MULTILINE | re.DOTALL)
    assert match, "README.md has a python block followed by 'prints' and the printed lines"
    return match.group(1), [line[4:] for line in match.group(2).splitlines()]


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#+ (.*)$", text, re.MULTILINE)}


PAGES = [README, ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files_and_headings(page: Path) -> None:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):  # a URL
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links to nothing: {broken}"


def test_the_setup_is_two_lines_and_ci_runs_the_second() -> None:
    commands = setup_commands(README.read_text(encoding="utf-8"))
    assert len(commands) == 2
    assert "share-ner tag" in commands[0] and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1].strip() in ci, ".ci/run runs the README's test command as written"


def test_the_tour_and_the_python_example_show_their_outputs() -> None:
    text = README.read_text(encoding="utf-8")
    runs = sessions(section(text, "A ten-line tour"))
    assert runs and all(shown for _, shown in runs)
    code, printed = python_example(text)
    assert "negation" in code and len(printed) == sum(1 for line in printed if "negation=" in line) > 1


def test_shows_reads_ellipses_as_gaps_only() -> None:
    actual = "a||1\nb||2\nc||3\n"
    assert shows(["a||1", "...", "c||3"], actual)
    assert shows(["...", "b||2", "..."], actual)
    assert shows(["a||...", "b||2", "..."], actual)
    assert not shows(["a||1", "c||3"], actual)  # a gap needs its '...'
    assert not shows(["...", "b||3", "..."], actual)
    assert not shows(["a||1", "..."], "b||2\na||1\n")  # the first line is the first line


def _copy_of_the_repository(dest: Path) -> Path:
    """The repository's files as a fresh clone has them (tracked and new files, not ignored ones)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell the repository's files from build leftovers")
    for name in listed.stdout.decode("utf-8").split("\0"):
        source = ROOT / name
        if name and source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


@pytest.mark.skipif(not WALKTHROUGH, reason="set SHARE_NER_README_TEST=1 to follow the README in a fresh venv")
def test_a_newcomer_following_the_readme_gets_what_it_shows(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    install_and_tag = setup_commands(text)[0]
    clone = _copy_of_the_repository(tmp_path / "share-ner")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "XDG_CACHE_HOME")}
    env.update(_PIP_ENV, VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
               SHARE_NER_CACHE=str(tmp_path / "cache"))  # a new user's empty cache

    def run(command: str, timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True,
                              timeout=timeout)

    probe = run("python -m pip install --dry-run --ignore-installed --no-deps --quiet 'setuptools>=64'", 120)
    if probe.returncode != 0:
        pytest.skip(f"PyPI cannot be reached: {probe.stderr.strip().splitlines()[-1:]}")

    done = run(install_and_tag, 540)
    assert done.returncode == 0, f"{install_and_tag}\n{done.stderr[-3000:]}"

    # Every file the tour names under the output folder, <note> standing for each example note.
    out_dir = re.search(r"--out (\S+)", install_and_tag).group(1).rstrip("/")
    notes_dir = re.search(r"share-ner tag (\S+)", install_and_tag).group(1)
    notes = sorted(p.stem for p in (clone / notes_dir).glob("*.txt"))
    tour = section(text, "A ten-line tour")
    named = set(re.findall(rf"`({re.escape(out_dir)}/[^`\s]+)`", tour))
    assert named and notes
    for path in named:
        for one in ([path.replace("<note>", n) for n in notes] if "<note>" in path else [path]):
            assert (clone / one).is_file(), f"the tour names {one}, which the set-up command did not write"

    for command, shown in sessions(tour):
        result = run(command, 300)
        assert result.returncode == 0, f"$ {command}\n{result.stderr[-2000:]}"
        assert shows(shown, result.stdout), f"$ {command} printed\n{result.stdout[:3000]}"

    # In the clone's root, where a newcomer is (Python imports the source folder there, not the installed package)
    code, printed = python_example(text)
    result = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=clone, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == printed
